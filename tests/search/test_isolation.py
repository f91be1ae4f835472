"""A tenant's results are its own: a namespace's rankings are a function of its contents and the
query alone, whatever other namespaces of the same database hold (issue 32, point 5).

Every channel of a namespace at or under ``exact_scan_max`` is exact and namespace-local: the
vector channels scan the namespace, and the lexical channel scores the namespace's own texts with
its own BM25 statistics instead of taking the top hits of the database-wide full-text index (which
other namespaces crowd, and whose term statistics are the whole database's). The experiment: a
small namespace of real runs and gold trajectories, a set of queries (with and without executed
steps, with and without a domain, the teacher's refine and the step search), their full rankings
recorded; then a larger namespace of lexically similar experiences beside it; then that one
deleted. The rankings stay the same to the last digit.
"""

from __future__ import annotations

import json
from typing import Any

import neo4j

from kbgraph.bench.synthetic import synthetic_experiences
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience
from kbgraph.core.settings import Settings
from tests.conftest import REAL_RUNS, SHARED_DATA

#: The crowd: this many experiences of another tenant (random vectors, so writing them runs no
#: model), their problems made of the small namespace's own words.
CROWD = 1500
#: The small namespace: the first runs of the real airline runs and of the retail gold trajectories.
REAL_SLICE, RETAIL_SLICE = 40, 40

SEARCHES: list[dict[str, Any]] = [
    # a short request, no steps executed, no domain
    {"task": "I want to swap an item that arrived for another colour"},
    # the same with its domain
    {"task": "I want to swap an item that arrived for another colour", "domain": "retail"},
    # a long story with executed steps (a retail benchmark query)
    {"task": "You received your order and wish to exchange the mechanical keyboard for one with clicky switches "
             "and return the water bottle.", "domain": "retail",
     "steps_so_far": [{"action": "find_user_id_by_name_zip", "arguments": {"first_name": "Yusuf", "zip": "19122"}},
                      {"action": "get_order_details", "arguments": {"order_id": "#W2378156"}}]},
    # a real user's first message, its own runs left out (transfer between tasks)
    {"task": "Hi! I need to cancel my flights from MCO to CLT and get a refund, please.", "domain": "airline",
     "exclude": [f"gpt4o-airline-08-t{n}" for n in range(4)]},
    {"task": "Hi there! I'd like to change my flight reservation and add a checked bag.", "domain": "airline",
     "steps_so_far": [{"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}]},
    # executed steps only
    {"steps_so_far": [{"action": "get_reservation_details", "arguments": {"reservation_id": "NO6JO3"}},
                      {"action": "cancel_reservation", "arguments": {"reservation_id": "NO6JO3"}}]},
]
PROBLEMATIC = [
    {"action": "book_reservation", "arguments": {"payment_id": "credit_card_4421486"},
     "error": "Error: payment amount does not add up, total price is 305, but paid 255"},
    {"action": "cancel_pending_order", "arguments": {"order_id": "#W1"}, "error": "Error: order not found"},
]


def rankings(kb: KnowledgeBase) -> list[Any]:
    """Everything the namespace answers to the queries above: each search's hits (id, score, the
    channels that found them, the lexical score), the teacher's matches and the step search's."""
    out: list[Any] = []
    for query in SEARCHES:
        results = kb.search(k=20, **query)
        out.append([(h.id, h.score, tuple(h.found_by), h.breakdown.lexical) for h in results.hits])
        out.append([(c.id, c.score) for c in results.concepts])
    for step in PROBLEMATIC:
        refined = kb.refine([step], k=10)
        out.append([(m.experience_id, m.step.id, m.score) for m in refined.steps])
        out.append([(m.failure_id, m.score) for m in refined.failures])
        out.append(refined.experiences)
    for action in ("cancel_reservation", "get_order_details"):
        out.append([(h.experience_id, h.order, h.score) for h in kb.search_steps(action, k=10)])
    return out


def crowd_experiences(own: list[str]) -> list[Experience]:
    """Another tenant's experiences whose problems are the small namespace's texts, reworded: the
    full-text index's top hits for its queries are then mostly theirs, and its term statistics
    move."""
    made = synthetic_experiences(CROWD, steps=3, seed=32)
    return [e.model_copy(update={"problem": f"{own[i % len(own)]} (other tenant, case {i})",
                                 "relations": []})
            for i, e in enumerate(made)]


def test_a_namespace_ranks_the_same_whatever_another_namespace_holds(
    kb: KnowledgeBase, driver: neo4j.Driver, embedder: CachedEmbedder,
) -> None:
    # Utility decays with the time since an experience was made or used, so every score drifts
    # by a few millionths while the test runs; without decay, time takes no part.
    kb = KnowledgeBase(driver, embedder, namespace=kb.namespace, database=kb.gateway.database,
                       settings=Settings(learning={"utility_half_life_days": 0}))
    real = (REAL_RUNS / "airline_gpt4o.jsonl").read_text().splitlines()[:REAL_SLICE]
    retail = (SHARED_DATA / "trajectories" / "retail_train.jsonl").read_text().splitlines()[:RETAIL_SLICE]
    kb.add_trajectories([json.loads(line) for line in [*real, *retail]])
    sizes = kb.student.namespace_size.get(kb.settings.search.exact_scan_max)
    assert max(sizes) <= kb.settings.search.exact_scan_max, "the namespace must be one that is scanned exactly"
    alone = rankings(kb)
    assert all(alone[i] for i in range(0, 2 * len(SEARCHES), 2)), "every search finds something"

    other = KnowledgeBase(driver, embedder, namespace=kb.namespace + "-other", database=kb.gateway.database)
    try:
        own = [e.problem for e in kb.get_many([h[0] for ranking in alone[: 2 * len(SEARCHES): 2] for h in ranking])]
        other.add_experiences(crowd_experiences(own))
        assert rankings(kb) == alone
    finally:
        other.clear()
    assert rankings(kb) == alone
