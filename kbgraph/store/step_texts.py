"""One vector per distinct step text: the migration of a namespace written before it.

Steps whose text (``action: text``, what kbgraph embeds) is the same share one
``(:StepText {kb, key, embedding})`` node, ``key`` the text's sha256, through
``(:Step)-[:SAYS]->(:StepText)`` (docs/performance.md, "One vector per distinct step text"). A
namespace written before kept a vector on every ``Step``; :func:`open_namespace` (what opening a
knowledge base runs after the schema) converts it: pages of steps that still hold a vector are
read, their keys hashed here (Cypher has no SHA-256 without APOC), and in one transaction a page's
StepTexts and SAYS edges are MERGEd and the steps' vectors removed. Idempotent and resumable: a
page is converted whole or not at all, the next open carries on, and two processes converting
the same namespace MERGE the same nodes. Copies of one text that held different vectors (none in
the namespaces measured) keep the first vector stored; they are counted in the report.

Once no step of the database keeps a vector, the old per-step index ``step_embedding`` is
dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from threading import Lock
from typing import Any
from weakref import WeakKeyDictionary

from kbgraph.core.ids import text_hash
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.schema import apply_schema
from kbgraph.store.vector_bytes_backfill import fill_vector_bytes

__all__ = ["OLD_STEP_INDEX", "StepTextMigration", "migrate_step_texts", "open_namespace"]

#: The per-step vector index of before (one vector per Step).
OLD_STEP_INDEX = "step_embedding"
PAGE = 2000

_MIGRATED: WeakKeyDictionary[Any, set[tuple[str, str]]] = WeakKeyDictionary()  # by driver
_LOCK = Lock()


@dataclass(frozen=True)
class StepTextMigration:
    """What converting one namespace did."""

    #: Steps whose own vector became a link to their text's.
    steps: int
    #: StepTexts those steps share (made or found).
    texts: int
    #: Texts whose copies held other vectors than the one kept.
    disagreeing: int
    #: Whether the old step index was dropped (no step of the database keeps a vector).
    dropped_old_index: bool


def open_namespace(gateway: Neo4jGateway, dimension: int, namespace: str, schema: bool = True) -> None:
    """The schema applied (unless not ``schema``), and ``namespace`` converted to one vector per
    step text and its experiences' vectors' bytes filled (:mod:`kbgraph.store.vector_bytes_backfill`)
    if it was written before: checked once per driver, database and namespace in a
    process, however many knowledge bases open it (the evaluation and the HTTP API open one per
    namespace without applying the schema again)."""
    if schema:
        apply_schema(gateway, dimension)
    seen = (gateway.database, namespace)
    with _LOCK:
        if seen in _MIGRATED.get(gateway.driver, set()):
            return
    migrate_step_texts(gateway, namespace)
    fill_vector_bytes(gateway, namespace)
    with _LOCK:
        _MIGRATED.setdefault(gateway.driver, set()).add(seen)


def migrate_step_texts(gateway: Neo4jGateway, namespace: str, page: int = PAGE) -> StepTextMigration:
    """Converts ``namespace``'s steps that still hold a vector (module docstring)."""
    steps = texts = disagreeing = 0
    while True:
        rows = gateway.read("step_texts_unmigrated", kb=namespace, limit=page)
        if not rows:
            break
        batch = [{"id": row["id"], "key": text_hash(f"{row['action']}: {row['text'] or ''}")} for row in rows]
        done = gateway.write_all([("step_texts_migrate", {"kb": namespace, "rows": batch})])[0][0]
        steps += int(done["steps"])
        texts += len({row["key"] for row in batch})
        disagreeing += int(done["disagreeing"])
    dropped = steps > 0 and _drop_old_index_when_unused(gateway)
    return StepTextMigration(steps, texts, disagreeing, dropped)


def _drop_old_index_when_unused(gateway: Neo4jGateway) -> bool:
    if not gateway.read("schema_vector_filters", names=[OLD_STEP_INDEX]):
        return False
    if gateway.read("step_texts_any_unmigrated")[0]["any"]:
        return False
    gateway.auto_commit("schema_drop_index", index=OLD_STEP_INDEX)
    return True
