"""What merging and linking know about a stored experience (read from the graph in one query)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
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


#: Reads the stored problem+goal vectors of some experience ids: rows of ``{id, pg_embedding}``.
VectorLoader = Callable[[list[str]], Iterable[dict[str, Any]]]


class PgVectorCache:
    """Unit problem+goal vectors by experience id, kept by a KnowledgeBase for its pipelines.

    An experience's id is the hash of its content, so its vector never changes: once read, it
    need not travel again. Each consolidation reads the namespace's facts without vectors and
    asks only for the ids this process has not seen (the cost of adding a run then no longer
    includes moving every vector of the namespace); search compares hits with them. Bounded:
    past ``max_entries`` it starts over.
    """

    def __init__(self, max_entries: int = 500_000):
        self.max_entries = max_entries
        self._vectors: dict[str, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()

    def read_through(
        self, ids: Iterable[str], load: VectorLoader, uncached: Iterable[str] = (),
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The unit vectors of ``ids`` and ``uncached``, by id. Those of ``ids`` this cache does not
        hold are loaded and kept; those of ``uncached`` (vectors that can change, such as an
        abstract experience's) are loaded every time and not kept. ``load(ids)`` gives rows of
        ``{id, pg_embedding}``; it is called once per 5,000 ids. An id stored without a vector
        (or not stored) is left out."""
        always = list(dict.fromkeys(uncached))
        changing = set(always)
        wanted = [i for i in dict.fromkeys(ids) if i not in changing]
        with self._lock:
            found = {i: self._vectors[i] for i in wanted if i in self._vectors}
        to_load = [i for i in wanted if i not in found] + always
        loaded = {row["id"]: unit_vector(row["pg_embedding"])
                  for start in range(0, len(to_load), 5000) for row in load(to_load[start : start + 5000])
                  if row["pg_embedding"] is not None}
        self.keep({i: v for i, v in loaded.items() if i not in changing})
        return found | loaded

    def keep(self, vectors: Mapping[str, npt.NDArray[np.float32]]) -> None:
        """Holds ``vectors`` (unit vectors by id) from now on."""
        with self._lock:
            if len(self._vectors) + len(vectors) > self.max_entries:
                self._vectors.clear()
            self._vectors.update(vectors)

    def held(self) -> dict[str, npt.NDArray[np.float32]]:
        """Every vector held, by id."""
        with self._lock:
            return dict(self._vectors)


def unit_vector(values: Any) -> npt.NDArray[np.float32]:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector)) or 1.0
    return vector / norm
