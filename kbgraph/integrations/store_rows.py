"""The LangGraph store's rows and items: a planned put, and an ``Item`` (or ``SearchItem``) read
back from a row of the store's queries (kbgraph.integrations.langgraph)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import Item, PutOp, SearchItem

from kbgraph.core.models import Trajectory

__all__ = ["PlannedPut", "item_of", "now"]


@dataclass
class PlannedPut:
    op: PutOp
    id: str
    value: str | None = None
    ttl: float | None = None
    vectors: list[dict[str, Any]] = field(default_factory=list)
    trajectory: Trajectory | None = None  # a put into TRAJECTORIES, checked once, ingested at the write


def now() -> datetime:
    return datetime.now(UTC)


def _native(value: Any) -> datetime:
    return value.to_native() if hasattr(value, "to_native") else value  # type: ignore[no-any-return]


def item_of(row: Mapping[str, Any], score: float | None = None) -> Any:
    """An ``Item`` from a row (a ``SearchItem`` when the row comes from a search)."""
    fields = {"namespace": tuple(row["namespace"]), "key": row["key"], "value": json.loads(row["value"]),
              "created_at": _native(row["created_at"]), "updated_at": _native(row["updated_at"])}
    if "score" in row:
        return SearchItem(score=score, **fields)
    return Item(**fields)
