"""Export: one namespace, page by page, to an export file (see :mod:`kbgraph.transfer` for the format).

A census first counts what the namespace holds and refuses what the format cannot carry back, so
a refused export writes nothing; a file appears whole or not at all.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import neo4j
from pydantic import BaseModel, Field

from kbgraph.core.version import kbgraph_version
from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.core.files import write_whole
from kbgraph.store.gateway import Neo4jGateway, Row, run_named
from kbgraph.store.schema import VECTOR_INDEXES
from kbgraph.transfer._format import (
    LABELS,
    NODE_LABELS,
    NOT_EXPORTED,
    RELATIONSHIP_TYPES,
    RELATIONSHIPS,
    NodeLabel,
    Progress,
    TransferError,
)
from kbgraph.transfer._records import ExportCounts, ExportHeader
from kbgraph.transfer._values import _encoded_properties

class ExportReport(BaseModel):
    """What one export wrote."""

    namespace: str
    file: str
    nodes: dict[str, int]
    relationships: dict[str, int]
    embedding_dimension: int | None
    # Relationships between this namespace and another (or a node without kb): never exported.
    cross_namespace_relationships: int = Field(default=0)
    seconds: float


def vector_dimension(gateway: Neo4jGateway) -> int | None:
    """The dimension of the database's vector indexes (None when it has none)."""
    rows = gateway.read("schema_vector_dimensions", names=list(VECTOR_INDEXES))
    dimensions = {int(row["dimensions"]) for row in rows if row["dimensions"] is not None}
    if len(dimensions) > 1:
        raise TransferError(f"the vector indexes disagree on their dimension ({sorted(dimensions)})")
    return dimensions.pop() if dimensions else None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass
class _Census:
    nodes: dict[str, int]
    relationships: dict[str, int]
    cross_namespace: int


def _census(gateway: Neo4jGateway, namespace: str) -> _Census:
    """Counts what the namespace holds and refuses what the format cannot carry back."""
    nodes: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for row in gateway.read("export_census_nodes", kb=namespace):
        if len(row["labels"]) == 1 and row["labels"][0] in NOT_EXPORTED:
            continue
        known = [label for label in row["labels"] if label in LABELS]
        if len(known) == 1 and len(row["labels"]) == 1:
            nodes[known[0]] = nodes.get(known[0], 0) + row["count"]
        else:
            name = ":".join(sorted(row["labels"])) or "(no label)"
            unknown[name] = unknown.get(name, 0) + row["count"]
    if unknown:
        listed = ", ".join(f"{count} :{labels}" for labels, count in sorted(unknown.items()))
        raise TransferError(
            f"namespace {namespace!r} holds nodes the export format does not know: {listed}. Nothing was exported; "
            "add the label to kbgraph.transfer.NODE_LABELS (with its export_page_/import_merge_ queries)")
    relationships: dict[str, int] = {}
    cross = 0
    odd: dict[str, int] = {}
    for row in gateway.read("export_census_relationships", kb=namespace):
        if not row["inside"]:
            cross += row["count"]
            continue
        start = ":".join(row["start_labels"])
        end = ":".join(row["end_labels"])
        shape = RELATIONSHIP_TYPES.get(row["type"])
        if shape is None or (shape.start, shape.end) != (start, end):
            name = f"(:{start})-[:{row['type']}]->(:{end})"
            odd[name] = odd.get(name, 0) + row["count"]
            continue
        relationships[row["type"]] = relationships.get(row["type"], 0) + row["count"]
    if odd:
        listed = ", ".join(f"{count} {shape}" for shape, count in sorted(odd.items()))
        raise TransferError(
            f"namespace {namespace!r} holds relationships the export format does not know: {listed}. Nothing was "
            "exported; add the type to kbgraph.transfer.RELATIONSHIPS (with its import_rel_ query)")
    return _Census(dict(sorted(nodes.items())), dict(sorted(relationships.items())), cross)


class _Exporter:
    def __init__(self, gateway: Neo4jGateway, namespace: str, page_size: int, on_progress: Progress | None):
        self.gateway = gateway
        self.namespace = namespace
        self.page_size = page_size
        self.on_progress = on_progress
        self.key_of = {spec.label: spec.key for spec in NODE_LABELS if spec.key is not None}

    def pages(self, spec: NodeLabel, values_query: str) -> Iterator[tuple[list[Row], list[Row]]]:
        """Pages of ``spec``'s nodes in key order, each with the rows of ``values_query`` over them,
        both read in one transaction (element ids are only meaningful within one)."""
        after = ""
        params: dict[str, Any] = {"kb": self.namespace, "key_of": self.key_of}

        def work(tx: neo4j.ManagedTransaction) -> tuple[list[Row], list[Row]]:
            page = run_named(tx, spec.page_query, {**params, "after": after, "limit": self.page_size})
            if not page:
                return page, []
            ids = [row["element_id"] for row in page]
            return page, run_named(tx, values_query, {**params, "ids": ids})

        with self.gateway.session(default_access_mode=neo4j.READ_ACCESS) as session:
            while True:
                page, values = session.execute_read(work)
                if page:
                    yield page, values
                if spec.key is None or len(page) < self.page_size:
                    return
                after = page[-1]["key"]

    def node_lines(self, spec: NodeLabel) -> Iterator[str]:
        for page, values in self.pages(spec, "export_node_values"):
            by_id = {row["element_id"]: row["properties"] for row in values}
            for row in page:
                where = f"{spec.label} {row['key']!r}" if spec.key else spec.label
                properties, vectors = _encoded_properties(by_id.get(row["element_id"], []), where, spec.key,
                                                          spec.vectors, spec.derived)
                record: dict[str, Any] = {"record": "node", "label": spec.label, "key": row["key"],
                                          "properties": properties}
                if vectors:
                    record["vectors"] = vectors
                yield _dumps(record)

    def relationship_lines(self, spec: NodeLabel) -> Iterator[tuple[str, str]]:
        """(type, line) for every relationship starting at a node of ``spec``."""
        for page, values in self.pages(spec, "export_relationship_values"):
            keys = {row["element_id"]: row["key"] for row in page}
            records = []
            for row in values:
                start_key = keys[row["start_element_id"]]
                end_label, end_key = self._end(row)
                where = f"{spec.label} {start_key!r} -[:{row['type']}]->"
                properties, _ = _encoded_properties(row["properties"], where)
                records.append((start_key, row["type"], end_label, end_key or "", {
                    "record": "relationship", "type": row["type"], "start": {"label": spec.label, "key": start_key},
                    "end": {"label": end_label, "key": end_key}, "properties": properties,
                }))
            records.sort(key=lambda item: item[:4])
            for before, after in zip(records, records[1:], strict=False):
                if before[:4] == after[:4]:
                    raise TransferError(
                        f"{spec.label} {before[0]!r} has several {before[1]} relationships to {before[2]} {before[3]!r}; "
                        "the export format holds one per start, type and end. Nothing was exported")
            for item in records:
                yield item[1], _dumps(item[4])

    def _end(self, row: Row) -> tuple[str, str | None]:
        known = [(label, key) for label, key in zip(row["end_labels"], row["end_keys"], strict=True) if label in LABELS]
        if len(known) != 1:
            raise TransferError(f"a {row['type']} relationship ends at a node labelled {row['end_labels']}, "
                                "which the export format cannot name. Nothing was exported")
        label, key = known[0]
        return label, None if key is None else str(key)

    def run(self, sink: IO[str], file: str) -> ExportReport:
        started = time.perf_counter()
        census = _census(self.gateway, self.namespace)
        dimension = vector_dimension(self.gateway)
        header = ExportHeader(namespace=self.namespace, kbgraph_version=kbgraph_version(),
                              embedding_dimension=dimension,
                              counts=ExportCounts(nodes=census.nodes, relationships=census.relationships))
        sink.write(_dumps(header.model_dump(mode="json")) + "\n")
        total = sum(census.nodes.values()) + sum(census.relationships.values())
        done = 0
        nodes: dict[str, int] = {}
        for spec in NODE_LABELS:
            if not census.nodes.get(spec.label):
                continue
            for line in self.node_lines(spec):
                sink.write(line + "\n")
                nodes[spec.label] = nodes.get(spec.label, 0) + 1
                done += 1
                if self.on_progress and done % 500 == 0:
                    self.on_progress("export", done, total)
        relationships: dict[str, int] = {}
        starts = {shape.start for shape in RELATIONSHIPS}
        for spec in NODE_LABELS:
            if spec.label not in starts or not census.nodes.get(spec.label):
                continue
            for type_, line in self.relationship_lines(spec):
                sink.write(line + "\n")
                relationships[type_] = relationships.get(type_, 0) + 1
                done += 1
                if self.on_progress and done % 500 == 0:
                    self.on_progress("export", done, total)
        if self.on_progress:
            self.on_progress("export", done, total)
        nodes, relationships = dict(sorted(nodes.items())), dict(sorted(relationships.items()))
        if nodes != census.nodes or relationships != census.relationships:
            raise TransferError(
                f"namespace {self.namespace!r} changed while it was exported, or holds nodes without their key "
                f"(counted {census.nodes} nodes and {census.relationships} relationships, wrote {nodes} and "
                f"{relationships}); export again while nothing writes to it")
        return ExportReport(namespace=self.namespace, file=file, nodes=nodes, relationships=relationships,
                            embedding_dimension=dimension, cross_namespace_relationships=census.cross_namespace,
                            seconds=round(time.perf_counter() - started, 2))


def export_namespace(
    gateway: Neo4jGateway, namespace: str, sink: IO[str], *, page_size: int = 500,
    on_progress: Progress | None = None, file: str = "-",
) -> ExportReport:
    """Writes every node and relationship of ``namespace`` to ``sink`` as an export file, reading
    ``page_size`` nodes at a time (memory stays flat however large the namespace). Raises
    TransferError, before writing anything, for a label or relationship the format does not
    know, and afterwards if the namespace changed while it was read."""
    if page_size < 2:
        raise InvalidInputError([f"page_size {page_size}: must be at least 2"])
    return _Exporter(gateway, namespace, page_size, on_progress).run(sink, file)


def export_to(
    gateway: Neo4jGateway, namespace: str, target: str | Path, *, page_size: int = 500,
    on_progress: Progress | None = None,
) -> ExportReport:
    """Exports ``namespace`` to the file ``target`` (``-``: standard output). A file appears
    whole or not at all: it is written next to its final name, then renamed."""
    if str(target) == "-":
        sys.stdout.flush()
        try:
            # A copy of the descriptor: closing it (which says whether the last bytes got through,
            # to a full disk or a closed pipe) leaves standard output itself open.
            with open(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", newline="\n") as stdout:
                return export_namespace(gateway, namespace, stdout, page_size=page_size, on_progress=on_progress)
        except OSError as error:
            raise KbgraphError(f"cannot write the export to standard output: {error.strerror or error}") from None
    path = Path(target)

    def write(sink: IO[str]) -> ExportReport:
        return export_namespace(gateway, namespace, sink, page_size=page_size, on_progress=on_progress, file=str(path))

    # 0600 from the first byte: an export holds every task text of the namespace.
    return write_whole(path, write, what="the export", mode=0o600)
