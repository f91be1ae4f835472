"""Export and import of one namespace as JSON Lines (``kbgraph export`` / ``kbgraph import``).

A file (format ``kbgraph-export``, version 1) holds one JSON object per line:

1. a **header**: format and version, the namespace it came from, the kbgraph version, the
   embedding dimension and the count of every label and relationship type (an import checks the
   file against them, so a truncated file is refused);
2. one **node** record per node, label by label in :data:`NODE_LABELS` order, each label by key:
   ``{"record": "node", "label": "Experience", "key": "exp_…", "properties": {…}, "vectors": {…}}``;
3. one **relationship** record per relationship between two nodes of the namespace, by start
   node (label order, key), then type, end label, end key:
   ``{"record": "relationship", "type": "HAS_STEP", "start": {"label", "key"}, "end": {…}, "properties": {…}}``.

Values: strings, numbers, booleans and lists of them are written as JSON (floats as the shortest
text that reads back to the same double). Neo4j properties are never maps, so a JSON object is a
typed value: ``{"datetime": "2026-11-22T12:40:37.915646Z"}`` (also ``localdatetime``, ``date``,
``time``, ``localtime``, ``duration``, or a list of such texts), written by Cypher's ``toString``
and read back by ``datetime()`` & co., nanoseconds and zone ids included. Vector properties
(:attr:`NodeLabel.vectors`) are float32 in the database; a node's ``vectors`` holds each one as
base64 of its little-endian float32 bytes (exact, a quarter of the size of decimal text, and
cheap to write and read at 100k experiences; an import also takes a plain list of numbers), and
an import sets them with ``db.create.setNodeVectorProperty`` so the vector indexes pick them up.

Importing MERGEs every node on its key and every relationship on (start, type, end) in the target
namespace, so importing twice, or into a namespace that already holds some of the same nodes,
creates no duplicates. What already exists is left exactly as it is — its properties, learning
state (counters, quality, timestamps) and relationships' properties; only what is missing is
added. Summing counters would count the same retrievals twice on every re-import.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import os
import re
import sys
import time
import uuid
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import IO, Annotated, Any, Final, Literal

import neo4j
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from kbgraph.errors import InvalidInputError, KbgraphError, validation_problems
from kbgraph.gateway import Neo4jGateway, Row, run_named
from kbgraph.import_schema import NODE_RULES, RELATIONSHIP_RULES, counter_problems, property_problems
from kbgraph.jsonl import read_jsonl
from kbgraph.schema import VECTOR_INDEXES

FORMAT_NAME: Final = "kbgraph-export"
FORMAT_VERSION: Final = 1
# What ingest marks as read (ingest/pipeline.py _record_key): a forged key is refused.
INGESTED_KEY: Final = re.compile(r"(trajectory|experience):[A-Za-z0-9_.:\-]{1,128}")
# One problem per line is plenty to fix a file; past this many, the check stops reading.
MAX_PROBLEMS: Final = 1000

Progress = Callable[[str, int, int | None], None]


class TransferError(KbgraphError):
    """An export or import that cannot be done as asked (the message says why and what to do)."""


# -- the allow-lists --------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeLabel:
    """A label kbgraph exports: its key within a namespace and the fixed queries that handle it."""

    label: str
    key: str | None  # the property a node is MERGEd on with kb; None: one node per namespace
    stem: str  # export_page_<stem>.cypher, import_merge_<stem>.cypher
    vectors: tuple[str, ...] = ()  # float32 vector properties (db.create.setNodeVectorProperty)

    @property
    def page_query(self) -> str:
        return f"export_page_{self.stem}"

    @property
    def merge_query(self) -> str:
        return f"import_merge_{self.stem}"


@dataclass(frozen=True)
class RelationshipShape:
    """A relationship type kbgraph exports, between the only two labels it joins."""

    type: str
    start: str
    end: str

    @property
    def merge_query(self) -> str:
        return f"import_rel_{self.type.lower()}"


# Every label that carries `kb`, in export order. A label missing here makes `export` refuse the
# namespace (see export_census_nodes): add it here with its two query files.
NODE_LABELS: Final[tuple[NodeLabel, ...]] = (
    NodeLabel("Experience", "id", "experience", ("pg_embedding", "structure_embedding", "context_embedding")),
    NodeLabel("Step", "id", "step", ("embedding",)),
    NodeLabel("FailureMode", "id", "failure_mode", ("embedding",)),
    NodeLabel("Domain", "name", "domain"),
    NodeLabel("Concept", "id", "concept", ("embedding",)),
    NodeLabel("MetaConcept", "id", "meta_concept", ("embedding",)),
    NodeLabel("Insight", "id", "insight"),
    NodeLabel("Agent", "id", "agent"),
    NodeLabel("IngestedRecord", "key", "ingested_record"),
    NodeLabel("KbState", None, "kb_state"),
    NodeLabel("Outcome", "id", "outcome", ("embedding",)),
    NodeLabel("StoreItem", "id", "store_item"),
    NodeLabel("StoreVector", "id", "store_vector", ("embedding",)),
)

RELATIONSHIPS: Final[tuple[RelationshipShape, ...]] = (
    RelationshipShape("HAS_STEP", "Experience", "Step"),
    RelationshipShape("NEXT", "Step", "Step"),
    RelationshipShape("HAS_FAILURE", "Experience", "FailureMode"),
    RelationshipShape("IN_DOMAIN", "Experience", "Domain"),
    RelationshipShape("ABSTRACTION", "Experience", "Experience"),
    RelationshipShape("COMPOSITION", "Experience", "Experience"),
    RelationshipShape("ADAPTATION", "Experience", "Experience"),
    RelationshipShape("ALTERNATIVE", "Experience", "Experience"),
    RelationshipShape("EXHIBITS", "Experience", "MetaConcept"),
    RelationshipShape("INSTANCE_OF", "Concept", "MetaConcept"),
    RelationshipShape("ABOUT", "Insight", "MetaConcept"),
    RelationshipShape("FROM", "Insight", "Experience"),
    RelationshipShape("PERFORMED", "Agent", "Domain"),
    RelationshipShape("HAD_OUTCOME", "Experience", "Outcome"),
    RelationshipShape("HAS_VECTOR", "StoreItem", "StoreVector"),
)

LABELS: Final[dict[str, NodeLabel]] = {spec.label: spec for spec in NODE_LABELS}
RELATIONSHIP_TYPES: Final[dict[str, RelationshipShape]] = {shape.type: shape for shape in RELATIONSHIPS}

# Cypher's valueType names of temporal values -> the tag (and the Cypher function) in the file.
TEMPORAL_TYPES: Final[dict[str, str]] = {
    "ZONED DATETIME": "datetime", "LOCAL DATETIME": "localdatetime", "DATE": "date",
    "ZONED TIME": "time", "LOCAL TIME": "localtime", "DURATION": "duration",
}
PLAIN_TYPES: Final = frozenset({"STRING", "INTEGER", "FLOAT", "BOOLEAN"})

_DATE = r"(?P<year>[+-]?\d{4,9})-(?P<month>\d{2})-(?P<day>\d{2})"
_TIME = r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.\d{1,9})?)?"
_OFFSET = r"(?:Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)"
_ZONE = r"\[[A-Za-z][A-Za-z0-9_/+\-]*\]"
# The texts toString writes for each temporal type (what an export holds); checked before writing
# so a bad one is refused with its line, not halfway through an import.
TEMPORAL_FORMATS: Final[dict[str, re.Pattern[str]]] = {
    "datetime": re.compile(rf"{_DATE}T{_TIME}(?:{_OFFSET}(?:{_ZONE})?|{_ZONE})"),
    "localdatetime": re.compile(rf"{_DATE}T{_TIME}"),
    "date": re.compile(_DATE),
    "time": re.compile(rf"{_TIME}{_OFFSET}"),
    "localtime": re.compile(_TIME),
    "duration": re.compile(r"P(?=.*\d)(?:-?\d+[YMWD])*(?:T(?:-?\d+(?:\.\d+)?[HMS])+)?"),
}
_EXAMPLES: Final = {
    "datetime": "2026-01-31T12:00:00.5Z", "localdatetime": "2026-01-31T12:00:00", "date": "2026-01-31",
    "time": "12:00:00Z", "localtime": "12:00:00", "duration": "P1DT2H",
}


# -- records ----------------------------------------------------------------------------------------


class ExportCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodes: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    relationships: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)


class ExportHeader(BaseModel):
    """Line 1 of an export file."""

    model_config = ConfigDict(extra="forbid")

    record: Literal["header"] = Field(default="header")
    format: Literal["kbgraph-export"] = Field(default=FORMAT_NAME)
    version: int = Field(default=FORMAT_VERSION)
    namespace: str
    kbgraph_version: str
    embedding_dimension: int | None = Field(default=None, ge=1, le=8192)
    counts: ExportCounts

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != FORMAT_VERSION:
            raise ValueError(f"this kbgraph reads version {FORMAT_VERSION} of the format, the file is version {value}")
        return value


class NodeRef(BaseModel):
    """One end of a relationship: a node by label and key (null for a label without one)."""

    model_config = ConfigDict(extra="forbid")

    label: str
    key: Annotated[str, Field(min_length=1)] | None = None


class NodeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    record: Literal["node"]
    label: str
    key: Annotated[str, Field(min_length=1)] | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    # Each vector as base64 of little-endian float32 (what export writes) or a list of numbers;
    # validated into a list of floats.
    vectors: dict[str, Any] = Field(default_factory=dict)

    @field_validator("label")
    @classmethod
    def _known_label(cls, value: str) -> str:
        if value not in LABELS:
            raise ValueError(f"unknown label {value!r} (known: {', '.join(LABELS)})")
        return value

    @field_validator("properties")
    @classmethod
    def _property_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _checked_properties(value)

    @model_validator(mode="after")
    def _values_kbgraph_can_read(self) -> NodeRecord:
        problems = [f"properties.{p}" for p in property_problems(NODE_RULES.get(self.label, {}), self.properties)]
        if self.label == "Experience":
            problems += [f"properties.{p}" for p in counter_problems(self.properties)]
        if self.label == "IngestedRecord" and self.key is not None and not INGESTED_KEY.fullmatch(self.key):
            problems.append(f"key: {self.key!r:.80} is not an ingest marker (trajectory:<id> or experience:<id>)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @field_validator("vectors")
    @classmethod
    def _vector_values(cls, value: dict[str, Any]) -> dict[str, list[float]]:
        vectors, problems = {}, []
        for name, vector in value.items():
            try:
                vectors[name] = decode_vector(vector)
            except ValueError as error:
                problems.append(f"{name}: {error}")
        if problems:
            raise ValueError("; ".join(problems))
        return vectors


class RelationshipRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    record: Literal["relationship"]
    type: str
    start: NodeRef
    end: NodeRef
    properties: dict[str, Any] = Field(default_factory=dict)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in RELATIONSHIP_TYPES:
            raise ValueError(f"unknown relationship type {value!r} (known: {', '.join(RELATIONSHIP_TYPES)})")
        return value

    @field_validator("properties")
    @classmethod
    def _property_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _checked_properties(value)

    @model_validator(mode="after")
    def _values_kbgraph_can_read(self) -> RelationshipRecord:
        problems = property_problems(RELATIONSHIP_RULES.get(self.type, {}), self.properties)
        if problems:
            raise ValueError("; ".join(f"properties.{p}" for p in problems))
        return self


DataRecord = Annotated[NodeRecord | RelationshipRecord, Field(discriminator="record")]
_DATA_RECORD: Final[TypeAdapter[NodeRecord | RelationshipRecord]] = TypeAdapter(DataRecord)


def encode_vector(values: list[float]) -> str:
    """A float32 vector as base64 of its little-endian bytes: exact, and 4 bytes a value."""
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(value: Any) -> list[float]:
    """What :func:`encode_vector` wrote (or a list of numbers) as floats, each exactly a float32."""
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not base64 (of little-endian float32 values)") from None
        if not raw or len(raw) % 4:
            raise ValueError(f"{len(raw)} bytes of base64: not a whole number of float32 values")
        array_ = np.frombuffer(raw, dtype="<f4")
    elif isinstance(value, list) and value and all(_scalar_kind(v) in ("integer", "float") for v in value):
        array_ = np.asarray(value, dtype=np.float64).astype(np.float32)
    else:
        raise ValueError("a vector is base64 of little-endian float32 values, or a non-empty list of numbers")
    if not np.isfinite(array_).all():
        raise ValueError("holds NaN or infinite values")
    values: list[float] = array_.astype(np.float64).tolist()
    return values


def _checked_properties(properties: dict[str, Any]) -> dict[str, Any]:
    problems = []
    for name, value in properties.items():
        if not name or name == "kb":
            problems.append(f"{name!r}: not a property an import may set")
            continue
        problem = _value_problem(value)
        if problem:
            problems.append(f"{name}: {problem}")
    if problems:
        raise ValueError("; ".join(problems))
    return properties


def _scalar_kind(value: Any) -> str | None:
    # bool before int: in Python a bool is an int, in Neo4j it is not.
    for kind, types in (("boolean", bool), ("integer", int), ("float", float), ("string", str)):
        if isinstance(value, types):
            return kind
    return None


def _value_problem(value: Any) -> str | None:
    if _scalar_kind(value) is not None:
        return None
    if isinstance(value, list):
        kinds = {_scalar_kind(item) for item in value}
        if None in kinds:
            return "a list may hold strings, numbers or booleans (or be a typed value's list)"
        if len(kinds) > 1:
            return f"a list holds one type of value, this one mixes {', '.join(sorted(str(k) for k in kinds))}"
        return None
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in TEMPORAL_FORMATS:
            return f"an object is a typed value with one key out of {', '.join(TEMPORAL_FORMATS)}"
        tag, text = next(iter(value.items()))
        texts = text if isinstance(text, list) else [text]
        if isinstance(text, list) and not text:
            return f"{tag}: an empty list (write [] for an empty list)"
        for item in texts:
            if not isinstance(item, str) or not _temporal_text_ok(tag, item):
                return f"{tag}: {item!r} is not a {tag} as an export writes it (like {_EXAMPLES[tag]})"
        return None
    return f"{type(value).__name__} is not a property value"


def _temporal_text_ok(tag: str, text: str) -> bool:
    match = TEMPORAL_FORMATS[tag].fullmatch(text)
    if match is None:
        return False
    parts = {k: int(v) for k, v in match.groupdict().items() if v is not None}
    limits = {"month": (1, 12), "day": (1, 31), "hour": (0, 23), "minute": (0, 59), "second": (0, 59)}
    return all(low <= parts[name] <= high for name, (low, high) in limits.items() if name in parts)


# -- reports ----------------------------------------------------------------------------------------


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


class ImportCounts(BaseModel):
    new: int = Field(default=0)
    existing: int = Field(default=0)


class ImportReport(BaseModel):
    """What one import did: per label and relationship type, how many were new and how many the
    target namespace already held (those were left as they were)."""

    file: str
    source_namespace: str
    namespace: str
    nodes: dict[str, ImportCounts]
    relationships: dict[str, ImportCounts]
    nodes_new: int
    nodes_existing: int
    relationships_new: int
    relationships_existing: int
    seconds: float


def kbgraph_version() -> str:
    try:
        return metadata.version("kbgraph")
    except metadata.PackageNotFoundError:
        return "unknown"


def vector_dimension(gateway: Neo4jGateway) -> int | None:
    """The dimension of the database's vector indexes (None when it has none)."""
    rows = gateway.read("schema_vector_dimensions", names=list(VECTOR_INDEXES))
    dimensions = {int(row["dimensions"]) for row in rows if row["dimensions"] is not None}
    if len(dimensions) > 1:
        raise TransferError(f"the vector indexes disagree on their dimension ({sorted(dimensions)})")
    return dimensions.pop() if dimensions else None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- export -----------------------------------------------------------------------------------------


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


def _base_type(value_type: str) -> str:
    """``LIST<STRING NOT NULL> NOT NULL`` -> ``LIST<STRING>``."""
    return value_type.replace(" NOT NULL", "")


def _encoded_properties(
    encoded: list[Row], where: str, skip: str | None = None, vectors: tuple[str, ...] = ()
) -> tuple[dict[str, Any], dict[str, str]]:
    properties: dict[str, Any] = {}
    vector_values: dict[str, str] = {}
    for item in sorted(encoded, key=lambda p: str(p["key"])):
        name, value_type, value = item["key"], _base_type(item["type"]), item["value"]
        if name == skip:
            continue
        if name in vectors and value_type == "LIST<FLOAT>":
            vector_values[name] = encode_vector(value)
        elif value_type in PLAIN_TYPES or value_type == "LIST<NOTHING>" or (
                value_type.startswith("LIST<") and value_type[5:-1] in PLAIN_TYPES):
            properties[name] = value
        elif value_type in TEMPORAL_TYPES:
            properties[name] = {TEMPORAL_TYPES[value_type]: value}
        elif value_type.startswith("LIST<") and value_type[5:-1] in TEMPORAL_TYPES:
            properties[name] = {TEMPORAL_TYPES[value_type[5:-1]]: value}
        else:
            raise TransferError(f"{where}: property {name!r} holds a {value_type}, which the export format does not "
                                "carry (strings, numbers, booleans, temporal values and lists of them). Nothing was exported")
    return properties, vector_values


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
                                                          spec.vectors)
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
        stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n")
        try:
            return export_namespace(gateway, namespace, stdout, page_size=page_size, on_progress=on_progress)
        finally:
            stdout.flush()
            stdout.detach()
    path = Path(target)
    if not path.parent.is_dir():
        raise InvalidInputError([f"{path}: no folder {path.parent} to write it in"])
    if path.is_dir():
        raise InvalidInputError([f"{path}: is a folder; name the file to write"])
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        # 0600 from the first byte: an export holds every task text of the namespace.
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(descriptor, "w", encoding="utf-8", newline="\n") as sink:
            report = export_namespace(gateway, namespace, sink, page_size=page_size, on_progress=on_progress,
                                      file=str(path))
        partial.replace(path)
        return report
    finally:
        partial.unlink(missing_ok=True)


# -- checking a file --------------------------------------------------------------------------------


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
            elif self.header is None and self.records == 1:
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

    def freeze_nodes(self) -> None:
        hashes = np.frombuffer(self.node_hashes, dtype=np.uint64)
        lines = np.frombuffer(self.node_lines, dtype=np.dtype(f"u{self.node_lines.itemsize}"))
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        for at in np.flatnonzero(ordered[1:] == ordered[:-1])[:MAX_PROBLEMS]:
            first, again = int(lines[order[at]]), int(lines[order[at + 1]])
            self.problem(again, f"the same node as line {first} (label and key appear twice)")
        self.known_nodes = ordered

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
        hashes = np.frombuffer(self.relationship_hashes, dtype=np.uint64)
        lines = np.frombuffer(self.relationship_lines, dtype=np.dtype(f"u{self.relationship_lines.itemsize}"))
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        for at in np.flatnonzero(ordered[1:] == ordered[:-1])[:MAX_PROBLEMS]:
            first, again = int(lines[order[at]]), int(lines[order[at + 1]])
            self.problem(again, f"the same relationship as line {first} (type, start and end appear twice)")
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
    if not path.is_file():
        raise InvalidInputError([f"{path}: no such file"])
    return _FileCheck(path, dimension).run(on_progress)


# -- import -----------------------------------------------------------------------------------------


def _value_rows(properties: dict[str, Any]) -> tuple[dict[str, Any], list[Row]]:
    """Plain properties, and the temporal ones as {key, type, value} for import_*_values."""
    plain: dict[str, Any] = {}
    temporal: list[Row] = []
    for name, value in properties.items():
        if isinstance(value, dict):
            tag, text = next(iter(value.items()))
            temporal.append({"key": name, "type": f"{tag}[]" if isinstance(text, list) else tag, "value": text})
        else:
            plain[name] = value
    return plain, temporal


class _Importer:
    def __init__(self, gateway: Neo4jGateway, namespace: str, path: Path, batch_size: int,
                 on_progress: Progress | None, total: int):
        self.gateway = gateway
        self.namespace = namespace
        self.path = path
        self.batch_size = batch_size
        self.on_progress = on_progress
        self.total = total
        self.done = 0
        self.nodes: dict[str, ImportCounts] = {}
        self.relationships: dict[str, ImportCounts] = {}
        # Into a namespace that has a state node, what is imported changes it behind any process
        # that remembers its link plan (ingest/consolidate.py): each batch gives it a new facts
        # version. Into an empty one, the exported state node brings the version its facts had.
        self.changes_a_namespace = bool(gateway.read("kb_state_get", kb=namespace))

    def run(self) -> None:
        # One batch per label or type: relationships come ordered by start node, their types mixed.
        # Every node is written before the first relationship (the file lists nodes first).
        batches: dict[tuple[str, str], list[tuple[int, NodeRecord | RelationshipRecord]]] = {}
        with self.gateway.session() as session:
            for record in read_jsonl(self.path):
                line = int(record.where.rsplit(":", 1)[1])
                if record.value is None or record.value.get("record") == "header":
                    continue
                try:
                    item = _DATA_RECORD.validate_python(record.value)
                except ValidationError as error:  # the file changed since it was checked
                    raise InvalidInputError(validation_problems(record.where, error, strip_value_error=True),
                                            headline="the file changed while it was imported") from None
                if isinstance(item, NodeRecord):
                    group = ("node", item.label)
                else:
                    group = ("relationship", item.type)
                    for waiting in [g for g in batches if g[0] == "node"]:
                        self.flush(session, batches.pop(waiting))
                batch = batches.setdefault(group, [])
                batch.append((line, item))
                if len(batch) >= self.batch_size:
                    self.flush(session, batches.pop(group))
            for group in sorted(batches):  # nodes before relationships
                self.flush(session, batches.pop(group))

    def flush(self, session: neo4j.Session, batch: list[tuple[int, NodeRecord | RelationshipRecord]]) -> None:
        first = batch[0][1]
        rows: list[Row]
        if isinstance(first, NodeRecord):
            counts = self.nodes.setdefault(first.label, ImportCounts())
            merge_query, values_query = LABELS[first.label].merge_query, "import_node_values"
            rows = [{"line": line, "key": item.key} for line, item in batch if isinstance(item, NodeRecord)]
        else:
            counts = self.relationships.setdefault(first.type, ImportCounts())
            merge_query, values_query = RELATIONSHIP_TYPES[first.type].merge_query, "import_relationship_values"
            rows = [{"line": line, "start": item.start.key, "end": item.end.key}
                    for line, item in batch if isinstance(item, RelationshipRecord)]
        by_line = dict(batch)

        def work(tx: neo4j.ManagedTransaction) -> list[Row]:
            merged = run_named(tx, merge_query, {"kb": self.namespace, "rows": rows})
            missing = sorted({int(row["line"]) for row in rows} - {int(row["line"]) for row in merged})
            if missing:  # checked before writing, so only a concurrent delete gets here; rolled back
                raise TransferError(
                    f"{self.path}:{missing[0]}: a node of this relationship is missing from namespace "
                    f"{self.namespace!r} (deleted while importing?); this batch was not written, re-running resumes")
            created = []
            for row in merged:
                if not row["created"]:
                    continue
                item = by_line[row["line"]]
                plain, temporal = _value_rows(item.properties)
                value_row: Row = {"element_id": row["element_id"], "properties": plain, "temporal": temporal}
                if isinstance(item, NodeRecord):
                    value_row["vectors"] = [{"key": k, "value": v} for k, v in sorted(item.vectors.items())]
                created.append(value_row)
            if created:
                run_named(tx, values_query, {"kb": self.namespace, "rows": created})
                if self.changes_a_namespace:
                    run_named(tx, "kb_state_facts_changed", {"kb": self.namespace})
            return merged

        merged = session.execute_write(work)
        new = sum(1 for row in merged if row["created"])
        counts.new += new
        counts.existing += len(merged) - new
        self.done += len(batch)
        if self.on_progress:
            self.on_progress("import", self.done, self.total)


def import_file(
    gateway: Neo4jGateway, namespace: str, path: Path, *, batch_size: int = 500,
    on_progress: Progress | None = None,
) -> ImportReport:
    """Imports an export file into ``namespace`` (whatever namespace it was exported from).

    The whole file is checked first (see :func:`check_export_file`); a malformed one raises
    InvalidInputError and nothing is written. Then nodes and relationships are MERGEd in
    transactions of ``batch_size`` records: what the namespace already holds is left as it is,
    the rest is created with every property. Should the database fail part-way, the batches
    already committed stay, and importing the file again completes the rest.
    """
    started = time.perf_counter()
    header = check_export_file(path, vector_dimension(gateway), on_progress)
    total = sum(header.counts.nodes.values()) + sum(header.counts.relationships.values())
    importer = _Importer(gateway, namespace, path, batch_size, on_progress, total)
    importer.run()
    nodes, relationships = importer.nodes, importer.relationships
    return ImportReport(
        file=str(path), source_namespace=header.namespace, namespace=namespace,
        nodes=dict(sorted(nodes.items())), relationships=dict(sorted(relationships.items())),
        nodes_new=sum(c.new for c in nodes.values()), nodes_existing=sum(c.existing for c in nodes.values()),
        relationships_new=sum(c.new for c in relationships.values()),
        relationships_existing=sum(c.existing for c in relationships.values()),
        seconds=round(time.perf_counter() - started, 2),
    )
