"""What merging and linking know about a stored experience (read from the graph in one query)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.store.vector_cache import stored_values, unit_vector


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
        pg = row["pg"] if "pg" in row else unit_vector(
            stored_values(row.get("pg_embedding_bytes"), row["pg_embedding"]))
        return cls(
            id=row["id"], kind=row["kind"], domain=row["domain"], actions=tuple(row["actions"]),
            pg=pg, success_rate=float(row["success_rate"]), source=row["source"],
            source_ids=tuple(row["source_ids"] or ()), adapted_from=tuple(row["adapted_from"] or ()),
            retrieved=int(row["retrieved"] or 0), used=int(row["used"] or 0), succeeded=int(row["succeeded"] or 0),
            problem=row["problem"], goal=row["goal"] or "", scope=row.get("scope") or "shared",
            owner_agent=row.get("owner_agent"), failed_source_ids=tuple(row.get("failed_source_ids") or ()),
        )
