"""Specification: the teacher counts in runs what the runs that hit an error class did next.

Pure functions, no database: :func:`next_action` names the form of a recovery (the arguments are
detail), :func:`class_evidence` counts the runs behind an error class — a run once, however often it
hit the error — and says it: how many reached their goal, what they did next, and apart from that,
in how many the call went through.
"""

from __future__ import annotations

import pytest

from kbgraph.core.models import StatementRecord
from kbgraph.search.teacher._next import (
    ANOTHER_CALL, HANDOVER, LOOK_UP, NO_CALL, REPEAT, RETRY, class_evidence, next_action,
)
from kbgraph.search.teacher._rows import GroupBest


def recovery(kind: str | None, to: str = "") -> StatementRecord | None:
    """What ingestion records of a run's recovery (``to``: the tool a switch called)."""
    if kind is None:
        return None
    return StatementRecord(kind="recovery", operation="update reservation flights", error="not enough seats on flight #",
                           recovery=kind, action=to)  # type: ignore[arg-type]


def member(run: str, kind: str, words: str, *, succeeded: bool, through: bool = True, to: str = "") -> GroupBest:
    return GroupBest(experience_id=f"e-{run}", problem="", goal="", domain="airline", failure_id=f"f-{run}-{kind}",
                     description="update reservation flights failed: not enough seats on flight {id}",
                     issue_type="error", recovery=words, step_order=0, recovery_kind=kind, record=recovery(kind, to),
                     looked_up=False, concrete=through, recovered=through, run_succeeded=succeeded, run_id=run,
                     worked=through and succeeded, score=0.9)


@pytest.mark.parametrize(("kind", "to", "looked_up", "form"), [
    ("retry", "", False, RETRY),
    ("repeat", "", False, REPEAT),
    ("switch", "transfer_to_human_agents", False, HANDOVER),
    ("switch", "escalate_to_support", True, HANDOVER),
    ("switch", "search_direct_flight", True, "switched to search direct flight"),
    # Moving money is not handing over to a person, whatever the tool's first word.
    ("switch", "transfer_funds", False, "switched to transfer funds"),
    ("none", "", True, LOOK_UP),
    ("none", "", False, NO_CALL),
    (None, "", None, "not recorded"),
])
def test_the_form_of_a_recovery_is_what_the_run_did_next_whatever_its_arguments(
    kind: str | None, to: str, looked_up: bool | None, form: str,
) -> None:
    assert next_action(kind, recovery(kind, to), looked_up) == form


def test_the_form_is_read_from_the_record_never_from_the_words() -> None:
    # Words a person (or an older kbgraph) wrote say one thing; the record says what was called.
    words = "switched to transfer to human agents (summary: \"no seats\"); the run then succeeded"
    record = recovery("switch", "search_direct_flight")
    assert next_action("switch", record) == "switched to search direct flight"
    assert member("r", "switch", words, succeeded=True, to="search_direct_flight").recovery == words
    # A failure mode stored before records were kept has its kind only (re-ingest to name the tool).
    assert next_action("switch", None) == ANOTHER_CALL
    assert next_action("none", None) == NO_CALL


def test_the_evidence_counts_runs_and_puts_what_led_to_the_goal_first() -> None:
    members = [
        *(member(f"failed-{n}", "retry", "retried update reservation flights with …; the run still failed",
                 succeeded=False) for n in range(5)),
        # One failed run hit the error twice and retried both times: it is one run.
        member("failed-0", "retry", "retried update reservation flights with …; the run still failed", succeeded=False),
        member("handed-1", "switch", "switched to transfer to human agents; the run then succeeded", succeeded=True,
               to="transfer_to_human_agents"),
        member("handed-2", "switch", "switched to transfer to human agents; the run then succeeded", succeeded=True,
               to="transfer_to_human_agents"),
        member("told", "none", "nothing was tried after this error; the run succeeded", succeeded=True, through=False),
    ]
    evidence = class_evidence(members)
    assert (evidence.runs, evidence.reached_goal, evidence.went_through, evidence.went_through_failed) == (8, 3, 7, 5)
    assert [(a.action, a.runs, a.reached_goal, a.went_through) for a in evidence.actions] == [
        (HANDOVER, 2, 2, 2), (NO_CALL, 1, 1, 0), (RETRY, 5, 0, 5)]
    assert evidence.reached(HANDOVER) == 2 and evidence.reached(RETRY) == 0 and evidence.reached("other") == 0
    assert evidence.headline == ("after this error, 3 of 8 runs reached their goal; what they did next: "
                                 f"{HANDOVER} (2 runs), {NO_CALL} (1 run)")
    # That the call went through is a second fact, and the form that only did that is named there.
    assert evidence.second_fact == ("the next call went through in 7 of 8 runs (5 of them still failed; in runs that "
                                    f"still failed only: {RETRY} (5 runs))")


def test_no_run_reached_its_goal_is_said_in_numbers_too() -> None:
    evidence = class_evidence([member("a", "retry", "retried …", succeeded=False)])
    assert evidence.headline == "after this error, 0 of 1 run reached their goal"
    assert class_evidence([]).headline == "no run of this memory hit this error"
