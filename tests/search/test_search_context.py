"""What every stage of a student search shares (kbgraph.search.student.context): the query's
vectors as the stages take them, and transferability between domains."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.embedders import CachedEmbedder
from kbgraph.store.vector_cache import PgVectorCache
from kbgraph.search.namespace_size import NamespaceSize
from kbgraph.search.params import SearchWeights, parse_query
from kbgraph.search.scoring import domain_distance, transferability
from kbgraph.search.student.text_vectors import IntentVectors
from kbgraph.search.student.context import Run, SearchContext


def _run(vectors: dict[str, object]) -> Run:
    return Run.of(parse_query({"task": "cancel my order"}), SearchWeights(), 5, {}, vectors, [])


def test_query_vectors_become_the_same_python_floats_element_by_element() -> None:
    pg = np.random.default_rng(0).standard_normal(384).astype(np.float32)
    run = _run({"pg": pg, "task": [0.5, 1, 2.25], "steps": [pg, None]})
    assert run.pg == [float(x) for x in pg]
    assert all(type(x) is float for x in run.pg)
    assert run.task == [0.5, 1.0, 2.25]
    assert run.steps == [[float(x) for x in pg]]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_query_vector_with_nan_or_infinity_is_refused(bad: float) -> None:
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        _run({"pg": [0.1, bad, 0.2]})


def test_transferability_is_the_same_when_asked_again_and_for_each_tau(embedder: CachedEmbedder) -> None:
    context = SearchContext(gateway=None, embedder=embedder, namespace="unused",  # type: ignore[arg-type]
                            pg_vectors=PgVectorCache(), size=NamespaceSize(None, "unused"),  # type: ignore[arg-type]
                            utility_decay=0.0, executor=lambda: None,  # type: ignore[arg-type,return-value]
                            intent_vectors=IntentVectors(embedder))
    vectors = embedder.embed(["retail", "airline"])
    for tau in (0.5, 2.0):
        expected = transferability(domain_distance("retail", "airline", vectors[0], vectors[1]), tau)
        assert context.trans("retail", "airline", tau) == pytest.approx(expected, abs=1e-12)
        assert context.trans("retail", "airline", tau) == context.trans("retail", "airline", tau)
    assert context.trans("retail", "airline", 0.5) != context.trans("retail", "airline", 2.0)
    assert context.trans("Retail ", "retail", 0.5) == 1.0
    assert context.trans(None, "retail", 0.5) == 1.0
