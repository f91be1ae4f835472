"""The vectors of short texts the intent match compares with a request (kbgraph.search.student.text_vectors),
kept in a bounded map (kbgraph.search.student.bounded)."""

from __future__ import annotations

import numpy as np

from kbgraph.search.student import text_vectors
from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.text_vectors import IntentVectors
from tests.search.test_workflow_operations import CountingEmbedder


def test_a_bounded_map_drops_the_oldest_put_and_reads_many_at_once() -> None:
    kept: BoundedMap[str, int] = BoundedMap(2)
    kept.put_many({"a": 1, "b": 2})
    kept.put("c", 3)
    assert kept.get_many(["a", "b", "c", "d"]) == {"b": 2, "c": 3}
    kept.put("b", 4)  # put again: the newest, so "c" is the oldest now
    kept.put("e", 5)
    assert kept.get_many(["b", "c", "e"]) == {"b": 4, "e": 5}
    assert len(kept) == 2


def test_a_text_is_embedded_once_and_its_vector_has_unit_length() -> None:
    embedder = CountingEmbedder()
    vectors = IntentVectors(embedder)
    first = vectors.of(["cancel pending order", "book reservation", "cancel pending order"])
    again = vectors.of(["book reservation"])
    assert embedder.asked == ["cancel pending order", "book reservation"]
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)
    assert np.array_equal(first[0], first[2]) and np.array_equal(first[1], again[0])


def test_one_call_with_more_texts_than_are_kept_still_answers_every_one(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(text_vectors, "KEPT_VECTORS", 2)
    vectors = IntentVectors(CountingEmbedder())
    texts = ["a", "b", "c", "d"]
    assert vectors.of(texts).shape == (4, CountingEmbedder.dimension)
    assert len(vectors._kept) == 2
