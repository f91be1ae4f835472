"""A statement record in words (ingest/wording.py): one sentence per kind, the same whenever the
record is the same, saying what was done and never how it went."""

from __future__ import annotations

from kbgraph.core.models import StatementRecord
from kbgraph.ingest.wording import sentence

ERROR = "payment amount does not add up, total price is # but paid #"


def recovery(**fields: object) -> StatementRecord:
    return StatementRecord.model_validate({"kind": "recovery", "operation": "book reservation", "error": ERROR,
                                           **fields}, strict=False)


def test_a_look_up_before_a_change_and_the_call_that_made_it() -> None:
    assert sentence(StatementRecord(kind="before", operation="cancel reservation", action="get_reservation_details")) \
        == "Before cancel reservation, get reservation details."
    assert sentence(StatementRecord(kind="how", operation="cancel reservation", action="cancel_reservation",
                                    arguments=("reservation_id",))) \
        == "To cancel reservation, call cancel_reservation with reservation_id."
    assert sentence(StatementRecord(kind="how", operation="think", action="think")) == "To think, call think with no arguments."


def test_an_error_and_what_the_agent_did_next() -> None:
    when = f"When book reservation fails with “{ERROR}”"
    assert sentence(recovery(recovery="retry", changed=[["payment_methods[].amount"]])) \
        == f"{when}, the agent retried it with changed payment_methods[].amount."
    assert sentence(recovery(recovery="retry", changed=[["a", "b", "c", "d", "e"]])) \
        == f"{when}, the agent retried it with changed a, b, c, d and more."
    assert sentence(recovery(recovery="retry")) == f"{when}, the agent retried it."
    assert sentence(recovery(recovery="repeat")) == f"{when}, the agent repeated it unchanged."
    assert sentence(recovery(recovery="switch", action="transfer_to_human_agents")) \
        == f"{when}, the agent switched to transfer to human agents."
    assert sentence(recovery(recovery="none")) == f"{when}, nothing was tried after it."


def test_retries_of_one_failure_say_each_variant_of_the_changed_arguments_once() -> None:
    merged = recovery(recovery="retry", merged=True, changed=[["payment_methods[].amount"], [],
                                                              ["payment_methods[].amount"], ["a", "b"]])
    assert sentence(merged) == (f"When book reservation fails with “{ERROR}”, the agent retried it with changed "
                                "arguments (payment_methods[].amount; a, b).")
    assert merged.retry_key() == ("book reservation", ERROR)
    assert recovery(recovery="repeat").retry_key() is None


def test_a_rule_and_a_lesson() -> None:
    rule = StatementRecord(kind="rule", operation="cancel reservation", text="Basic economy cannot be cancelled.")
    assert sentence(rule) == "Rule the agent applied: Basic economy cannot be cancelled."
    assert sentence(StatementRecord(kind="lesson", text="Check the window first.")) == "Check the window first."


def test_a_record_read_back_from_its_json_is_the_same_record() -> None:
    record = recovery(recovery="retry", merged=True, changed=[["a"], ["b", "c"]])
    assert StatementRecord.model_validate_json(record.model_dump_json(exclude_defaults=True)) == record
