"""The export format's allow-lists: the labels and relationship types a file may hold, each with the
fixed queries that read and write it, and the constants every stage (export, check, import) shares.

Only what is listed here is exported or imported; a label or type missing here makes ``export``
refuse the namespace, so nothing leaves the database that could not come back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from kbgraph.core.errors import KbgraphError
from kbgraph.store.vector_cache import VECTOR_BYTES

FORMAT_NAME: Final = "kbgraph-export"
FORMAT_VERSION: Final = 2
# The versions an import reads. Version 1 (before one vector per distinct step text) kept a vector
# on every Step: the import converts it as opening a namespace does (kbgraph.store.step_texts).
READABLE_VERSIONS: Final = (1, 2)
# What ingest marks as read (ingest/pipeline.py _record_key): a forged key is refused.
INGESTED_KEY: Final = re.compile(r"(trajectory|experience):[A-Za-z0-9_.:\-]{1,128}")
# One problem per line is plenty to fix a file; past this many, the check stops reading.
MAX_PROBLEMS: Final = 1000

Progress = Callable[[str, int, int | None], None]


class TransferError(KbgraphError):
    """An export or import that cannot be done as asked (the message says why and what to do)."""


@dataclass(frozen=True)
class NodeLabel:
    """A label kbgraph exports: its key within a namespace and the fixed queries that handle it."""

    label: str
    key: str | None  # the property a node is MERGEd on with kb; None: one node per namespace
    stem: str  # export_page_<stem>.cypher, import_merge_<stem>.cypher
    vectors: tuple[str, ...] = ()  # float32 vector properties (db.create.setNodeVectorProperty)
    # Properties that hold a vector's bytes, by the vector (kbgraph.store.vector_cache.VECTOR_BYTES):
    # left out of the file, made again from the vector on import.
    vector_bytes: tuple[tuple[str, str], ...] = ()

    @property
    def derived(self) -> tuple[str, ...]:
        """The properties an export leaves out (an import makes them again)."""
        return tuple(packed for _, packed in self.vector_bytes)

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
    NodeLabel("Experience", "id", "experience", ("pg_embedding", "structure_embedding", "context_embedding"),
              tuple(VECTOR_BYTES.items())),
    # A Step's own vector comes only in version 1 files (converted on import); since version 2 the
    # vector is its text's, a StepText's, which the steps SAY.
    NodeLabel("Step", "id", "step", ("embedding",)),
    NodeLabel("StepText", "key", "step_text", ("embedding",)),
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
    RelationshipShape("SAYS", "Step", "StepText"),
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
#: Labels of a namespace's nodes that are not exported, and why: the feedback version's stripes
#: (kbgraph.store.search_version) carry nothing but tokens a search compares, and an import gives
#: the namespace a new search version, which the feedback version begins with.
NOT_EXPORTED: Final[dict[str, str]] = {"FeedbackStripe": "the feedback version's tokens"}
RELATIONSHIP_TYPES: Final[dict[str, RelationshipShape]] = {shape.type: shape for shape in RELATIONSHIPS}

# Cypher's valueType names of temporal values -> the tag (and the Cypher function) in the file.
TEMPORAL_TYPES: Final[dict[str, str]] = {
    "ZONED DATETIME": "datetime", "LOCAL DATETIME": "localdatetime", "DATE": "date",
    "ZONED TIME": "time", "LOCAL TIME": "localtime", "DURATION": "duration",
}
PLAIN_TYPES: Final = frozenset({"STRING", "INTEGER", "FLOAT", "BOOLEAN"})
