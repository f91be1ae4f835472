"""A knowledge base runs the process's BLAS on the threads its settings give (one by default): the
idle threads of a larger pool spin on the cores Neo4j needs."""

from __future__ import annotations

from collections.abc import Iterator

import neo4j
import numpy as np
import pytest
from threadpoolctl import ThreadpoolController

from kbgraph.core import blas_threads
from kbgraph.core.blas_threads import limit_blas_threads
from kbgraph.core.settings import Settings
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase


def blas_counts() -> list[int]:
    return [info["num_threads"] for info in ThreadpoolController().info() if info["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """BLAS on two threads, as NumPy starts on this machine, and no limit set yet in this process;
    one thread again afterwards, as every knowledge base of the suite leaves it."""
    monkeypatch.setattr(blas_threads, "_limited", None)
    ThreadpoolController().limit(limits=2, user_api="blas")
    assert blas_counts() and set(blas_counts()) == {2}
    yield
    ThreadpoolController().limit(limits=1, user_api="blas")


def test_the_limit_applies_to_every_loaded_blas_library(two_blas_threads: None) -> None:
    limit_blas_threads(1)
    assert set(blas_counts()) == {1}


def test_zero_leaves_the_process_s_pools_as_they_are(two_blas_threads: None) -> None:
    limit_blas_threads(0)
    assert set(blas_counts()) == {2}


def test_a_search_s_product_gives_the_same_floats_on_one_thread_and_a_larger_one_the_same_to_float32_rounding(
    two_blas_threads: None,
) -> None:
    # A search scores one query vector against the kept unit vectors: the same floats however many
    # threads. A product of many rows (an add's steps against the run's) may be split otherwise by
    # thread count (NumPy 2.4.6's OpenBLAS 0.3.31 on this machine does, from 8 rows: its last bits
    # differ); it stays the same product to float32's rounding.
    rows = np.random.default_rng(3).standard_normal((4000, 384)).astype(np.float32)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    one_query, many = unit[:1] @ unit.T, unit[:40] @ unit.T
    limit_blas_threads(1)
    assert np.array_equal(unit[:1] @ unit.T, one_query)
    np.testing.assert_allclose(unit[:40] @ unit.T, many, rtol=0, atol=8 * np.finfo(np.float32).eps)


def test_opening_a_knowledge_base_sets_its_settings_limit(
    two_blas_threads: None, driver: neo4j.Driver, embedder: CachedEmbedder,
) -> None:
    KnowledgeBase(driver, embedder, settings=Settings(blas_threads=0), ensure_schema=False)
    assert set(blas_counts()) == {2}
    KnowledgeBase(driver, embedder, ensure_schema=False)  # the default
    assert set(blas_counts()) == {1}
