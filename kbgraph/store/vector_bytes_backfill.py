"""The vectors' bytes (:data:`~kbgraph.store.vector_cache.VECTOR_BYTES`) of experiences written
before they were kept: opening a namespace fills them (:func:`fill_vector_bytes`, run by
:func:`kbgraph.store.step_texts.open_namespace`), so its bulk reads take bytes rather than lists of
floats. Pages of experiences without bytes are read with their vectors, the bytes made here (Cypher
cannot turn a list of floats into bytes) and written in one transaction a page, each only where the
experience still has no bytes and still holds the vectors read. Idempotent and resumable; until an
experience is filled, the reads take its lists (as before)."""

from __future__ import annotations

from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import VECTOR_BYTES, vector_bytes

__all__ = ["fill_vector_bytes"]

PAGE = 2000


def fill_vector_bytes(gateway: Neo4jGateway, namespace: str, page: int = PAGE) -> int:
    """Fills the bytes of ``namespace``'s experiences stored without them; how many were filled."""
    filled = 0
    while True:
        rows = gateway.read("experience_vector_bytes_missing", kb=namespace, limit=page)
        if not rows:
            return filled
        batch = [{"id": row["id"], **{vector: row[vector] for vector in VECTOR_BYTES},
                  **{packed: vector_bytes(row[vector]) for vector, packed in VECTOR_BYTES.items()}} for row in rows]
        done = int(gateway.write("experience_vector_bytes_fill", kb=namespace, rows=batch)[0]["filled"])
        filled += done
        if done == 0:  # none still as read (vectors written meanwhile): the next open tries again
            return filled
