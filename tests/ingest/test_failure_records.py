"""Every failure mode carries a record, whoever wrote it (ingest/failure_records.py): a ready-made
one gets one from what it gives — its step's operation, its description as the error class, its
kind of recovery — in the rule path's shape, so the teacher and the audit read it alike."""

from __future__ import annotations

import json

from kbgraph.core.models import Experience, FailureMode, StatementRecord, Step, Trajectory
from kbgraph.ingest.abstract import RuleBasedAbstractor
from kbgraph.ingest.failure_records import given_record, with_records
from kbgraph.ingest.reflect import masked_error
from kbgraph.kb import KnowledgeBase
from tests.conftest import REAL_RUNS

STEPS = [Step(order=0, action="find_user_by_email", text="look the customer up by {email}"),
         Step(order=1, action="call_tool", tool="cancel_reservation", text="cancel {reservation_id}")]


def ready_made(*failures: FailureMode) -> Experience:
    return Experience(problem="A customer wants to cancel a reservation they no longer need.",
                      goal="The reservation is cancelled.", domain="airline", steps=STEPS,
                      failure_modes=list(failures), source_ids=["hand-written-1"])


def test_a_ready_made_failure_mode_gets_a_record_of_its_steps_operation_and_its_description() -> None:
    failure = FailureMode(description="Error: reservation ABC123 is basic economy, $120 not refundable.",
                          recovery="told the user", step_order=1, recovery_kind="none")
    record = given_record(failure, STEPS)
    assert record == StatementRecord(kind="recovery", operation="cancel reservation",
                                     error=masked_error(failure.description), recovery="none")
    assert "120" not in record.error and not record.error.lower().startswith("error")
    # Its own action, when it names one, is its operation; no step and no action: no operation.
    assert given_record(failure.model_copy(update={"action": "book_reservation"}), STEPS).operation == "book reservation"
    unplaced = given_record(FailureMode(description="the agent gave up"), STEPS)
    assert (unplaced.operation, unplaced.recovery) == ("", None)


def test_with_records_keeps_a_record_it_has_and_fills_those_without() -> None:
    rules = RuleBasedAbstractor().abstract(_first_errored_run()).failure_modes[0]
    given = FailureMode(description="the lookup returned nothing", step_order=0)
    experience = with_records(ready_made(rules, given))
    assert experience.failure_modes[0] == rules
    assert experience.failure_modes[1].record == given_record(given, STEPS)
    assert experience.key == ready_made(rules, given).key, "a record is no part of what an experience is"
    assert with_records(experience) is experience


def test_add_experiences_stores_a_record_on_every_failure_mode(kb: KnowledgeBase) -> None:
    failure = FailureMode(description="The reservation was basic economy.", step_order=1, recovery_kind="switch")
    [key] = kb.add_experiences([ready_made(failure)]).ids
    [row] = kb.gateway.read("skills_failure_modes", kb=kb.namespace, ids=[key])
    assert StatementRecord.model_validate_json(row["record"]) == given_record(failure, STEPS)


def _first_errored_run() -> Trajectory:
    for line in (REAL_RUNS / "airline_gpt4o.jsonl").read_text().splitlines():
        run = json.loads(line)
        if any(s.get("error") for s in run["steps"]):
            return Trajectory.model_validate(run)
    raise AssertionError(f"no errored run in {REAL_RUNS}")


def test_a_failure_mode_of_a_run_carries_its_signatures_parts_and_the_store_keeps_them(kb: KnowledgeBase) -> None:
    rules = RuleBasedAbstractor().abstract(_first_errored_run())
    failure = rules.failure_modes[0]
    assert failure.signature == f"{failure.signature_action}|{failure.signature_error}"
    assert "signature_action" not in failure.model_dump(), "the parts say again what signature says"
    [key] = kb.add_experiences([rules]).ids
    [row] = [r for r in kb.gateway.read("skills_failure_modes", kb=kb.namespace, ids=[key])
             if r["step_order"] == failure.step_order]
    assert (row["signature_action"], row["signature_error"]) == (failure.signature_action, failure.signature_error)
