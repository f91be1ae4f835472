"""Specification: the teacher hands back what led to success.

Among the failures of the query's error class (the same error, values masked, on any action), a
recovery from a run that then reached its goal ranks above every one whose run still failed —
whatever form it took (a retry, another tool, a handover) and even when the other only made the
call go through —, the form that led to the goal in the most runs first, before similarity breaks
ties; and every answer says it in the runs' numbers ("after this error, 2 of 7 runs reached their
goal; what they did next: …"). Real Neo4j, real MiniLM; each test writes a few hand-made
experiences whose failure modes carry what ingestion records.
"""

from __future__ import annotations

import pytest

from kbgraph.core.models import Experience, FailureMode, StatementRecord, Step
from kbgraph.core.recovery import ErrorSignature, error_signature, signed_error
from kbgraph.kb import KnowledgeBase
from kbgraph.search.teacher import ProblematicStep, TeacherRetriever, error_class

GIFT_CARD = "Error: gift card balance is not enough"
UNAVAILABLE = "503 Service Unavailable"


def failed_run(run: str, action: str, error: str, recovery: str, *, kind: str, recovered: bool, concrete: bool,
               succeeded: bool, domain: str = "airline", to: str = "") -> Experience:
    """One run whose call ``action`` failed with ``error``, recovered as ingestion would record it:
    ``recovery`` in words for people, and as a record (``to``: the tool a switch called)."""
    record = StatementRecord(kind="recovery", operation=action.replace("_", " "), error=error, recovery=kind,  # type: ignore[arg-type]
                             action=to)
    return Experience(
        problem=f"Customer request handled in run {run}", goal="Request handled", domain=domain,
        success_rate=1.0 if succeeded else 0.0, source_ids=[run],
        steps=[Step(action=action, text=f"{action} — failed: {error}")],
        failure_modes=[FailureMode(
            description=f"{action.replace('_', ' ')} failed: {error}", issue_type="error", recovery=recovery,
            step_order=0, action=action, signature=error_signature(action, error), recovery_kind=kind,  # type: ignore[arg-type]
            recovered=recovered, concrete=concrete, run_id=run, run_succeeded=succeeded, record=record,
        )],
    )


def refine(kb: KnowledgeBase, action: str, error: str, k: int = 5) -> list:  # type: ignore[type-arg]
    step = ProblematicStep(action=action, arguments={"payment_id": "gift_card_7"}, error=error)
    return TeacherRetriever(kb.gateway, kb.embedder, kb.namespace).refine([step], k=k).failures


def test_the_error_class_is_the_error_whatever_the_action_and_values() -> None:
    book = signed_error("book_reservation", "Error: payment method certificate_7504069 not found")
    change = signed_error("update_reservation_flights", "Error: payment method not found")
    assert error_class(book) == error_class(change) == "payment method not found"
    assert error_class(signed_error("get_order_details", "503 Service Unavailable")) == "service unavailable"
    assert error_class(signed_error("a", "Error: gift card balance is not enough.")) == GIFT_CARD[7:]
    # A message that names nothing, or no signature at all, has no class.
    assert error_class(signed_error("a", "Error: 404")) is None and error_class(None) is None


def test_the_error_class_is_read_from_the_signatures_parts_never_from_its_key() -> None:
    # An action whose name holds the key's separator: its key splits in the wrong place, its parts do not.
    piped = signed_error("lookup|pay", "Error: payment method not found")
    assert piped.key == "lookup|pay|error: payment method not found"
    assert error_class(piped) == "payment method not found"
    # A failure mode stored before the parts were kept has its key alone: read back once, where it is read.
    assert error_class(ErrorSignature.stored(None, None, "pay|error: card # declined")) == "card declined"


def test_a_recovery_followed_by_success_on_another_action_ranks_above_a_nearer_one_whose_run_failed(
    kb: KnowledgeBase,
) -> None:
    # The issue's case: the same error on the same action was recovered twice, but both runs still
    # failed; the same error when booking was recovered and that run succeeded.
    kb.add_experiences([
        failed_run(f"run-change-{n}", "update_reservation_flights", GIFT_CARD,
                   "retried update reservation flights with cabin: business → economy; the run still failed",
                   kind="retry", recovered=True, concrete=True, succeeded=False) for n in (1, 2)
    ] + [
        failed_run("run-book", "book_reservation", GIFT_CARD,
                   "retried book reservation with payment_methods[1] added (amount: 60, payment_id: credit_card_…); "
                   "the run then succeeded", kind="retry", recovered=True, concrete=True, succeeded=True),
        failed_run("run-other", "update_reservation_flights", "Error: flight HAT001 not available on 2024-05-20",
                   "switched to search direct flight; the run then succeeded",
                   kind="switch", to="search_direct_flight", recovered=True, concrete=True, succeeded=True),
    ])

    failures = refine(kb, "update_reservation_flights", GIFT_CARD)

    first, second, third = failures
    assert (first.run_id, first.same_class, first.run_succeeded, first.concrete) == ("run-book", True, True, True)
    # Identical failure modes stay one match, with their own counts.
    assert second.signature == error_signature("update_reservation_flights", GIFT_CARD)
    assert (second.same_class, second.seen, second.worked, second.run_succeeded) == (True, 2, 0, False)
    assert sorted(second.runs) == ["run-change-1", "run-change-2"]
    # Similarity did not decide: the failure on the same action is the nearer one.
    assert second.cosine > first.cosine
    # The evidence is counted over the class, on any action: retries followed it 3 times, once
    # the fix went through and the run then succeeded.
    assert (first.recovery_tried, first.recovery_worked) == (second.recovery_tried, second.recovery_worked) == (3, 1)
    assert (first.class_runs, first.class_reached_goal) == (second.class_runs, second.class_reached_goal) == (3, 1)
    assert first.headline == ("after this error, 1 of 3 runs reached their goal; what they did next: "
                              "retried the call with changed arguments (1 run)")
    assert first.summary.startswith(first.headline + ". Shown: retried the call with changed arguments, from a run "
                                    "that reached its goal. The next call went through in 3 of 3 runs")
    # Another error comes after every failure of the query's class, whatever its recovery.
    assert third.run_id == "run-other" and not third.same_class and third.error_class == "flight not available on"


def test_counted_evidence_orders_recoveries_that_did_not_work_before_similarity(kb: KnowledgeBase) -> None:
    # No match's own run succeeded after its fix. On this error a retry worked once elsewhere (a
    # retry that names nothing: not shown first), a switch never did: the retry ranks above the
    # switch although the switch failed on the very action asked about.
    kb.add_experiences([
        failed_run("run-switch", "update_reservation_flights", GIFT_CARD,
                   "switched to transfer to human agents; the run still failed",
                   kind="switch", to="transfer_to_human_agents", recovered=True, concrete=True, succeeded=False),
        failed_run("run-retry", "book_reservation", GIFT_CARD,
                   "retried book reservation with payment_methods[0].amount: 340 → 280; the run still failed",
                   kind="retry", recovered=True, concrete=True, succeeded=False),
        failed_run("run-bare-retry", "send_certificate", GIFT_CARD, "retried send certificate; the run then succeeded",
                   kind="retry", recovered=True, concrete=False, succeeded=True),
    ])

    failures = refine(kb, "update_reservation_flights", GIFT_CARD)

    assert [f.run_id for f in failures] == ["run-bare-retry", "run-retry", "run-switch"]
    assert [(f.recovery_kind, f.recovery_tried, f.recovery_worked) for f in failures] == [
        ("retry", 2, 1), ("retry", 2, 1), ("switch", 1, 0)]
    assert failures[2].cosine > failures[1].cosine
    assert failures[2].next_action == "handed over to a person"
    assert "it only made the call go through, the run still failed" in failures[2].summary


def test_a_transient_error_shows_the_call_repeated_unchanged_that_worked(kb: KnowledgeBase) -> None:
    # Retail runs with injected "503 Service Unavailable": the fix is the same call again.
    kb.add_experiences([
        failed_run(f"run-{n}", "get_order_details", UNAVAILABLE, "repeated get order details unchanged (thought: "
                   "\"The service was unavailable; I will try again.\"); the run then succeeded",
                   kind="repeat", recovered=True, concrete=True, succeeded=True, domain="retail") for n in range(3)
    ] + [
        failed_run("run-gave-up", "get_order_details", UNAVAILABLE,
                   "switched to transfer to human agents; the run still failed",
                   kind="switch", to="transfer_to_human_agents", recovered=True, concrete=True, succeeded=False, domain="retail"),
        failed_run("run-user", "get_user_details", "503 Service Unavailable",
                   "repeated get user details unchanged; it failed again; the run still failed",
                   kind="repeat", recovered=False, concrete=False, succeeded=False, domain="retail"),
    ])

    failures = refine(kb, "get_order_details", "503 Service Unavailable")

    first = failures[0]
    assert (first.recovery_kind, first.run_succeeded, first.seen, first.worked) == ("repeat", True, 4, 3)
    assert first.recovery.startswith("repeated get order details unchanged")
    assert (first.recovery_tried, first.recovery_worked) == (4, 3)
    assert first.headline == ("after this error, 3 of 5 runs reached their goal; what they did next: "
                              "repeated the call unchanged (3 runs)")
    assert failures[1].run_id == "run-user" and failures[1].same_class


NO_SEATS = "Error: not enough seats on flight HAT139"


def test_what_runs_that_reached_their_goal_did_next_ranks_above_a_retry_that_only_went_through(
    kb: KnowledgeBase,
) -> None:
    # The issue's case: on the very action asked about, five runs retried with changed arguments
    # and the call went through, yet every one of those runs failed; two other runs hit the same
    # error and handed over to a person, and reached their goal.
    kb.add_experiences([
        failed_run(f"run-retry-{n}", "update_reservation_flights", NO_SEATS,
                   "retried update reservation flights with flights[0].flight_number: another one; the run still failed",
                   kind="retry", recovered=True, concrete=True, succeeded=False) for n in range(5)
    ] + [
        failed_run(f"run-handover-{n}", "book_reservation", NO_SEATS,
                   'switched to transfer to human agents (summary: "no seats on the flight asked for"); '
                   "the run then succeeded", kind="switch", to="transfer_to_human_agents", recovered=True, concrete=True, succeeded=True)
        for n in range(2)
    ])

    first, second = refine(kb, "update_reservation_flights", NO_SEATS)

    assert (first.run_succeeded, first.next_action, first.recovery_kind) == (True, "handed over to a person", "switch")
    assert first.run_id in {"run-handover-0", "run-handover-1"}
    assert first.headline == "after this error, 2 of 7 runs reached their goal; what they did next: " \
                             "handed over to a person (2 runs)"
    assert [(a.action, a.runs, a.reached_goal, a.went_through) for a in first.next_actions] == [
        ("handed over to a person", 2, 2, 2), ("retried the call with changed arguments", 5, 0, 5)]
    # The retry that went through comes after, and says it only made the call go through.
    assert (second.run_succeeded, second.fix_recovered, second.seen) == (False, True, 5)
    assert second.cosine > first.cosine, "similarity did not decide"
    assert "Shown: retried the call with changed arguments; it only made the call go through, the run still " \
           "failed" in second.summary
    assert "in runs that still failed only: retried the call with changed arguments (5 runs)" in second.summary


def test_among_runs_that_reached_their_goal_the_form_most_of_them_took_comes_first(kb: KnowledgeBase) -> None:
    # One group of identical failures: two runs reached their goal by a handover, one by a concrete
    # retry on the same call; the group shows the handover (most runs), the retry is counted.
    kb.add_experiences([
        failed_run(f"run-handover-{n}", "update_reservation_flights", NO_SEATS,
                   "switched to transfer to human agents; the run then succeeded",
                   kind="switch", to="transfer_to_human_agents", recovered=True, concrete=True, succeeded=True) for n in range(2)
    ] + [
        failed_run("run-retry", "update_reservation_flights", NO_SEATS,
                   "retried update reservation flights with cabin: economy → business; the run then succeeded",
                   kind="retry", recovered=True, concrete=True, succeeded=True),
    ])

    (only,) = refine(kb, "update_reservation_flights", NO_SEATS)

    assert only.next_action == "handed over to a person" and only.seen == 3
    assert only.headline == ("after this error, 3 of 3 runs reached their goal; what they did next: handed over to a "
                             "person (2 runs), retried the call with changed arguments (1 run)")


@pytest.mark.parametrize("excluded", [["run-book"], ["run-book", "run-change-1"]])
def test_left_out_runs_are_not_counted_as_evidence(kb: KnowledgeBase, excluded: list[str]) -> None:
    kb.add_experiences([
        failed_run("run-change-1", "update_reservation_flights", GIFT_CARD, "retried; the run still failed",
                   kind="retry", recovered=True, concrete=True, succeeded=False),
        failed_run("run-book", "book_reservation", GIFT_CARD, "retried; the run then succeeded",
                   kind="retry", recovered=True, concrete=True, succeeded=True),
        failed_run("run-book-2", "book_reservation", GIFT_CARD, "retried again; the run still failed",
                   kind="retry", recovered=True, concrete=True, succeeded=False),
    ])
    step = ProblematicStep(action="update_reservation_flights", error=GIFT_CARD)
    failures = TeacherRetriever(kb.gateway, kb.embedder, kb.namespace).refine([step], exclude_runs=excluded).failures
    assert {r for f in failures for r in f.runs}.isdisjoint(excluded)
    assert all((f.recovery_tried, f.recovery_worked) == (3 - len(excluded), 0) for f in failures)
