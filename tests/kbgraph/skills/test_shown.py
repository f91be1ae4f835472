"""What a skill shows of its document's pitfalls (kbgraph/skills/shown.py document_warnings): read
from the statements' records — their kind, operation and error class — and the records of the
failure modes the skill lists, never from the words of a statement."""

from __future__ import annotations

from kbgraph.core.models import StatementRecord
from kbgraph.core.recovery import ErrorSignature
from kbgraph.ingest.integrate import sentence_key
from kbgraph.ingest.integrate_evidence import Evidence, Statement
from kbgraph.ingest.wording import sentence
from kbgraph.skills.plan import ConceptDoc, FailureRow, Member, PlannedSkill, group_workflows, plan_skills
from kbgraph.skills.shown import about_own_actions, document_warnings, pitfall_groups

ACTIONS = ("get_reservation_details", "update_reservation_flights", "cancel_reservation")


def said(record: StatementRecord) -> Statement:
    """A pitfall of the document, as the reflector's record words it (one run, which succeeded)."""
    one = frozenset({"a-r"})
    return Statement("pitfalls", "airline", sentence(record), Evidence(one, frozenset({"t"}), one),
                     (sentence_key(sentence(record)),), record)


def cancel_skill(*statements: Statement) -> PlannedSkill:
    members = [Member(id=id, problem="Cancel my reservation, please.", domain="airline", actions=ACTIONS,
                      operations=ACTIONS[1:], task_key=id, source_ids=(f"{id}-r",), failed_source_ids=frozenset(),
                      meta_ids=("m",)) for id in ("a", "b")]
    concept = ConceptDoc("m", "cancel reservation", 1, statements)
    [skill] = plan_skills([concept], group_workflows(members), min_runs=1).skills
    return skill


def failure(error: str, record: StatementRecord | None) -> FailureRow:
    """A failure mode of the skill's cancel_reservation, its signature worded unlike its record."""
    return FailureRow(experience_id="a", id="fm-a", description=error, action="cancel_reservation",
                      signed=ErrorSignature("cancel_reservation", f"error: {error.upper()}"), recovery="", recovery_kind="repeat",
                      recovered=False, concrete=False, run_id="a-r", run_succeeded=True, step_order=2,
                      record=record)


def recovery(operation: str, error: str) -> StatementRecord:
    return StatementRecord(kind="recovery", operation=operation, error=error, recovery="repeat")


LISTED = recovery("cancel reservation", "reservation # is basic economy")
OTHER_ERROR = recovery("cancel reservation", "reservation # has already been flown")
# Its error's words name a cancellation, but the record says it is an error of changing flights.
OTHER_OPERATION = recovery("update reservation flights", "the reservation cannot be cancelled")
RULE = StatementRecord(kind="rule", operation="cancel reservation", text="Flights cannot be changed after departure.")
OTHER_RULE = StatementRecord(kind="rule", operation="update reservation flights", text="Cancelled flights stay paid.")


def test_a_document_pitfall_is_shown_when_its_record_is_about_an_own_action_and_no_listed_error() -> None:
    statements = [said(r) for r in (LISTED, OTHER_ERROR, OTHER_OPERATION, RULE, OTHER_RULE)]
    skill = cancel_skill(*statements)
    groups = pitfall_groups([failure("reservation 7 is basic economy", LISTED)])
    assert [s.said for s in document_warnings(skill, groups)] == [OTHER_ERROR, RULE]


def test_a_listed_error_without_a_record_hides_no_statement() -> None:
    # A failure mode stored before records were kept says no error class: nothing is taken for it.
    skill = cancel_skill(said(LISTED))
    groups = pitfall_groups([failure("reservation 7 is basic economy", None)])
    assert [s.said for s in document_warnings(skill, groups)] == [LISTED]


def test_a_rule_is_about_its_records_operation_and_a_free_lesson_about_what_its_words_name() -> None:
    own = frozenset(ACTIONS)
    assert about_own_actions(RULE, own) and not about_own_actions(OTHER_RULE, frozenset({"cancel_reservation"}))
    assert about_own_actions(StatementRecord(kind="lesson", text="Cancel only after the user confirms."),
                             frozenset({"cancel_reservation"}))
    assert not about_own_actions(StatementRecord(kind="lesson", text="Book the flight again."),
                                 frozenset({"cancel_reservation"}))
    assert about_own_actions(StatementRecord(kind="lesson", text="Read the policy first."), frozenset())


def test_a_pitfall_is_grouped_by_its_signatures_parts_as_stored() -> None:
    [group] = pitfall_groups([failure("reservation 7 is basic economy", None)])
    assert (group.action, group.error) == ("cancel_reservation", "RESERVATION 7 IS BASIC ECONOMY")
