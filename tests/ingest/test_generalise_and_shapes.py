"""Generalisation turns concrete values into placeholders; shapes compare workflows."""

import pytest

from kbgraph.core.generalise import (
    describe_step,
    generalise_task,
    generalise_text,
    humanise_action,
    type_name,
)
from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.shapes import changes_state, dispatched_tool, is_subsequence, operations, verb_of, verb_shape
from kbgraph.core.models import Trajectory


def test_ids_emails_urls_and_codes_become_placeholders_and_amounts_and_counts_stay() -> None:
    text = "Return #W6067464 via credit_card_4190576 for jo@x.com, see https://a.b/c?d=1, refund $12.50 in 3 days"
    assert generalise_text(text) == "Return {id} via {id} for {email}, see {url}, refund $12.50 in 3 days"


@pytest.mark.parametrize("kept", [
    # times
    "after 11am and before 3pm", "departing after 8 am est", "at 10:30", "at 11:30 am", "not before 11 am est",
    "by 9 p.m.",
    # dates
    "on 2024-05-20", "on 5/20", "on May 20th", "on May 20", "on 05-20-2024", "on 05/20/2024", "in 2023-05",
    "from 01/2023 to 05/2023", "over 2020-2022", "born 1957-03-21",
    # amounts
    "pay $305", "up to $600", "12.5 dollars", "305 dollars", "$12.50", "$1,234.56", "1,000 dollars",
    # counts and small numbers
    "3 baggages", "two certificates", "2 checked bags", "1-2 days", "10-15 items", "the 3rd time",
    "your 7447 card", "order 1234",
    # cabins, measures, versions
    "in economy", "in basic economy or business", "a 65cm ball", "16GB of memory", "top-1 product in 2022",
    "a 50% refund", "a 43-year-old owner", "a 20mins walk", "sales in Q1 2022", "a PS4 game", "HTML5 docs",
    "seat 12A", "an IPX7 rating",
])
def test_what_carries_meaning_is_kept(kept: str) -> None:
    assert generalise_text(f"You want {kept}.") == f"You want {kept}."


@pytest.mark.parametrize(("text", "general"), [
    ("reservation SI5UKW and 59XX6W", "reservation {id} and {id}"),
    ("flight HAT136 at 11am", "flight {id} at 11am"),
    ("user mia_li_3668", "user {id}"),
    ("zip 19122, item 9624127908", "zip {number}, item {number}"),
    ("call 555-123-4567", "call {number}"),
    ("call +1 (555) 123-4567.", "call {number}."),
    ("call 555-1234", "call {number}"),
    ("ssn 123-45-6789, zip 19122-1234", "ssn {number}, zip {number}"),
    ("card 4111-1111-1111-1111 or 4111 1111 1111 1111", "card {number} or {number}"),
    ("user id 1234567", "user id {number}"),
    ("mail mia.li3818@example.com", "mail {email}"),
    ("see www.byteblaze.com", "see {url}"),
    # Codes without a digit are ids where the text says they are records.
    ("cancel reservations (IFOYYZ and NQNU5R)", "cancel reservations ({id} and {id})"),
    ("Your reservation ID is HXDUBJ.", "Your reservation ID is {id}."),
    ("(confirmation: JMOAMG)", "(confirmation: {id})"),
    ("cancel the reservation and get a REFUND", "cancel the reservation and get a REFUND"),
    ("user pandey2000 on a11yproject", "user {id} on {id}"),
])
def test_what_identifies_becomes_a_placeholder(text: str, general: str) -> None:
    assert generalise_text(text) == general


def test_names_and_ids_of_the_run_are_replaced_as_whole_words() -> None:
    text = "Remove Ethan Li from booking HXDUBJ; Ethanol and LIONS stay"
    assert generalise_text(text, names={"Ethan Li", "Ethan", "Li"}, ids={"HXDUBJ"}) == \
        "Remove {name} from booking {id}; Ethanol and LIONS stay"


def test_an_id_the_value_rules_know_keeps_its_own_placeholder() -> None:
    # An e-mail or phone the tools took as an identifier is still an e-mail or a phone number.
    text = "mail jo@x.com or call 617-555-0834"
    assert generalise_text(text, ids={"jo@x.com", "617-555-0834"}) == "mail {email} or call {number}"


def test_without_names_a_name_stays_and_the_one_argument_form_still_works() -> None:
    assert generalise_text("Ask Ethan Li for #W1") == "Ask Ethan Li for {id}"


@pytest.mark.parametrize(("task", "problem"), [
    ("You are mia_li_3668 and you want to fly after 11am.", "You want to fly after 11am."),
    ("You are  amelia_rossi_1297. You want to cancel SI5UKW.", "You want to cancel {id}."),
    ("You amelia_sanchez_4739 and you want a refund.", "You want a refund."),
    ("You are 'daiki_muller_1116'. You want two bags.", "You want two bags."),
    ("You are Sophia Silva (with ID: sophia_silva_7557), you want a refund.", "You want a refund."),
    ("You are Noah Muller (user id is noah_muller_9847). First, book a flight.", "First, book a flight."),
    ("You want to book a flight.", "You want to book a flight."),
])
def test_an_identity_clause_leaves_the_task(task: str, problem: str) -> None:
    trajectory = Trajectory(id="t", task=task)
    assert generalise_task(task, names_in_trajectory(trajectory)) == problem


def test_identity_clause_is_dropped_only_at_the_start() -> None:
    assert generalise_task("You want to tell agent you are mia_li_3668.") == "You want to tell agent you are {id}."
    assert generalise_task("You are mia_li_3668") == "You are {id}"  # nothing else to keep


def test_names_come_from_name_arguments_results_even_cut_and_self_introductions() -> None:
    trajectory = Trajectory.model_validate({"id": "t", "task": "You are Sophia Silva (with ID: s_1). Help.", "steps": [
        {"action": "book", "arguments": {"passengers": [{"first_name": "Amelia", "last_name": "Ahmed", "dob": "1957-03-21"}],
                                        "reservation_id": "HXDUBJ", "cabin": "economy"}},
        {"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"},
         "observation": '{"name": {"first_name": "Mia", "last_name": "Li"}, "saved_passengers": [{"first_name": "Ra'},
        {"action": "get_product", "arguments": {}, "observation": '{"name": "Electric Kettle"}'},
        {"action": "search", "arguments": {}, "observation": "not JSON at all"},
    ]})
    names = names_in_trajectory(trajectory)
    assert {"Amelia", "Ahmed", "Amelia Ahmed", "Mia", "Li", "Mia Li", "Sophia Silva", "Sophia", "Silva"} <= names
    assert "Electric Kettle" not in names  # a product's name is not a person's
    assert ids_in_trajectory(trajectory) == {"HXDUBJ", "mia_li_3668"}


def test_a_plain_name_is_a_persons_only_in_a_persons_record() -> None:
    trajectory = Trajectory.model_validate({"id": "t", "task": "Help.", "steps": [
        {"action": "log_verification", "arguments": {"name": "Wei Chen", "email": "wei@x.com", "user_id": "76ad9cc60e"}},
        {"action": "apply_for_credit_card", "arguments": {"customer_name": "Sarah Bosch", "card_type": "EcoCard"}},
        {"action": "search", "arguments": {"name": "Gold Rewards Card"}},
        {"action": "get_reservation", "arguments": {},
         "observation": '{"passengers": [{"name": "Noah Muller"}], "store": {"name": "Apple Store"}}'},
    ]})
    names = names_in_trajectory(trajectory)
    assert {"Wei Chen", "Sarah Bosch", "Noah Muller", "Noah"} <= names
    assert not names & {"Gold Rewards Card", "Gold", "Apple Store", "EcoCard"}
    assert ids_in_trajectory(trajectory) == {"wei@x.com", "76ad9cc60e"}  # a card's type is no id


@pytest.mark.parametrize("observation", [
    "", "not JSON at all", "Transfer successful", "Error: payment method not found", "null", "42", '"a string"',
    "[[[[", "}}}{{{", '{"first_name": ', '{"name": {"first_name": "Mia", "la', '{"a": ' * 5000,
    "[" * 100_000, '{"name": "' + "x" * 5000,
])
def test_results_that_are_not_json_or_are_cut_never_crash_name_collection(observation: str) -> None:
    trajectory = Trajectory.model_validate({"id": "t", "task": "Help.", "steps": [
        {"action": "get_user_details", "arguments": {}, "observation": observation or None}]})
    assert names_in_trajectory(trajectory) <= {"Mia"}


def test_a_result_cut_mid_json_still_gives_the_names_before_the_cut() -> None:
    observation = ('{"user_id": "mia_li_3668", "name": {"first_name": "Mia", "last_name": "Li"}, "email": "m@x.com", '
                   '"saved_passengers": [{"first_name": "Ethan", "last_name": "Garcia", "dob": "1990-01-0')
    trajectory = Trajectory.model_validate({"id": "t", "task": "Help.", "steps": [
        {"action": "get_user_details", "arguments": {"user_id": "mia_li_3668"}, "observation": observation}]})
    assert {"Mia Li", "Mia", "Li", "Ethan Garcia", "Ethan", "Garcia"} <= names_in_trajectory(trajectory)


@pytest.mark.parametrize(("task", "name"), [
    ("You are Sophia Silva (with ID: sophia_silva_7557), you want a refund.", "Sophia Silva"),
    ("My name is Ivan Rossi and I want a refund.", "Ivan Rossi"),
    ("I'm Lucas Brown. Cancel my flight.", "Lucas Brown"),
    ("**Your character:** Dmitri Volkov, a 43-year-old owner.", "Dmitri Volkov"),
    ("Your character is Kenji Tanaka, a customer.", "Kenji Tanaka"),
    ("- Name: Mei-Lin Chen | Phone: 619-555-0284", "Mei-Lin Chen"),
    ("- Your full name: Fatima Al-Hassan", "Fatima Al-Hassan"),
    ("Your character is a power plant worker named Marcus.", "Marcus"),
    ("You are Ahmad Razali bin Mohd Yusof.", "Ahmad Razali bin Mohd Yusof"),
])
def test_self_introductions_give_names(task: str, name: str) -> None:
    names = names_in_trajectory(Trajectory(id="t", task=task))
    assert name in names
    general = generalise_text(task, names)
    assert name not in general and "{name}" in general


@pytest.mark.parametrize("task", [
    "You are French by birth.", "You are NOT interested in fees.", "Create a new forum named Cyberpunk Club.",
    "This is FRAUD.", "You are reactive to the agent.",
])
def test_what_is_not_an_introduction_gives_no_name(task: str) -> None:
    assert names_in_trajectory(Trajectory(id="t", task=task)) == frozenset()


def test_name_parts_are_replaced_but_a_month_is_not_a_name() -> None:
    trajectory = Trajectory.model_validate({"id": "t", "task": "Help.", "steps": [
        {"action": "book", "arguments": {"passengers": [{"first_name": "May", "last_name": "Al-Hassan"}]}}]})
    names = names_in_trajectory(trajectory)
    text = "Add May Al-Hassan on May 20; Hassan and Al-Hassan travel."
    assert generalise_text(text, names) == "Add {name} on May 20; {name} and {name} travel."


def test_arguments_become_placeholders_named_after_the_argument() -> None:
    text = describe_step("find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"})
    assert text == "find user id by name zip (first_name={first_name}, last_name={last_name}, zip={zip})"
    assert describe_step("cancel_pending_order", {"order_id": "#W1", "reason": "ordered by mistake"}) == \
        "cancel pending order (order_id={order_id}, reason=ordered by mistake)"
    assert "[{item_id}, …]" in describe_step("return_items", {"item_ids": ["1", "2"]})


def test_types_and_names() -> None:
    values: tuple[object, ...] = (1, 1.5, "x", True, ["a"], {}, None)
    assert [type_name(v) for v in values] == [
        "integer", "number", "string", "boolean", "list[string]", "object", "null"]
    assert humanise_action("getOrderDetails") == "get order details"


def test_verb_shapes_let_different_tool_vocabularies_match() -> None:
    airline = ["get_user_details", "get_reservation_details", "cancel_reservation"]
    retail = ["find_user_id_by_email", "get_order_details", "cancel_pending_order"]
    assert verb_shape(airline) == verb_shape(retail) == ("lookup", "cancel")


def test_subsequence_means_in_order_with_gaps() -> None:
    assert is_subsequence(["a", "c"], ["a", "b", "c"])
    assert not is_subsequence(["c", "a"], ["a", "b", "c"])
    assert is_subsequence([], ["a"])


@pytest.mark.parametrize(("action", "arguments", "tool"), [
    ("call_discoverable_agent_tool", {"agent_tool_name": "close_debit_card_4721", "arguments": "{}"}, "close_debit_card"),
    ("call_discoverable_user_tool", {"discoverable_tool_name": "submit_cash_back_dispute_0589"}, "submit_cash_back_dispute"),
    ("call_tool", {"name": "refund_order", "arguments": {"order_id": "1"}}, "refund_order"),
    ("invoke_tool", {"tool": "weather.lookup"}, "weather.lookup"),
])
def test_a_generic_call_is_the_tool_it_names(action: str, arguments: dict[str, object], tool: str) -> None:
    assert dispatched_tool(action, arguments) == tool


@pytest.mark.parametrize(("action", "arguments"), [
    ("unlock_discoverable_agent_tool", {"agent_tool_name": "close_debit_card_4721"}),  # makes it available, calls nothing
    ("give_discoverable_user_tool", {"discoverable_tool_name": "submit_cash_back_dispute_0589"}),
    ("get_order_details", {"tool": "x"}),                       # not a call
    ("call_tool", {}),                                          # names no tool
    ("call_tool", {"tool": "a", "tool_name": "b"}),              # names two
    ("call_tool", {"tool": "close the card please"}),            # a sentence, not a name
    ("call_tool", {"tool": 7}),
])
def test_what_calls_no_named_tool_stays_its_action(action: str, arguments: dict[str, object]) -> None:
    assert dispatched_tool(action, arguments) is None


def test_by_the_tools_called_closing_a_card_is_not_freezing_one() -> None:
    close = [dispatched_tool("call_discoverable_agent_tool", {"agent_tool_name": "close_debit_card_1"})]
    freeze = [dispatched_tool("call_discoverable_agent_tool", {"agent_tool_name": "freeze_debit_card_2"})]
    assert operations([t for t in close if t]) != operations([t for t in freeze if t])
    assert verb_of("close_debit_card") == verb_of("freeze_debit_card") == "cancel"


@pytest.mark.parametrize(("action", "verb"), [
    ("open_bank_account", "create"), ("open_ticket", "create"), ("open_support_case", "create"),
    ("open_product", "lookup"), ("open_url", "lookup"), ("open_page", "lookup"), ("open", "lookup"),
])
def test_opening_an_account_or_a_ticket_makes_it_and_opening_a_page_reads_it(action: str, verb: str) -> None:
    assert verb_of(action) == verb


@pytest.mark.parametrize("action", [
    "unlock_discoverable_agent_tool", "give_discoverable_user_tool",   # the agent's toolbox
    "log_verification", "verify_identity", "validate_schema",          # checks
    "get_order_details", "open_product",                               # look-ups
])
def test_checks_and_the_agents_own_tools_change_nothing_the_user_holds(action: str) -> None:
    assert not changes_state(action)


@pytest.mark.parametrize("action", [
    "open_bank_account", "cancel_pending_order", "log_credit_card_closure_reason", "confirm_booking",
    "call_discoverable_agent_tool",  # a call whose tool could not be told may change anything
])
def test_what_changes_state(action: str) -> None:
    assert changes_state(action)


def test_runs_that_checked_or_unlocked_a_different_number_of_times_share_their_operations() -> None:
    once = ["log_verification", "unlock_discoverable_agent_tool", "get_user_details", "open_bank_account"]
    twice = ["log_verification", "log_verification", "unlock_discoverable_agent_tool", "open_bank_account",
             "unlock_discoverable_agent_tool"]
    assert operations(once) == operations(twice) == ("open_bank_account",)
