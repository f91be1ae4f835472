"""The problem+goal vector cache a KnowledgeBase shares between consolidation and search."""

from __future__ import annotations

from typing import Any

import numpy as np

from kbgraph.store.vector_cache import PgVectorCache

STORED = {"a": [3.0, 4.0], "b": [1.0, 0.0], "w": [0.0, 2.0], "no-vector": None}


def test_ids_are_loaded_once_changing_ones_every_time_and_vectorless_ones_left_out() -> None:
    asked: list[list[str]] = []

    def load(ids: list[str]) -> list[dict[str, Any]]:
        asked.append(ids)
        return [{"id": i, "pg_embedding": STORED[i]} for i in ids if i in STORED]

    cache = PgVectorCache()
    first = cache.read_through(["a", "b", "no-vector", "gone"], load, uncached=["w"])
    assert sorted(first) == ["a", "b", "w"]
    assert np.allclose(first["a"], [0.6, 0.8])  # unit length
    again = cache.read_through(["a", "b"], load, uncached=["w"])
    assert sorted(again) == ["a", "b", "w"]
    assert asked == [["a", "b", "no-vector", "gone", "w"], ["w"]]
    assert cache.read_through([], load) == {} and len(asked) == 2  # nothing to load: no call
