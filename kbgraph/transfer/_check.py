"""Checking an export file before anything is written: what an import refuses, every problem at once.
"""

from __future__ import annotations

import hashlib
from array import array
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.core.files import source_problem
from kbgraph.core.jsonl import read_jsonl
from kbgraph.transfer._format import FORMAT_NAME, LABELS, MAX_PROBLEMS, RELATIONSHIP_TYPES, Progress
from kbgraph.transfer._records import _DATA_RECORD, ExportHeader, NodeRecord, NodeRef, RelationshipRecord

def _hash(label: str, key: str | None) -> int:
    digest = hashlib.blake2b(f"{label}\x1f{key or ''}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class _FileCheck:
    """Everything that can be known about a file without writing: each record's shape, labels and
    types from the allow-lists, vector sizes, the order of records, duplicates, relationship ends
    present in the file, and the header's counts. Node keys are kept as 8-byte hashes with their
    line numbers, so checking 100k experiences takes megabytes, not the file's size."""

    def __init__(self, path: Path, dimension: int | None):
        self.path = path
        self.dimension = dimension
        self.problems: list[str] = []
        self.header: ExportHeader | None = None
        self.nodes: dict[str, int] = {}
        self.relationships: dict[str, int] = {}
        self.node_hashes = array("Q")
        self.node_lines = array("L")
        self.known_nodes: np.ndarray[Any, np.dtype[np.uint64]] | None = None  # sorted, once relationships start
        self.relationship_hashes = array("Q")
        self.relationship_lines = array("L")
        self.first_relationship_line = 0
        self.records = 0

    def problem(self, line: int, text: str) -> None:
        self.problems.append(f"{self.path}:{line}: {text}")

    def full(self) -> bool:
        return len(self.problems) >= MAX_PROBLEMS

    def run(self, on_progress: Progress | None = None) -> ExportHeader:
        for record in read_jsonl(self.path):
            line = int(record.where.rsplit(":", 1)[1])
            self.records += 1
            if record.value is None:
                self.problem(line, str(record.problem))
            elif self.records == 1:
                if not self.read_header(line, record.value):
                    break
            else:
                self.read_record(line, record.value)
            if self.full():
                self.problems.append(f"{self.path}: stopped checking after {MAX_PROBLEMS} problems")
                break
            if on_progress and self.records % 5000 == 0:
                on_progress("checking", self.records, None)
        else:
            self.finish()
        if self.records == 0:
            self.problems.append(f"{self.path}: empty file, not a kbgraph export")
        if self.problems:
            raise InvalidInputError(self.problems, headline="not a valid kbgraph export, nothing was imported")
        assert self.header is not None
        return self.header

    def read_header(self, line: int, value: dict[str, Any]) -> bool:
        if value.get("record") != "header":
            self.problem(line, f"the first line must be the header record of a {FORMAT_NAME} file "
                               f"(found record {value.get('record')!r}); is this a kbgraph export?")
            return False
        try:
            self.header = ExportHeader.model_validate(value)
        except ValidationError as error:
            self.problems += validation_problems(f"{self.path}:{line}", error, strip_value_error=True)
            return False
        theirs = self.header.embedding_dimension
        if theirs is not None and self.dimension is not None and theirs != self.dimension:
            self.problem(line, f"embedding_dimension: the file's vectors have {theirs} values, this database's "
                               f"vector indexes {self.dimension}: they come from another embedder")
        return True

    def read_record(self, line: int, value: dict[str, Any]) -> None:
        if value.get("record") == "header":
            self.problem(line, "record: a second header (is this two files joined together?)")
            return
        try:
            record = _DATA_RECORD.validate_python(value)
        except ValidationError as error:
            self.problems += validation_problems(f"{self.path}:{line}", error, strip_value_error=True)
            return
        if isinstance(record, NodeRecord):
            self.read_node(line, record)
        else:
            self.read_relationship(line, record)

    def read_node(self, line: int, node: NodeRecord) -> None:
        spec = LABELS[node.label]
        if self.first_relationship_line:
            self.problem(line, f"a node after the relationships (from line {self.first_relationship_line}): "
                               "an export lists every node first")
            return
        if spec.key is None and node.key is not None:
            self.problem(line, f"key: a {node.label} has no key (one per namespace): write null")
        elif spec.key is not None and node.key is None:
            self.problem(line, f"key: a {node.label} needs its {spec.key}")
        if spec.key is not None and spec.key in node.properties:
            self.problem(line, f"properties.{spec.key}: the key goes in \"key\", not among the properties")
        for name, vector in node.vectors.items():
            if name not in spec.vectors:
                allowed = ", ".join(spec.vectors) or "none"
                self.problem(line, f"vectors.{name}: not a vector property of {node.label} (those are: {allowed})")
            elif self.header is not None and len(vector) != self.header.embedding_dimension:
                self.problem(line, f"vectors.{name}: has {len(vector)} values, the file's embedding_dimension is "
                                   f"{self.header.embedding_dimension}")
            if name in node.properties:
                self.problem(line, f"properties.{name}: also given as a vector")
        self.nodes[node.label] = self.nodes.get(node.label, 0) + 1
        self.node_hashes.append(_hash(node.label, node.key))
        self.node_lines.append(line)

    def repeats(
        self, hashes: array[int], lines: array[int], what: str, identity: str
    ) -> np.ndarray[Any, np.dtype[np.uint64]]:
        """Reports every record whose hash an earlier line had; returns the hashes sorted."""
        hashed = np.frombuffer(hashes, dtype=np.uint64)
        numbers = np.frombuffer(lines, dtype=np.dtype(f"u{lines.itemsize}"))
        order = np.argsort(hashed, kind="stable")
        ordered = hashed[order]
        for at in np.flatnonzero(ordered[1:] == ordered[:-1])[:MAX_PROBLEMS]:
            first, again = int(numbers[order[at]]), int(numbers[order[at + 1]])
            self.problem(again, f"the same {what} as line {first} ({identity} appear twice)")
        return ordered

    def freeze_nodes(self) -> None:
        self.known_nodes = self.repeats(self.node_hashes, self.node_lines, "node", "label and key")

    def has_node(self, ref: NodeRef) -> bool:
        assert self.known_nodes is not None
        wanted = np.uint64(_hash(ref.label, ref.key))
        at = int(np.searchsorted(self.known_nodes, wanted))
        return bool(at < len(self.known_nodes) and self.known_nodes[at] == wanted)

    def read_relationship(self, line: int, relationship: RelationshipRecord) -> None:
        if not self.first_relationship_line:
            self.first_relationship_line = line
            self.freeze_nodes()
        shape = RELATIONSHIP_TYPES[relationship.type]
        for end, ref, label in (("start", relationship.start, shape.start), ("end", relationship.end, shape.end)):
            if ref.label != label:
                self.problem(line, f"{end}.label: a {shape.type} relationship goes from {shape.start} to {shape.end}, "
                                   f"not from/to {ref.label}")
            elif not self.has_node(ref):
                self.problem(line, f"{end}: no {ref.label} {ref.key!r} among the nodes of this file")
        self.relationships[relationship.type] = self.relationships.get(relationship.type, 0) + 1
        identity = f"{_hash(relationship.start.label, relationship.start.key)}>{_hash(relationship.end.label, relationship.end.key)}"
        self.relationship_hashes.append(_hash(relationship.type, identity))
        self.relationship_lines.append(line)

    def finish(self) -> None:
        if self.header is None:
            return
        if not self.first_relationship_line:
            self.freeze_nodes()
        self.repeats(self.relationship_hashes, self.relationship_lines, "relationship", "type, start and end")
        counts = self.header.counts
        for what, announced, found in (("nodes", counts.nodes, self.nodes),
                                       ("relationships", counts.relationships, self.relationships)):
            for name in sorted(set(announced) | set(found)):
                if announced.get(name, 0) != found.get(name, 0):
                    self.problem(1, f"counts.{what}.{name}: the header announces {announced.get(name, 0)}, the file "
                                    f"holds {found.get(name, 0)} (truncated or edited?)")


def check_export_file(path: Path, dimension: int | None, on_progress: Progress | None = None) -> ExportHeader:
    """Reads a whole export file without writing anything and returns its header. Raises
    InvalidInputError listing every problem as ``file:line: field: reason``."""
    if problem := source_problem(path):  # missing, a folder, a device or FIFO
        raise InvalidInputError([problem])
    return _FileCheck(path, dimension).run(on_progress)
