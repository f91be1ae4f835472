"""Specification of kbgraph.search.overfetch: asking an unfiltered index for more until k rows pass.

A fake index of N nodes (ids 0..N-1, best first) stands in for Neo4j; a predicate decides which
nodes pass the filters, and every request size is recorded. No database is needed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kbgraph.search.overfetch import overfetch


class FakeIndex:
    """``fetch(n)``: the index's ``n`` nearest nodes, and those of them that pass the filter."""

    def __init__(self, size: int, passes: Callable[[int], bool] = lambda node: True) -> None:
        self.size = size
        self.passes = passes
        self.asked: list[int] = []

    def __call__(self, n: int) -> tuple[int, list[int]]:
        self.asked.append(n)
        page = range(min(n, self.size))
        return len(page), [node for node in page if self.passes(node)]


def every(step: int) -> Callable[[int], bool]:
    return lambda node: node % step == 0


def test_one_request_when_the_first_page_has_k_rows() -> None:
    index = FakeIndex(1000)
    result = overfetch(index, k=5, first=20, limit=1000)
    assert index.asked == [20]
    assert result.rows == [0, 1, 2, 3, 4]  # the best k, in index order
    assert (result.fetched, result.requests) == (20, 1)
    assert not result.exhausted and not result.limit_hit


def test_the_first_request_asks_for_at_least_k() -> None:
    index = FakeIndex(1000)
    result = overfetch(index, k=5, first=2, limit=1000)
    assert index.asked == [5]
    assert result.rows == [0, 1, 2, 3, 4]


def test_the_request_grows_by_growth_until_k_rows_pass() -> None:
    # Every 10th node passes: k=5 needs nodes 0..40, i.e. a page of at least 41.
    index = FakeIndex(1000, every(10))
    result = overfetch(index, k=5, first=10, limit=1000)  # growth 4 by default
    assert index.asked == [10, 40, 160]
    assert result.rows == [0, 10, 20, 30, 40]
    assert (result.fetched, result.requests) == (160, 3)
    assert not result.exhausted and not result.limit_hit


def test_growth_sets_the_factor_between_requests() -> None:
    index = FakeIndex(1000, every(10))
    result = overfetch(index, k=5, first=10, limit=1000, growth=2)
    assert index.asked == [10, 20, 40, 80]
    assert result.rows == [0, 10, 20, 30, 40]
    assert result.requests == 4


def test_exhausted_when_the_index_returns_fewer_nodes_than_asked() -> None:
    index = FakeIndex(30, every(10))  # only 3 nodes can ever pass
    result = overfetch(index, k=5, first=10, limit=1000)
    assert index.asked == [10, 40]
    assert result.rows == [0, 10, 20]
    assert result.exhausted and not result.limit_hit
    assert (result.fetched, result.requests) == (40, 2)


def test_exhausted_on_the_first_page_of_a_small_index() -> None:
    index = FakeIndex(3)
    result = overfetch(index, k=5, first=10, limit=1000)
    assert index.asked == [10]
    assert result.rows == [0, 1, 2]
    assert result.exhausted and not result.limit_hit


def test_an_index_that_fills_the_page_exactly_is_asked_again() -> None:
    # 40 nodes and a page of 40: the index might have more, so only the next answer tells.
    index = FakeIndex(40, every(10))
    result = overfetch(index, k=5, first=10, limit=1000)
    assert index.asked == [10, 40, 160]
    assert result.rows == [0, 10, 20, 30]
    assert result.exhausted


def test_limit_hit_when_the_limit_is_reached_without_k_rows() -> None:
    index = FakeIndex(1000, every(100))
    result = overfetch(index, k=5, first=10, limit=100)
    assert index.asked == [10, 40, 100]  # the last request is capped at the limit, not 160
    assert result.rows == [0]
    assert result.limit_hit and not result.exhausted
    assert (result.fetched, result.requests) == (100, 3)


def test_k_rows_found_at_the_limit_is_neither_exhausted_nor_limit_hit() -> None:
    index = FakeIndex(1000, every(20))
    result = overfetch(index, k=5, first=10, limit=100)
    assert index.asked == [10, 40, 100]
    assert result.rows == [0, 20, 40, 60, 80]
    assert not result.exhausted and not result.limit_hit


def test_running_out_at_the_limit_counts_as_exhausted() -> None:
    index = FakeIndex(30, every(10))
    result = overfetch(index, k=5, first=10, limit=40)
    assert index.asked == [10, 40]
    assert result.exhausted and not result.limit_hit


def test_no_request_exceeds_the_limit_even_the_first() -> None:
    index = FakeIndex(1000, every(1000))
    result = overfetch(index, k=50, first=200, limit=30)
    assert index.asked == [30]
    assert result.rows == [0]
    assert result.limit_hit


def test_rows_that_pass_are_capped_at_k() -> None:
    index = FakeIndex(1000)
    assert len(overfetch(index, k=3, first=100, limit=1000).rows) == 3


@pytest.mark.parametrize(
    ("k", "first", "limit", "growth"),
    [(0, 10, 100, 4), (-1, 10, 100, 4), (5, 0, 100, 4), (5, 10, 0, 4), (5, 10, 100, 1), (5, 10, 100, 0)],
)
def test_invalid_arguments_raise_before_any_request(k: int, first: int, limit: int, growth: int) -> None:
    index = FakeIndex(1000)
    with pytest.raises(ValueError):
        overfetch(index, k=k, first=first, limit=limit, growth=growth)
    assert index.asked == []
