"""Specification of kbgraph.search.candidates: one policy for "the nearest k nodes of this namespace".

A namespace at or under ``exact_scan_max`` nodes is scanned exactly and the shared index is never
asked; a larger one over-fetches the index, capped by ``overfetch_limit``, and scans when asked to
fall back. No database is needed: the scan and the index are plain functions here. Which query asks
an index follows the server: on Neo4j 2026 its twin that keeps the namespace inside the index.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kbgraph.core.weights import SearchWeights
from kbgraph.kb import KnowledgeBase
from kbgraph.search.candidates import (
    FIRST_FACTOR, INDEX_QUERIES, MAX_FIRST_FACTOR, PassRates, ScanPolicy, index_query, nearest,
)
from kbgraph.store.queries import query
from kbgraph.store.schema import VECTOR_INDEXES, index_filters_by_namespace, schema_statements


class Index:
    """A shared index of ``total`` nodes of which every ``every``-th is this namespace's."""

    def __init__(self, total: int, every: int) -> None:
        self.total, self.every = total, every
        self.asked: list[int] = []

    def __call__(self, n: int) -> tuple[int, Sequence[int]]:
        self.asked.append(n)
        returned = min(n, self.total)
        return returned, [i for i in range(returned) if i % self.every == 0]


def never_scanned() -> list[int]:
    raise AssertionError("the namespace is larger than exact_scan_max and no fall-back was asked for: no scan")


def test_a_namespace_at_or_under_the_limit_is_scanned_and_the_index_never_asked() -> None:
    index = Index(total=10_000, every=100)
    result = nearest(ScanPolicy(exact_scan_max=50), 50, 5, scan=lambda: ["exact"], fetch=index, first=20)
    assert result.rows == ["exact"] and result.exact and index.asked == []


def test_a_larger_namespace_asks_the_index_and_never_scans_when_it_fills_the_list() -> None:
    index = Index(total=10_000, every=2)

    def scan() -> list[int]:
        raise AssertionError("no scan when the index fills the list")

    result = nearest(ScanPolicy(exact_scan_max=50), 51, 5, scan=scan, fetch=index, first=20)
    assert result.rows == [0, 2, 4, 6, 8] and not result.exact and index.asked == [20]


def test_the_index_is_asked_for_at_most_the_overfetch_limit_and_says_when_it_came_short() -> None:
    index = Index(total=10_000, every=1000)
    result = nearest(ScanPolicy(exact_scan_max=0, overfetch_limit=300), 1, 5, scan=never_scanned, fetch=index, first=20)
    assert index.asked == [20, 80, 300] and result.limit_hit and result.rows == [0]


def test_a_caller_may_ask_for_less_than_the_limit_but_never_more() -> None:
    policy = ScanPolicy(exact_scan_max=0, overfetch_limit=300)
    once = Index(total=10_000, every=1000)
    nearest(policy, 1, 5, scan=never_scanned, fetch=once, first=20, limit=20)
    assert once.asked == [20]
    capped = Index(total=10_000, every=1000)
    nearest(policy, 1, 5, scan=never_scanned, fetch=capped, first=1000, limit=5000)
    assert capped.asked == [300]


def test_falling_back_scans_the_namespace_when_the_index_cannot_fill_the_list() -> None:
    index = Index(total=10_000, every=1000)
    result = nearest(ScanPolicy(exact_scan_max=0, overfetch_limit=300), 1, 5, scan=lambda: [1, 2, 3, 4, 5],
                     fetch=index, first=20, fall_back=True)
    assert result.rows == [1, 2, 3, 4, 5] and result.exact and result.fell_back


def test_the_policy_is_the_search_settings() -> None:
    weights = SearchWeights(exact_scan_max=7, overfetch_limit=99)
    assert weights.scan == ScanPolicy(exact_scan_max=7, overfetch_limit=99)
    assert ScanPolicy() == SearchWeights().scan
    assert ScanPolicy(exact_scan_max=7).scans(7) and not ScanPolicy(exact_scan_max=7).scans(8)


def test_a_call_overrides_only_the_limits_it_gives_and_within_their_bounds() -> None:
    policy = ScanPolicy(exact_scan_max=7, overfetch_limit=99)
    assert policy.overridden(None, None) == policy
    assert policy.overridden(0, None) == ScanPolicy(exact_scan_max=0, overfetch_limit=99)
    assert policy.overridden(None, 5) == ScanPolicy(exact_scan_max=7, overfetch_limit=5)
    with pytest.raises(ValueError, match="overfetch_limit"):
        policy.overridden(None, 0)


def test_a_first_request_follows_the_learnt_pass_rate_within_its_bounds() -> None:
    rates = PassRates()
    assert rates.first("index", 10, 4096) == 10 * FIRST_FACTOR  # nothing learnt yet
    rates.learn("index", fetched=100, passed=50)
    assert rates.first("index", 10, 4096) == 30  # 1.5 × what half the hits passing needs
    rates.learn("index", fetched=100, passed=1)
    assert rates.first("index", 10, 4096) == 10 * MAX_FIRST_FACTOR
    assert rates.first("index", 10, 25) == 25
    rates.learn("other", fetched=0, passed=0)  # an empty answer teaches nothing
    assert rates.first("other", 10, 4096) == 10 * FIRST_FACTOR


@pytest.mark.parametrize("rate", [1.0, 0.9])
def test_a_first_request_asks_for_at_least_k(rate: float) -> None:
    rates = PassRates()
    rates.learn("index", fetched=100, passed=int(100 * rate))
    assert rates.first("index", 10, 4096) >= 10


# ----------------------------------------------------------------------------- the query per line


@pytest.mark.parametrize(("asked", "twin"), sorted(INDEX_QUERIES.items()))
def test_each_index_query_has_a_2026_twin_that_asks_its_index_for_the_namespace(
    asked: tuple[str, str], twin: str
) -> None:
    query_name, index = asked
    text = " ".join(" ".join(line for line in query(twin).splitlines() if not line.startswith("//")).split())
    assert query(query_name)  # the 5.26 query exists
    assert text.startswith("CYPHER 25") and f"IN (VECTOR INDEX {index} FOR $vector WHERE " in text
    variable = text.split(" SEARCH ", 1)[1].split()[0]
    assert f"WHERE {variable}.kb = $kb" in text


def test_the_2026_schema_declares_the_namespace_in_every_vector_index() -> None:
    declared = {statement.split()[5]: statement for name, statement in schema_statements(filters_in_index=True)
                if "VECTOR INDEX" in statement}
    assert set(declared) == set(VECTOR_INDEXES)
    assert all("WITH [n.kb" in statement for statement in declared.values())
    assert not any(" WITH [" in statement for _, statement in schema_statements(filters_in_index=False))


def test_the_query_follows_what_the_servers_indexes_can_do(kb: KnowledgeBase) -> None:
    """On Neo4j 2026 (as the server reports its release) the twin, on 5.26 the over-fetching query."""
    on_2026 = index_filters_by_namespace(kb.gateway)
    for (query_name, index), twin in INDEX_QUERIES.items():
        assert index_query(kb.gateway, query_name, index) == (twin if on_2026 else query_name)
