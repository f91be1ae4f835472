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

The package's modules, one per stage: ``_format`` (allow-lists and shared constants), ``_values``
(property values in the file and in the database), ``_rules`` (what each property kbgraph reads
back may hold), ``_records`` (the line models), ``_export``, ``_check`` (a whole file, before any
write) and ``_importer``.
"""

from __future__ import annotations

from kbgraph.transfer._check import check_export_file
from kbgraph.core.version import kbgraph_version
from kbgraph.transfer._export import ExportReport, export_namespace, export_to, vector_dimension
from kbgraph.transfer._format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    INGESTED_KEY,
    LABELS,
    MAX_PROBLEMS,
    NODE_LABELS,
    NOT_EXPORTED,
    PLAIN_TYPES,
    RELATIONSHIP_TYPES,
    RELATIONSHIPS,
    TEMPORAL_TYPES,
    NodeLabel,
    Progress,
    RelationshipShape,
    TransferError,
)
from kbgraph.transfer._importer import ImportCounts, ImportReport, import_file
from kbgraph.transfer._records import DataRecord, ExportCounts, ExportHeader, NodeRecord, NodeRef, RelationshipRecord
from kbgraph.transfer._values import TEMPORAL_FORMATS, decode_vector, encode_vector

__all__ = [
    "DataRecord",
    "ExportCounts",
    "ExportHeader",
    "ExportReport",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "INGESTED_KEY",
    "ImportCounts",
    "ImportReport",
    "LABELS",
    "MAX_PROBLEMS",
    "NODE_LABELS",
    "NOT_EXPORTED",
    "NodeLabel",
    "NodeRecord",
    "NodeRef",
    "PLAIN_TYPES",
    "Progress",
    "RELATIONSHIPS",
    "RELATIONSHIP_TYPES",
    "RelationshipRecord",
    "RelationshipShape",
    "TEMPORAL_FORMATS",
    "TEMPORAL_TYPES",
    "TransferError",
    "check_export_file",
    "decode_vector",
    "encode_vector",
    "export_namespace",
    "export_to",
    "import_file",
    "kbgraph_version",
    "vector_dimension",
]
