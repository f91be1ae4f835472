"""Search on mixed runs (real Neo4j, real MiniLM): what worked comes back as the way to follow, with
how often it worked; what failed comes back only as a failed attempt of that task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.eval.evaluate import expand_to_trajectories, hit_sources
from kbgraph.search.explain import explain_score

BOOK = "You want to book a one-way economy flight from JFK to SEA on May 20 and pay with your two certificates."
REFUND = "You want to cancel your reservation and get a refund although the fare is basic economy."


def run(id: str, task: str, actions: list[str], success: bool, error_at: int | None = None) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"action": a, "arguments": {"reservation_id": "ABC123"}} for a in actions]
    if error_at is not None:
        steps[error_at]["error"] = "Error: payment amount does not add up, total price is 305, but paid 255"
    return {"id": id, "domain": "airline", "task": task, "steps": steps, "outcome": {"success": success}}


@pytest.fixture
def mixed_kb(kb: KnowledgeBase, tmp_path: Path) -> KnowledgeBase:
    runs = [
        # One task, four runs: two ways worked (booking, with one lookup or two), two attempts failed.
        run("book-ok-1", BOOK, ["get_user_details", "search_direct_flight", "book_reservation"], True),
        run("book-ok-2", BOOK, ["get_user_details", "search_direct_flight", "search_direct_flight", "book_reservation"], True),
        run("book-ko-1", BOOK, ["get_user_details", "book_reservation", "book_reservation", "cancel_reservation"], False,
            error_at=1),
        run("book-ko-2", BOOK, ["search_direct_flight", "book_reservation", "cancel_reservation"], False, error_at=1),
        # Another task solved three times by refusing (looking up, changing nothing), once by a transfer.
        *(run(f"refund-ok-{i}", REFUND, ["get_user_details", "get_reservation_details"], True) for i in range(3)),
        run("refund-transfer", REFUND, ["get_user_details", "transfer_to_human_agents"], True),
        run("other-refuse", "You want to change the passenger of a basic economy reservation.",
            ["get_reservation_details"], True),
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    kb.ingest([path])
    return kb


def test_what_worked_is_handed_back_and_what_failed_only_as_a_failed_attempt(mixed_kb: KnowledgeBase) -> None:
    results = mixed_kb.search("I'd like to book a flight from New York to Seattle with my certificates", domain="airline", k=5)
    top = results.hits[0]
    assert top.runs_succeeded == top.runs or top.experience.kind == "abstract"
    failed_hits = [h for h in results.hits if h.runs and h.runs_succeeded == 0]
    assert not failed_hits, "a failed run is never a hit while a way that worked for its task is known"
    attempts = [a for h in results.hits for a in h.failed_attempts]
    assert attempts and all(a.similarity >= 0.9 for a in attempts)
    assert {a.id for a in attempts} and any("payment amount does not add up" in f for a in attempts for f in a.failures)
    # The eval's expansion lists the runs that worked first.
    worked, failed = hit_sources(mixed_kb.gateway, mixed_kb.namespace, results.ids())
    ranking = expand_to_trajectories(results.ids(), worked, set(), 3, failed)
    assert set(ranking[:2]) == {"book-ok-1", "book-ok-2"}


def test_a_hit_says_how_often_it_and_its_workflow_worked(mixed_kb: KnowledgeBase) -> None:
    results = mixed_kb.search("book a flight to Seattle", domain="airline", k=5)
    concrete = next(h for h in results.hits if h.experience.kind == "concrete")
    assert (concrete.runs_succeeded, concrete.runs) == (2, 2)  # the two bookings that worked, merged
    assert concrete.workflow is not None
    assert (concrete.workflow.succeeded, concrete.workflow.runs) == (2, 2)


def test_the_way_a_task_was_solved_most_often_comes_first(mixed_kb: KnowledgeBase) -> None:
    results = mixed_kb.search("Hi, I need to cancel my basic economy flight and get my money back", domain="airline", k=6)
    first_way = results.hits[0]
    assert first_way.experience.kind == "abstract"  # the workflow, above the run that fits best
    assert [s.action for s in first_way.experience.steps] == ["get_user_details", "get_reservation_details"]
    assert first_way.breakdown.workflow is not None and first_way.path[0].relation.value == "ABSTRACTION"
    transfer = next(h for h in results.hits if "transfer_to_human_agents" in [s.action for s in h.experience.steps])
    # One success of four, and a handoff: it counts at handoff_credit (0.5) against the three refusals.
    assert transfer.breakdown.share == pytest.approx(0.5 / 3, abs=1e-6) and transfer.rank > first_way.rank
    assert transfer.breakdown.handed_off and transfer.breakdown.success == pytest.approx(0.5)


HANDOFF_TASK = "You want to cancel your reservation and get a refund because your trip was disrupted by a storm."
RESOLVED_TASK = "You want to cancel your reservation and get a refund because your trip was disrupted by bad weather."


@pytest.fixture
def handoff_kb(kb: KnowledgeBase, tmp_path: Path) -> KnowledgeBase:
    """Two near-identical tasks: one only ever handed off to a human, one resolved by refusing."""
    runs = [
        *(run(f"storm-transfer-{i}", HANDOFF_TASK, ["get_reservation_details", "transfer_to_human_agents"], True)
          for i in range(2)),
        *(run(f"weather-refuse-{i}", RESOLVED_TASK, ["get_user_details", "get_reservation_details"], True)
          for i in range(2)),
    ]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    kb.ingest([path])
    return kb


def test_a_way_that_resolved_a_task_like_this_outranks_a_handoff_of_equal_fit(handoff_kb: KnowledgeBase) -> None:
    query = "Hi, my trip was disrupted by the weather, I want to cancel my reservation and get a refund"
    hits = handoff_kb.search(query, domain="airline", k=4).hits
    assert "transfer_to_human_agents" not in [s.action for s in hits[0].experience.steps]
    handoff = next(h for h in hits if "transfer_to_human_agents" in [s.action for s in h.experience.steps])
    assert handoff.breakdown.handed_off and "hands the task to a human" in "\n".join(explain_score(handoff.breakdown))
    # handoff_credit = 1 counts a handoff as a full success: the two ways are then ranked by fit alone.
    plain = handoff_kb.search(query, domain="airline", k=4, weights={"handoff_credit": 1.0}).hits
    plain_handoff = next(h for h in plain if "transfer_to_human_agents" in [s.action for s in h.experience.steps])
    assert plain_handoff.breakdown.success == pytest.approx(1.0) and handoff.breakdown.success == pytest.approx(0.5)


def test_failed_attempts_are_matched_from_vectors_read_once_per_process(
    mixed_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    query = "I'd like to book a flight from New York to Seattle with my certificates"
    first = mixed_kb.search(query, domain="airline", k=5)
    asked: list[list[str]] = []
    read = mixed_kb.gateway.read

    def spy(name: str, **params: Any) -> list[dict[str, Any]]:
        if name == "experience_pg_vectors":
            asked.append(list(params["ids"]))
        return read(name, **params)

    monkeypatch.setattr(mixed_kb.gateway, "read", spy)
    again = mixed_kb.search(query, domain="airline", k=5)
    assert any(h.failed_attempts for h in again.hits)
    assert [h.failed_attempts for h in again.hits] == [h.failed_attempts for h in first.hits]
    abstract = {h.id for h in again.hits if h.experience.kind == "abstract"}
    # A concrete experience's vector never changes (its id is its content's hash); an abstract
    # one's follows its group, so only those are read again.
    assert all(set(ids) <= abstract for ids in asked)
