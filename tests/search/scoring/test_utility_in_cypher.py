"""Utility (Agent KB D.3) is written twice: :func:`kbgraph.core.utility.utility` in Python, for the
learning loop, and in the Cypher the searches read it through (``search_candidates_score``,
``search_neighbours``) and the inspection query ``top_by_utility``. Here the Cypher copies are run
against a real Neo4j on a grid of inputs — quality, usage impact, time since the last use and
since the impact, missing values and times in the future — and must give what Python gives.

Every copy decays by whole calendar days (UTC), as :func:`~kbgraph.core.utility.calendar_days_between`
counts them, so that equal hits keep their order from one second to the next and what is reported
is what the ranking used. The search queries count up to the database's clock: they must give
Python's utility at the moment before or after the query ran (the two differ only when midnight
passed in between); given a day (``$today``, as the evaluation gives the day a namespace was
built), they count up to that day instead. The inspection query counts up to the ``now`` it is
given: it must give Python's utility at that moment.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta
from typing import Any

import neo4j
import pytest

from kbgraph.core.utility import calendar_days_between, utility
from kbgraph.inspect import InspectionLibrary
from kbgraph.kb import KnowledgeBase
from tests.conftest import Neo4jTarget

QUALITIES = [None, 0.0, 0.3, 0.9]
IMPACTS = [None, -0.4, 0.25, 0.8]  # 0.9 + 0.8 is above 1: clipped
#: Days before the grid's moment: None = never used (created_at counts) / no impact recorded; < 0 = future.
LAST_USED = [None, 0.0, 2.25, 30.0, 400.0, -3.0]
IMPACT_AT = [None, 12.5, -1.0]
CREATED_DAYS_AGO = 45.0
DECAYS = [0.0, math.log(2) / 30, 0.5]


def _ago(moment: datetime, days: float | None) -> datetime | None:
    return None if days is None else moment - timedelta(days=days)


def _expected(row: dict[str, Any], now: datetime, decay: float) -> float:
    """What Python computes for one grid node at ``now``: the learning loop's utility, missing
    quality 0.5, over calendar days."""
    quality = 0.5 if row["quality"] is None else row["quality"]
    recent = row["last_used_at"] or row["created_at"]
    return utility(quality, calendar_days_between(recent, now), decay, row["usage_impact"] or 0.0,
                   calendar_days_between(row["usage_impact_at"], now))


@pytest.fixture
def grid(kb: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget) -> tuple[datetime, dict[str, dict[str, Any]]]:
    """A seed and one experience per point of the grid, each an ALTERNATIVE of the seed. Times are
    whole seconds from ``moment``, the grid's reference time."""
    moment = datetime.now(UTC).replace(microsecond=0)
    rows = {}
    for i, (quality, impact, used, impact_at) in enumerate(itertools.product(QUALITIES, IMPACTS, LAST_USED, IMPACT_AT)):
        rows[f"grid-{i}"] = {
            "id": f"grid-{i}", "quality": quality, "usage_impact": impact, "last_used_at": _ago(moment, used),
            "usage_impact_at": None if impact is None else _ago(moment, impact_at),
            "created_at": _ago(moment, CREATED_DAYS_AGO),
        }
    driver.execute_query(
        "CREATE (seed:Experience {kb: $kb, id: 'seed', kind: 'concrete', status: 'active', domain: 'grid', "
        "problem: 'seed', goal: 'seed', created_at: $moment}) "
        "WITH seed UNWIND $rows AS row "
        "CREATE (e:Experience {kb: $kb, kind: 'concrete', status: 'active', domain: 'grid', problem: 'p', goal: 'g'}) "
        "SET e += row CREATE (seed)-[:ALTERNATIVE {weight: 1.0, reason: 'grid'}]->(e)",
        kb=kb.namespace, moment=moment, rows=list(rows.values()), database_=neo4j_target.database)
    return moment, rows


def _not_python_s_on_calendar_days(cypher: dict[str, float], rows: dict[str, dict[str, Any]], decay: float,
                                   before: datetime, after: datetime) -> list[str]:
    """The grid points whose Cypher utility (clipped, as the search clips it) is Python's on
    calendar days neither at ``before`` nor at ``after`` (the query ran in between)."""
    wrong = []
    for node_id, row in rows.items():
        value = min(max(cypher[node_id], 0.0), 1.0)
        expected = {_expected(row, moment, decay) for moment in (before, after)}
        if not any(value == pytest.approx(e, abs=1e-12) for e in expected):
            wrong.append(f"{row}: cypher {value}, python {sorted(expected)}")
    return wrong


#: The parameters of each search query that reads utility, for the grid's experiences ``ids``.
SEARCH_QUERIES: dict[str, Callable[[list[str]], dict[str, Any]]] = {
    # the student search's scoring facts of its candidates (the cosines are not asked for)
    "search_candidates_score": lambda ids: {
        "ids": ids, "statuses": ["active"], "exclude": [], "pg": [1.0, 0.0], "task": [1.0, 0.0],
        "semantic_known": ids, "structural_known": ids},
    # graph traversal: every grid experience is an ALTERNATIVE of the seed
    "search_neighbours": lambda ids: {
        "seeds": ["seed"], "pg": [1.0, 0.0], "per_seed": len(ids) + 1, "statuses": ["active"], "domains": None,
        "kinds": None, "min_success": 0.0, "min_quality": 0.0, "agent": None},
}


#: The day a search is given, in days from the grid's moment: none (the database's clock), later,
#: the same day, and before the experiences were created (every time then lies ahead: 0 days).
GIVEN_DAYS = [None, 75, 0, -60]


@pytest.mark.parametrize("given", GIVEN_DAYS)
@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("query", sorted(SEARCH_QUERIES))
def test_the_search_reads_the_utility_python_computes_on_the_day_it_is_given_or_todays(
    kb: KnowledgeBase, grid: tuple[datetime, dict[str, dict[str, Any]]], query: str, decay: float, given: int | None,
) -> None:
    moment, rows = grid
    today = None if given is None else (moment + timedelta(days=given)).date()
    before = datetime.now(UTC)
    [result] = kb.gateway.read(query, kb=kb.namespace, decay=decay, today=today, **SEARCH_QUERIES[query](list(rows)))
    after = datetime.now(UTC)
    if today is not None:
        before = after = datetime.combine(today, time(12), UTC)
    cypher = {r["id"]: float(r["utility"]) for r in result["rows"]}
    assert set(cypher) == set(rows)
    assert not _not_python_s_on_calendar_days(cypher, rows, decay, before, after)


@pytest.mark.parametrize("decay", DECAYS)
def test_top_by_utility_gives_the_utility_python_computes_at_the_same_moment(
    kb: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget,
    grid: tuple[datetime, dict[str, dict[str, Any]]], decay: float,
) -> None:
    moment, rows = grid
    records, _, _ = driver.execute_query(
        InspectionLibrary().get("top_by_utility").text, kb=kb.namespace, domain="grid", decay_per_day=decay,
        limit=len(rows) + 1, now=moment, database_=neo4j_target.database, routing_=neo4j.RoutingControl.READ)
    cypher = {r["id"]: float(r["utility"]) for r in records if r["id"] != "seed"}
    assert set(cypher) == set(rows)
    wrong = [f"{rows[i]}: cypher {value}, python {_expected(rows[i], moment, decay)}"
             for i, value in cypher.items() if value != pytest.approx(_expected(rows[i], moment, decay), abs=1e-12)]
    assert not wrong
