"""Recoveries that teach: what the agent did next that made a failed step work, never a bare
placeholder; and the signature that makes the same error on the same action one failure mode."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from kbgraph.ingest.generalise import ids_in_trajectory, names_in_trajectory
from kbgraph.ingest.recovery import error_signature, recovery_after
from kbgraph.models import Trajectory
from tests.conftest import SHARED_DATA

REAL_RUNS = SHARED_DATA / "real_runs" / "airline_gpt4o.jsonl"
USER = {"name": {"first_name": "Mia", "last_name": "Li"},
        "payment_methods": {"certificate_4856383": {"source": "certificate", "amount": 100},
                            "certificate_7504069": {"source": "certificate", "amount": 250},
                            "credit_card_4421486": {"source": "credit_card"}}}


def book(*payments: tuple[str, int], **extra: Any) -> dict[str, Any]:
    return {"user_id": "mia_li_3668", "cabin": "economy", "flights": [{"date": "2024-05-20", "flight_number": "HAT136"}],
            "payment_methods": [{"payment_id": p, "amount": a} for p, a in payments], **extra}


def run(steps: list[dict[str, Any]], success: bool = True) -> Trajectory:
    return Trajectory.model_validate({"id": "r1", "task": "Book a flight", "steps": [
        {"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"}, "observation": json.dumps(USER)},
        *steps], "outcome": {"success": success}})


PAYMENT_ERROR = "Error: payment amount does not add up, total price is 305, but paid 255"


def test_a_retry_with_a_recomputed_amount_says_what_changed_how_and_why() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("certificate_7504069", 250), ("credit_card_4421486", 5)),
         "error": PAYMENT_ERROR},
        {"action": "think", "arguments": {"thought": "The total is $305 and the certificate pays $250, so Mia's card "
                                                     "must pay $55. Passenger Mia Li agreed on May 20."}},
        {"action": "calculate", "arguments": {"expression": "305 - 250"}, "observation": "55.0"},
        {"action": "book_reservation", "arguments": book(("certificate_7504069", 250), ("credit_card_4421486", 55)),
         "observation": "{\"reservation_id\": \"HATHAT\"}"},
    ])
    names = names_in_trajectory(trajectory)
    recovery = recovery_after(trajectory, 1, names, ids_in_trajectory(trajectory))
    assert recovery.kind == "retry" and recovery.recovered and recovery.run_succeeded and recovery.concrete
    assert [c.describe() for c in recovery.changes] == ["payment_methods[1].amount: 5 → 55"]
    assert recovery.preparation == ("calculate 305 - 250 = 55.0",)
    assert recovery.thought == ("The total is $305 and the certificate pays $250, so {name}'s card must pay $55. "
                                "Passenger {name} agreed on May 20.")
    assert recovery.text.startswith("retried book reservation with payment_methods[1].amount: 5 → 55 after calculate")
    assert recovery.text.endswith("; the run then succeeded")


def test_another_payment_method_is_shown_by_its_type_never_its_id() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("certificate_7504069", 305)),
         "error": "Error: payment method certificate_7504069 not found"},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 305))},
    ])
    recovery = recovery_after(trajectory, 1)
    assert [c.describe() for c in recovery.changes] == ["payment_methods[0].payment_id: certificate_… → credit_card_…"]
    assert "4421486" not in recovery.text and "7504069" not in recovery.text


def test_an_id_without_a_type_reads_another_and_a_user_id_prefix_is_never_shown() -> None:
    trajectory = run([
        {"action": "update_reservation", "arguments": {"reservation_id": "ABC123", "user_id": "mia_li_3668"},
         "error": "Error: reservation not found"},
        {"action": "update_reservation", "arguments": {"reservation_id": "XYZ789", "user_id": "noah_lee_1111"}},
    ])
    text = recovery_after(trajectory, 1).text
    assert "reservation_id: one reservation_id → another reservation_id" in text
    assert "user_id: one user_id → another user_id" in text and "mia_li" not in text and "noah" not in text


def test_a_switch_names_the_call_it_switched_to() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 305)), "error": "Error: not enough seats"},
        {"action": "transfer_to_human_agents", "arguments": {"summary": "no seats"}},
    ], success=False)
    recovery = recovery_after(trajectory, 1)
    assert recovery.kind == "switch" and recovery.concrete
    assert recovery.text == "switched to transfer to human agents (summary=no seats); the run still failed"


def test_a_repeat_without_a_thought_is_not_concrete_and_a_failed_fix_says_so() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 255)), "error": PAYMENT_ERROR},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 255)), "error": PAYMENT_ERROR},
    ], success=False)
    recovery = recovery_after(trajectory, 1)
    assert recovery.kind == "repeat" and not recovery.recovered and not recovery.concrete
    assert recovery.text == "repeated book reservation unchanged, which failed too; the run still failed"


def test_failed_retries_are_read_past_to_the_call_that_went_through() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 255)), "error": PAYMENT_ERROR},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 255)), "error": PAYMENT_ERROR,
         "thought": "Let me try again."},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 305))},
    ])
    recovery = recovery_after(trajectory, 1)
    assert recovery.kind == "retry" and recovery.failed_retries == 1 and recovery.thought == "Let me try again."
    assert "(after 1 more failed try)" in recovery.text


def test_nothing_after_the_error_and_long_or_blank_thoughts() -> None:
    trajectory = run([{"action": "book_reservation", "arguments": {}, "error": "Error: x"}], success=False)
    assert recovery_after(trajectory, 1).text == "nothing was tried after this error; the run failed"
    long_thought = "The fare is $300. " * 40
    trajectory = run([
        {"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
        {"action": "think", "arguments": {"thought": "  "}},
        {"action": "think", "arguments": {"thought": long_thought}},
        {"action": "book_reservation", "arguments": {"amount": 2}},
    ])
    thought = recovery_after(trajectory, 1).thought
    assert thought is not None and len(thought) <= 300 and thought.endswith("$300.") and "{thought}" not in thought


def test_odd_arguments_never_crash() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": "{not json", "error": "Error: bad arguments"},
        {"action": "book_reservation", "arguments": {"flights": [None, [1, 2], {"a": None}], "note": None}},
    ])
    recovery = recovery_after(trajectory, 1)
    assert recovery.kind == "retry" and recovery.changes


def test_the_same_error_on_the_same_action_has_one_signature() -> None:
    assert error_signature("book_reservation", PAYMENT_ERROR) == error_signature(
        "book_reservation", "Error: payment amount does not add up, total price is 1002, but paid 957")
    assert error_signature("book_reservation", "Error: payment method certificate_7504069 not found") == error_signature(
        "book_reservation", "Error: payment method certificate_4856383 not found")
    assert error_signature("update_reservation_flights", PAYMENT_ERROR) != error_signature("book_reservation", PAYMENT_ERROR)


def test_every_error_of_the_real_runs_gets_a_recovery_that_teaches() -> None:
    if not REAL_RUNS.is_file():
        pytest.skip(f"the real runs are not here: {REAL_RUNS}")
    kinds: Counter[str] = Counter()
    concrete = followed_by_success = 0
    for line in REAL_RUNS.read_text().splitlines():
        trajectory = Trajectory.model_validate(json.loads(line))
        names, ids = names_in_trajectory(trajectory), ids_in_trajectory(trajectory)
        codes = {c for s in trajectory.steps for c in re.findall(r"\b(?=\w*\d)(?=\w*[A-Za-z])\w{5,}\b", json.dumps(s.arguments))}
        for index, step in enumerate(trajectory.steps):
            if not step.error:
                continue
            recovery = recovery_after(trajectory, index, names, ids)
            kinds[recovery.kind] += 1
            concrete += recovery.concrete
            followed_by_success += recovery.concrete and recovery.run_succeeded
            assert "{thought}" not in recovery.text and recovery.text.strip()
            assert not [c for c in codes if c in recovery.text], f"{trajectory.id}: a raw id in {recovery.text}"
            assert not [n for n in names if re.search(rf"\b{re.escape(n)}\b", recovery.text)], recovery.text
            later = [s for s in trajectory.steps[index + 1:] if s.action == step.action]
            if later and not later[-1].error and later[-1].arguments != step.arguments:
                assert recovery.kind == "retry" and recovery.changes, recovery.text
    assert sum(kinds.values()) == 21 and concrete >= 15
    print(f"\n{sum(kinds.values())} error steps: {dict(kinds)}; concrete {concrete}, "
          f"concrete and followed by a run that succeeded {followed_by_success}")
