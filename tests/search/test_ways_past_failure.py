"""Traversal's ALTERNATIVE way past a failed step (search/student/graph.py, ``ways_past_failure``),
on a real Neo4j with the real MiniLM: when the query's last executed step failed, the runs that
failed the same way are reached from that failure and ranked by how well they got past it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.results import SearchHit, SearchResults

NOT_FOUND = "Error: payment method not found"


def _step(action: str, error: str | None = None, **arguments: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"action": action, "arguments": arguments}
    if error:
        step["error"] = error
    return step


def _run(run_id: str, task: str, steps: list[dict[str, Any]], success: bool) -> dict[str, Any]:
    return {"id": run_id, "source": "test", "domain": "airline", "task": task, "steps": steps,
            "outcome": {"success": success}}


RUNS = [
    # Got past "payment method not found" by reading the profile's payment methods; it worked.
    _run("recovered", "Upgrade reservation ABC123 to business class with the card ending 1234.", [
        _step("get_reservation_details", reservation_id="ABC123"),
        _step("update_reservation_flights", NOT_FOUND, reservation_id="ABC123", payment_id="credit_card_1234"),
        _step("get_user_details", user_id="ana_lee_1"),
        _step("update_reservation_flights", reservation_id="ABC123", payment_id="credit_card_9911"),
    ], True),
    # Got the same call through after the same failure, but the run failed in the end.
    _run("recovered_then_failed", "Downgrade my reservation QWE456 to economy and refund the difference.", [
        _step("update_reservation_flights", NOT_FOUND, reservation_id="QWE456", payment_id="gift_card"),
        _step("get_user_details", user_id="bo_kim_2"),
        _step("update_reservation_flights", reservation_id="QWE456", payment_id="gift_card_7001"),
    ], False),
    # Like the query in words, no failure: what direct retrieval finds first.
    _run("nonstop", "Change my flight on reservation XYZ789 to a nonstop flight on the same day.", [
        _step("get_reservation_details", reservation_id="XYZ789"),
        _step("search_direct_flight", origin="EWR", destination="LAX", date="2024-05-21"),
        _step("update_reservation_flights", reservation_id="XYZ789", payment_id="credit_card_5500"),
    ], True),
    _run("cancel", "Cancel reservation PLM321 and refund it to the original payment.", [
        _step("get_reservation_details", reservation_id="PLM321"),
        _step("cancel_reservation", reservation_id="PLM321"),
    ], True),
]

TASK = "Change the flight on reservation OWZ4XL to a nonstop on the same day."
FAILED = [_step("get_reservation_details", reservation_id="OWZ4XL"),
          _step("update_reservation_flights", NOT_FOUND, reservation_id="OWZ4XL", payment_id="credit_card_8555")]


@pytest.fixture
def runs_kb(kb: KnowledgeBase, tmp_path: Path) -> KnowledgeBase:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(run) + "\n" for run in RUNS), encoding="utf-8")
    kb.ingest([path])
    return kb


def _by_run(results: SearchResults) -> dict[str, SearchHit]:
    return {source: hit for hit in results.hits for source in hit.experience.source_ids}


def test_after_a_failed_step_the_run_that_got_past_the_same_failure_ranks_with_the_best_hit(
    runs_kb: KnowledgeBase,
) -> None:
    on = runs_kb.search(TASK, domain="airline", steps_so_far=FAILED, k=5, weights={"max_hops": 1})
    hits = _by_run(on)
    best_direct = max(h.breakdown.direct for h in on.hits)
    recovered = hits["recovered"]
    assert "edge:ALTERNATIVE" in recovered.found_by
    hop = recovered.path[0]
    assert (hop.relation.value, hop.weight) == ("ALTERNATIVE", 1.0) and hop.to_id == recovered.id
    assert "payment method not found" in hop.reason
    assert recovered.breakdown.path == pytest.approx(best_direct, abs=1e-5), "no decay from a seed: its own failure"
    assert recovered.id in on.ids()[:2]
    # The run that got the call through but then failed is reached at half that (effectiveness 0.5).
    assert hits["recovered_then_failed"].breakdown.path == pytest.approx(0.5 * best_direct, abs=1e-5)


def test_a_way_past_the_failure_is_scored_with_its_own_utility_not_the_best_hit_s_too(runs_kb: KnowledgeBase) -> None:
    # The best hit's feedback raises its own score, not the ways reached from the query's failure:
    # they are anchored on the best direct score before utility and then take their own.
    before = runs_kb.search(TASK, domain="airline", steps_so_far=FAILED, k=5, weights={"max_hops": 1})
    best = max((h for h in before.hits if h.breakdown.path is None), key=lambda h: h.breakdown.direct)
    with runs_kb.gateway.driver.session() as session:
        session.run("MATCH (e:Experience {kb: $kb, id: $id}) SET e.quality = 1.0",
                    kb=runs_kb.namespace, id=best.id).consume()
    after = runs_kb.search(TASK, domain="airline", steps_so_far=FAILED, k=5, weights={"max_hops": 1})
    raised = next(h for h in after.hits if h.id == best.id)
    assert raised.breakdown.utility_factor > 1 and raised.score > best.score
    for run in ("recovered", "recovered_then_failed"):
        assert _by_run(after)[run].breakdown.path == pytest.approx(_by_run(before)[run].breakdown.path, abs=1e-6)
        assert _by_run(after)[run].score == pytest.approx(_by_run(before)[run].score, abs=1e-6)


def test_traversal_off_leaves_the_run_that_got_past_the_failure_at_its_direct_score(runs_kb: KnowledgeBase) -> None:
    on = _by_run(runs_kb.search(TASK, domain="airline", steps_so_far=FAILED, k=5, weights={"max_hops": 1}))
    off = runs_kb.search(TASK, domain="airline", steps_so_far=FAILED, k=5, weights={"max_hops": 0})
    recovered = _by_run(off).get("recovered")
    assert recovered is None or (recovered.breakdown.path is None and recovered.score < on["recovered"].score)
    assert off.ids()[0] != on["recovered"].id


def test_a_query_whose_last_step_worked_takes_no_way_past_a_failure(runs_kb: KnowledgeBase) -> None:
    worked = [*FAILED[:-1], _step("update_reservation_flights", reservation_id="OWZ4XL", payment_id="credit_card_1")]
    results = runs_kb.search(TASK, domain="airline", steps_so_far=worked, k=5, weights={"max_hops": 1})
    assert not [h for h in results.hits for hop in h.path if hop.relation.value == "ALTERNATIVE"]
