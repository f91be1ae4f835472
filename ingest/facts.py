"""What merging and linking know about a stored experience (read from the graph in one query)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class ExperienceFacts:
    id: str
    kind: str
    domain: str
    actions: tuple[str, ...]
    pg: npt.NDArray[np.float32]
    success_rate: float
    source: str | None
    source_ids: tuple[str, ...]
    adapted_from: tuple[str, ...]
    retrieved: int
    used: int
    succeeded: int
    problem: str
    goal: str
    scope: str = "shared"
    owner_agent: str | None = None
    #: The sources whose run failed (a subset of ``source_ids``).
    failed_source_ids: tuple[str, ...] = ()

    @property
    def only_failed(self) -> bool:
        """Every run it stands for failed: a pitfall, never merged into a way that worked."""
        return bool(self.source_ids) and len(set(self.failed_source_ids)) == len(set(self.source_ids))

    @property
    def succeeded_sources(self) -> tuple[str, ...]:
        failed = set(self.failed_source_ids)
        return tuple(s for s in self.source_ids if s not in failed)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> ExperienceFacts:
        pg = row["pg"] if "pg" in row else unit_vector(row["pg_embedding"])
        return cls(
            id=row["id"], kind=row["kind"], domain=row["domain"], actions=tuple(row["actions"]),
            pg=pg, success_rate=float(row["success_rate"]), source=row["source"],
            source_ids=tuple(row["source_ids"] or ()), adapted_from=tuple(row["adapted_from"] or ()),
            retrieved=int(row["retrieved"] or 0), used=int(row["used"] or 0), succeeded=int(row["succeeded"] or 0),
            problem=row["problem"], goal=row["goal"] or "", scope=row.get("scope") or "shared",
            owner_agent=row.get("owner_agent"), failed_source_ids=tuple(row.get("failed_source_ids") or ()),
        )


class PgVectorCache:
    """Unit problem+goal vectors by experience id, kept by a KnowledgeBase for its pipelines.

    An experience's id is the hash of its content, so its vector never changes: once read, it
    need not travel again. Each consolidation reads the namespace's facts without vectors and
    asks only for the ids this process has not seen (the cost of adding a run then no longer
    includes moving every vector of the namespace). Bounded: past ``max_entries`` it starts over.
    """

    def __init__(self, max_entries: int = 500_000):
        self.max_entries = max_entries
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()

    def missing(self, ids: Iterable[str]) -> list[str]:
        with self._lock:
            return [i for i in ids if i not in self._vectors]

    def put(self, rows: Iterable[dict[str, Any]]) -> None:
        """Rows of ``{id, pg_embedding}``; stored unit-length, float32."""
        fresh = {row["id"]: unit_vector(row["pg_embedding"]) for row in rows}
        with self._lock:
            if len(self._vectors) + len(fresh) > self.max_entries:
                self._vectors.clear()
            self._vectors.update(fresh)

    def get(self, experience_id: str) -> npt.NDArray[np.float32]:
        with self._lock:
            return self._vectors[experience_id]

    def find(self, experience_id: str) -> npt.NDArray[np.float32] | None:
        """The vector, or None when it was never read (or was dropped when the cache started over)."""
        with self._lock:
            return self._vectors.get(experience_id)


def unit_vector(values: Any) -> npt.NDArray[np.float32]:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector)) or 1.0
    return vector / norm
