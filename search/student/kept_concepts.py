"""The namespace's meta-concept documents, kept by the search version, so that a search of a large
namespace ranks them in the process instead of asking for them.

The document channel scanned a namespace's meta-concepts every search (``search_meta_concepts_scan``:
tens of documents; one request a search, settled or not, and the only one of a settled search at
10,000 experiences besides the version's). Every write that changes a meta-concept or an EXHIBITS
edge now gives the namespace a new search version (kbgraph.store.search_version: a recluster's
writes, an ingest's concept links, merges and deletes of experiences; an import renews it).
``search_meta_concepts_all`` reads the version first, then every document with its embedding; the
rows are kept under that version, and a search that read the same version ranks them as the scan
does: Neo4j's cosine score ``(1 + cos) / 2`` of the float32 product, best first, ties by id. A row
read while a write was applied is kept under the version before that write, which no search reads
once the write is visible. Kept: the last version's rows only. Thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from threading import Lock
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.ranked import best_positions
from kbgraph.search.student.vector_model import neo4j_scores
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["KeptConcepts", "NamespaceConcepts", "read_concepts"]


@dataclass(frozen=True)
class NamespaceConcepts:
    """A namespace's meta-concepts as ``search_meta_concepts_all`` reads them, in id order, with
    their embeddings as one float32 matrix."""

    rows: tuple[Mapping[str, Any], ...]
    matrix: npt.NDArray[np.float32]

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]]) -> NamespaceConcepts:
        dimension = len(rows[0]["embedding"]) if rows else 0
        matrix = np.asarray([r["embedding"] for r in rows], dtype=np.float32).reshape(len(rows), dimension)
        return cls(tuple({k: v for k, v in r.items() if k != "embedding"} for r in rows), matrix)

    def nearest(self, vector: Sequence[float], k: int) -> list[dict[str, Any]]:
        """The ``k`` documents nearest to ``vector``, as ``search_meta_concepts_scan``'s rows."""
        if not self.rows or k <= 0:
            return []
        score = neo4j_scores(self.matrix, vector)
        order = best_positions(score, np.arange(len(self.rows)), k, lambda i: self.rows[i]["id"])
        return [{**self.rows[i], "score": float(score[i])} for i in order]


def read_concepts(gateway: Neo4jGateway, namespace: str) -> tuple[str | None, NamespaceConcepts]:
    """The namespace's search version and its meta-concepts read after it."""
    row = gateway.read("search_meta_concepts_all", kb=namespace)[0]
    version = row["version"]
    return (None if version is None else str(version)), NamespaceConcepts.of(row["rows"])


class KeptConcepts:
    """The meta-concepts read at one search version."""

    def __init__(self) -> None:
        self._kept: tuple[str, NamespaceConcepts] | None = None
        self._lock = Lock()

    def get(self, version: str | None) -> NamespaceConcepts | None:
        """The meta-concepts kept when they were read at ``version``, else None."""
        with self._lock:
            kept = self._kept
        return kept[1] if kept is not None and version is not None and kept[0] == version else None

    def keep(self, version: str | None, concepts: NamespaceConcepts) -> None:
        if version is not None:
            with self._lock:
                self._kept = (version, concepts)
