"""Recoveries that teach: what the agent did next after a failed step — what changed and how, what
it called instead, what it thought — never a bare placeholder or a raw id; and the signature that
makes the same error on the same action one failure mode."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.recovery import THOUGHT_CHARS, ErrorSignature, argument_changes, error_signature, recovery_after, signed_error
from kbgraph.core.models import Trajectory
from tests.conftest import SHARED_DATA

REAL_RUNS = SHARED_DATA / "real_runs" / "airline_gpt4o.jsonl"
USER = {"name": {"first_name": "Mia", "last_name": "Li"}, "email": "mia.li3818@example.com",
        "payment_methods": {"certificate_4856383": {"source": "certificate", "amount": 100},
                            "certificate_7504069": {"source": "certificate", "amount": 250},
                            "credit_card_4421486": {"source": "credit_card", "last_four": "7447"}}}
PAYMENT_ERROR = "Error: payment amount does not add up, total price is 305, but paid 255"


def book(*payments: tuple[str, int], **extra: Any) -> dict[str, Any]:
    return {"user_id": "mia_li_3668", "cabin": "economy", "flights": [{"date": "2024-05-20", "flight_number": "HAT136"}],
            "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
            "payment_methods": [{"payment_id": p, "amount": a} for p, a in payments], **extra}


def run(steps: list[dict[str, Any]], success: bool = True) -> Trajectory:
    """A run that first reads the user (index 0), then takes ``steps`` (from index 1)."""
    return Trajectory.model_validate({"id": "r1", "task": "Book a flight", "steps": [
        {"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"}, "observation": json.dumps(USER)},
        *steps], "outcome": {"success": success}})


# ----------------------------------------------------------------------------- retries


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
    recovery = recovery_after(trajectory, 1)  # names and ids are read from the run when not given
    assert (recovery.kind, recovery.fix_index, recovery.action) == ("retry", 4, "book_reservation")
    assert recovery.recovered and recovery.run_succeeded and recovery.concrete
    assert [(c.path, c.before, c.after) for c in recovery.changes] == [("payment_methods[1].amount", "5", "55")]
    assert recovery.preparation == ("calculate 305 - 250 = 55",)
    assert recovery.thought == ("The total is $305 and the certificate pays $250, so {name}'s card must pay $55. "
                                "Passenger {name} agreed on May 20.")
    assert recovery.text == (
        "retried book reservation with payment_methods[1].amount: 5 → 55 after calculate 305 - 250 = 55 "
        f'(thought: "{recovery.thought}"); the run then succeeded')
    assert recovery_after(trajectory, 1, names_in_trajectory(trajectory), ids_in_trajectory(trajectory)) == recovery


def test_another_payment_method_is_shown_by_its_type_never_its_id() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("certificate_7504069", 305)),
         "error": "Error: payment method certificate_7504069 not found"},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 305))},
    ])
    recovery = recovery_after(trajectory, 1)
    assert [c.describe() for c in recovery.changes] == ["payment_methods[0].payment_id: certificate_… → credit_card_…"]
    assert recovery.concrete and "4421486" not in recovery.text and "7504069" not in recovery.text
    # Another id of the same type says so: "another certificate".
    same_type = run([
        {"action": "book_reservation", "arguments": book(("certificate_7504069", 305)), "error": "Error: not found"},
        {"action": "book_reservation", "arguments": book(("certificate_4856383", 305))},
    ])
    [change] = recovery_after(same_type, 1).changes
    assert change.describe() == "payment_methods[0].payment_id: another certificate_…"


def test_an_id_without_a_type_reads_another_and_a_person_s_id_prefix_is_never_shown() -> None:
    trajectory = run([
        {"action": "update_reservation", "arguments": {"reservation_id": "ABC123", "user_id": "mia_li_3668",
                                                       "email": "mia.li3818@example.com"},
         "error": "Error: reservation not found"},
        # Two user ids share "mia_li": a prefix shared by two ids, but a person's, never a type.
        {"action": "update_reservation", "arguments": {"reservation_id": "XYZ789", "user_id": "mia_li_1111",
                                                       "email": "mia@example.org"}},
    ])
    recovery = recovery_after(trajectory, 1)
    assert [c.describe() for c in recovery.changes] == [
        "email: another email", "reservation_id: another reservation_id", "user_id: another user_id"]
    assert not re.search(r"mia|ABC123|XYZ789|example", recovery.text, re.IGNORECASE)


def test_what_teaches_is_shown_and_what_identifies_is_not() -> None:
    before = {"cabin": "economy", "flights": [{"date": "2024-05-20", "time": "11am", "flight_number": "HAT136"}],
              "total_baggages": 1, "insurance": "no", "passengers": [{"first_name": "Mia", "dob": "1990-04-05"}]}
    after = {"cabin": "business", "flights": [{"date": "2024-05-21", "time": "3 pm", "flight_number": "HAT039"}],
             "total_baggages": 3, "insurance": "yes", "passengers": [{"first_name": "Noah", "dob": "1991-01-01"}]}
    described = [c.describe() for c in argument_changes(before, after, names={"Mia", "Noah"})]
    assert described == [
        "cabin: economy → business", "flights[0].date: 2024-05-20 → 2024-05-21",
        "flights[0].flight_number: another flight_number", "flights[0].time: 11am → 3 pm",
        "insurance: no → yes", "passengers[0].dob: another dob", "passengers[0].first_name: another first_name",
        "total_baggages: 1 → 3"]


def test_added_and_removed_arguments_and_the_cap_on_changes_listed() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("gift_card_8190333", 340)), "error": "Error: not enough balance"},
        {"action": "calculate", "arguments": {"expression": "340 - 280"}, "observation": "60.0"},
        {"action": "book_reservation", "arguments": book(("gift_card_8190333", 280), ("credit_card_4421486", 60))},
    ])
    recovery = recovery_after(trajectory, 1)
    assert [c.describe() for c in recovery.changes] == [
        "payment_methods[0].amount: 340 → 280", "payment_methods[1] added (amount: 60, payment_id: credit_card_…)"]
    many = run([
        {"action": "search", "arguments": {f"a{i}": i for i in range(8)}, "error": "Error: nothing found"},
        {"action": "search", "arguments": {f"a{i}": i + 1 for i in range(8)}},
    ])
    text = recovery_after(many, 1).text
    assert "a4: 4 → 5; and 3 more" in text and "a5" not in text


# ----------------------------------------------------------------------------- switches, repeats, nothing


def test_a_switch_names_the_call_it_switched_to_with_its_arguments() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 305)), "error": "Error: not enough seats"},
        {"action": "get_reservation_details", "arguments": {"reservation_id": "ABC123"}},
        {"action": "transfer_to_human_agents",
         "arguments": {"summary": "Mia Li (mia_li_3668) could not book: no seats left on HAT136. Please help her. "
                                 "She wants the 2024-05-20 flight in economy or nothing at all.",
                       "reservation_id": "ABC123"}},
    ], success=False)
    recovery = recovery_after(trajectory, 1)
    assert (recovery.kind, recovery.fix_index, recovery.recovered, recovery.concrete) == ("switch", 3, True, True)
    assert recovery.text == ('switched to transfer to human agents (reservation_id, summary: "{name} ({id}) could not '
                             'book: no seats left on {id}.") after get reservation details; the run still failed')


def test_a_switch_to_a_call_without_arguments_teaches_only_with_a_thought() -> None:
    bare = run([{"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
                {"action": "transfer_to_human_agents", "arguments": {}}], success=False)
    recovery = recovery_after(bare, 1)
    assert recovery.kind == "switch" and recovery.recovered and not recovery.concrete
    assert recovery.text == "switched to transfer to human agents; the run still failed"
    reasoned = run([{"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
                    {"action": "transfer_to_human_agents", "arguments": {},
                     "thought": "Booking keeps failing, so a human agent must take over."}], success=False)
    assert recovery_after(reasoned, 1).concrete
    failed_switch = run([{"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
                         {"action": "cancel_reservation", "arguments": {"reservation_id": "ABC123"},
                          "error": "Error: reservation ABC123 not found"}], success=False)
    recovery = recovery_after(failed_switch, 1)
    assert (recovery.recovered, recovery.got_past, recovery.concrete) == (False, False, False)
    assert recovery.text == ("switched to cancel reservation (reservation_id); it failed: reservation {id} not found; "
                             "the run still failed")


def test_another_change_before_the_same_call_again_is_the_fix() -> None:
    # Only look-ups, thinking and calculating prepare a fix; a state-changing call is itself one.
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 305)), "error": "Error: x"},
        {"action": "cancel_reservation", "arguments": {"reservation_id": "ABC123"}},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 300))},
    ])
    recovery = recovery_after(trajectory, 1)
    assert (recovery.kind, recovery.fix_index, recovery.switched_to) == ("switch", 2, "cancel reservation (reservation_id)")


def test_a_failed_look_up_is_fixed_by_the_next_look_up() -> None:
    trajectory = run([
        {"action": "find_user_id_by_email", "arguments": {"email": "mia@example.com"}, "error": "UserNotFound: no user"},
        {"action": "find_user_id_by_name_zip", "arguments": {"first_name": "Mia", "last_name": "Li", "zip": "10001"},
         "observation": "mia_li_3668"},
    ])
    recovery = recovery_after(trajectory, 1)
    assert recovery.kind == "switch" and recovery.recovered
    assert recovery.switched_to == "find user id by name zip (first_name, last_name, zip)"


def test_a_repeat_is_concrete_only_when_it_went_through_with_a_thought() -> None:
    unchanged = [{"action": "get_order", "arguments": {"order_id": "#W1"}, "error": "Gateway timeout"},
                 {"action": "get_order", "arguments": {"order_id": "#W1"}}]
    recovery = recovery_after(run(unchanged), 1)
    assert (recovery.kind, recovery.recovered, recovery.concrete) == ("repeat", True, False)
    assert recovery.text == "repeated get order unchanged; the run then succeeded"
    unchanged[1]["thought"] = "The backend timed out; trying the same call once more."
    assert recovery_after(run(unchanged), 1).concrete


def test_nothing_after_the_error_or_only_look_ups_is_none() -> None:
    ended = run([{"action": "book_reservation", "arguments": {}, "error": "Error: x"}], success=False)
    recovery = recovery_after(ended, 1)
    assert (recovery.kind, recovery.fix_index, recovery.concrete) == ("none", None, False)
    assert recovery.text == "nothing was tried after this error; the run failed"
    looked = run([{"action": "book_reservation", "arguments": {}, "error": "Error: x"},
                  {"action": "think", "arguments": {"thought": "The fare must include a fee."}},
                  {"action": "calculate", "arguments": {"expression": "2 * 150"}, "observation": "300"},
                  {"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}], success=False)
    assert recovery_after(looked, 1).text == (
        'nothing was tried after this error, only calculate 2 * 150 = 300, get user details '
        '(thought: "The fare must include a fee."); the run failed')


# ----------------------------------------------------------------------------- fixes that failed


def test_a_fix_that_failed_the_same_way_says_so_and_the_next_failure_has_its_own_recovery() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 255)), "error": PAYMENT_ERROR},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 255)), "error": PAYMENT_ERROR},
        {"action": "book_reservation", "arguments": book(("credit_card_4421486", 305))},
    ], success=False)
    first, second = recovery_after(trajectory, 1), recovery_after(trajectory, 2)
    assert (first.kind, first.fix_index, first.recovered, first.fix_failed_same_way) == ("repeat", 2, False, True)
    assert not first.concrete and not first.got_past
    assert first.text == "repeated book reservation unchanged; it failed again; the run still failed"
    assert (second.kind, second.fix_index, second.recovered, second.concrete) == ("retry", 3, True, True)


def test_a_fix_that_got_past_the_error_into_another_one_says_which() -> None:
    trajectory = run([
        {"action": "update_reservation_flights", "arguments": {"payment_id": "credit_card_1", "cabin": "economy"},
         "error": "Error: payment method not found"},
        {"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"}},
        {"action": "update_reservation_flights", "arguments": {"payment_id": "certificate_7504069", "cabin": "economy"},
         "error": "Error: certificate cannot be used to update reservation"},
        {"action": "update_reservation_flights", "arguments": {"payment_id": "credit_card_4421486", "cabin": "economy"}},
    ])
    recovery = recovery_after(trajectory, 1)
    assert (recovery.fix_index, recovery.recovered, recovery.fix_failed_same_way, recovery.got_past) == (
        3, False, False, True)
    assert recovery.fix_error == "certificate cannot be used to update reservation"
    assert recovery.text == (
        "retried update reservation flights with payment_id: credit_card_… → certificate_… after get user details; "
        "it got past this error but failed with: certificate cannot be used to update reservation; "
        "the run then succeeded")


# ----------------------------------------------------------------------------- thoughts


def test_the_thought_comes_from_think_steps_and_the_steps_thought_up_to_the_fix() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x",
         "thought": "I will book it now."},  # before the failed call: not a reaction to its error
        {"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"},
         "thought": "The amount was wrong; Mia's fare is $305."},
        {"action": "book_reservation", "arguments": {"amount": 305}, "thought": "I'm sorry for the wait. Booking again."},
        {"action": "think", "arguments": {"thought": "After the fix: not part of it."}},
    ])
    assert recovery_after(trajectory, 1).thought == "The amount was wrong; {name}'s fare is $305. Booking again."
    from_think = run([{"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
                      {"action": "think", "arguments": {"thought": "Use the $250 certificate first."}},
                      {"action": "book_reservation", "arguments": {"amount": 2}}])
    assert recovery_after(from_think, 1).thought == "Use the $250 certificate first."


def test_long_thoughts_are_cut_at_a_sentence_and_blank_ones_are_absent() -> None:
    long_thought = "The fare is $300 on 2024-05-20 at 11am. " * 40
    trajectory = run([
        {"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
        {"action": "think", "arguments": {"thought": "  "}},
        {"action": "think", "arguments": {"thought": long_thought}},
        {"action": "book_reservation", "arguments": {"amount": 2}},
    ])
    thought = recovery_after(trajectory, 1).thought
    assert thought is not None and len(thought) <= THOUGHT_CHARS and thought.endswith("at 11am.")
    one_long_sentence = run([
        {"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
        {"action": "book_reservation", "arguments": {"amount": 2}, "thought": "word " * 200},
    ])
    cut = recovery_after(one_long_sentence, 1).thought
    assert cut is not None and len(cut) <= THOUGHT_CHARS and cut.endswith("word…")
    blank = run([{"action": "book_reservation", "arguments": {"amount": 1}, "error": "Error: x"},
                 {"action": "think", "arguments": {"thought": " \n "}},
                 {"action": "book_reservation", "arguments": {"amount": 1}}])
    recovery = recovery_after(blank, 1)
    assert recovery.thought is None and "thought" not in recovery.text and "{" not in recovery.text


# ----------------------------------------------------------------------------- odd data


def test_odd_arguments_and_results_never_crash_and_json_in_strings_is_read() -> None:
    trajectory = run([
        {"action": "book_reservation", "arguments": "{not json", "error": "Error: bad arguments"},
        {"action": "book_reservation", "arguments": {"flights": [None, [1, 2], {"a": None}], "note": None,
                                                     "deep": [[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]], "ratio": float("nan")}},
        {"action": "book_reservation",
         "arguments": {"flights": "[{\"flight_number\": \"HAT136\", \"date\": \"2024-05-20\"}]"},
         "error": "Error: again"},
        {"action": "calculate", "arguments": {"expression": ["not", "text"]}, "observation": "{\"truncated\": "},
        {"action": "book_reservation",
         "arguments": {"flights": [{"flight_number": "HAT136", "date": "2024-05-21"}], "think": {"x": 1}}},
    ])
    first = recovery_after(trajectory, 1)
    assert first.kind == "retry" and first.changes and "{not json" in first.text
    later = recovery_after(trajectory, 3)
    assert [c.describe() for c in later.changes] == [
        "flights[0].date: 2024-05-20 → 2024-05-21", "think added (x: 1)"]
    assert later.preparation == ("calculate = {\"truncated\":",) and "HAT136" not in later.text
    with pytest.raises(IndexError):
        recovery_after(trajectory, 9)


# ----------------------------------------------------------------------------- signatures


def test_the_same_error_on_the_same_action_has_one_signature() -> None:
    assert error_signature("book_reservation", PAYMENT_ERROR) == (
        "book_reservation|error: payment amount does not add up, total price is # but paid #")
    assert error_signature("book_reservation", PAYMENT_ERROR) == error_signature(
        "book_reservation", "Error:  payment amount does not add up, total price is 1,002, but paid 957.50")
    assert error_signature("book_reservation", "Error: payment method certificate_7504069 not found") == error_signature(
        "book_reservation", "Error: payment method certificate_4856383 not found")
    assert error_signature("x", "No user 'mia@example.com' (#W123, HAT136)") == error_signature(
        "x", "no user \"noah@example.org\" (#W9, HAT001)")
    assert error_signature("update_reservation_flights", PAYMENT_ERROR) != error_signature("book_reservation", PAYMENT_ERROR)


def test_a_signature_is_its_action_and_masked_error_as_data_and_its_key_joins_them() -> None:
    signed = signed_error("Book_Reservation ", PAYMENT_ERROR)
    assert signed == ErrorSignature("book_reservation", "error: payment amount does not add up, total price is # but paid #")
    assert signed.key == error_signature("Book_Reservation ", PAYMENT_ERROR)


def test_a_stored_signature_is_its_stored_parts_and_only_one_stored_before_them_is_read_from_its_key() -> None:
    assert ErrorSignature.stored("cancel_reservation", "a|b", "ignored|x") == ErrorSignature("cancel_reservation", "a|b")
    assert ErrorSignature.stored(None, None, "cancel_reservation|error: a|b") == ErrorSignature("cancel_reservation",
                                                                                               "error: a|b")
    assert ErrorSignature.stored(None, None, None) is None and ErrorSignature.stored(None, None, "no key") is None


# ----------------------------------------------------------------------------- the real runs


def _raw_values(trajectory: Trajectory) -> set[str]:
    """What must never appear in a recovery: the run's ids and codes, e-mails and names."""
    texts = [json.dumps(s.arguments) + (s.observation or "") + (s.error or "") for s in trajectory.steps]
    raw = {c for text in texts for c in re.findall(r"\b(?=\w*\d)(?=\w*[A-Za-z])\w{5,}\b", text)}
    raw |= {e for text in texts for e in re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text)}
    return raw | set(ids_in_trajectory(trajectory)) | set(names_in_trajectory(trajectory))


def _next_attempt_is_a_changed_retry_that_worked(trajectory: Trajectory, index: int) -> bool:
    failed = trajectory.steps[index]
    for step in trajectory.steps[index + 1:]:
        if step.action == failed.action:
            return step.error is None and step.arguments != failed.arguments
        if step.action not in ("think", "calculate") and not step.action.startswith(("get_", "search_", "list_")):
            return False
    return False


def test_every_error_of_the_real_runs_gets_a_recovery_that_teaches() -> None:
    if not REAL_RUNS.is_file():
        pytest.skip(f"the real runs are not here: {REAL_RUNS}")
    kinds: Counter[str] = Counter()
    errors = recovered = concrete = concrete_then_success = in_successful_runs = 0
    for line in REAL_RUNS.read_text().splitlines():
        trajectory = Trajectory.model_validate(json.loads(line))
        names, ids = names_in_trajectory(trajectory), ids_in_trajectory(trajectory)
        raw = _raw_values(trajectory)
        for index, step in enumerate(trajectory.steps):
            if not step.error:
                continue
            recovery = recovery_after(trajectory, index, names, ids)
            errors += 1
            kinds[recovery.kind] += 1
            recovered += recovery.recovered
            concrete += recovery.concrete
            concrete_then_success += recovery.concrete and recovery.run_succeeded
            in_successful_runs += trajectory.outcome.success
            text = recovery.text
            assert text.strip() and "{thought}" not in text and not re.fullmatch(r"\{\w+\}", text)
            leaked = [value for value in raw if re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text)]
            assert not leaked, f"{trajectory.id}#{index}: {leaked} in {text}"
            if _next_attempt_is_a_changed_retry_that_worked(trajectory, index):
                assert recovery.kind == "retry" and recovery.changes and recovery.concrete, text
    assert errors == sum(kinds.values()) > 0 and concrete > errors / 2
    print(f"\nreal runs: {errors} error steps ({in_successful_runs} in runs that succeeded); kinds {dict(kinds)}; "
          f"fix went through {recovered}; concrete {concrete}, concrete and the run then succeeded "
          f"{concrete_then_success}")
