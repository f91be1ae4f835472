"""Generalisation turns concrete values into placeholders; shapes compare workflows."""

import pytest

from kbgraph.ingest.generalise import (
    describe_step,
    generalise_task,
    generalise_text,
    humanise_action,
    ids_in_trajectory,
    names_in_trajectory,
    type_name,
)
from kbgraph.ingest.shapes import is_subsequence, verb_shape
from kbgraph.models import Trajectory


def test_ids_emails_urls_and_codes_become_placeholders_and_amounts_and_counts_stay() -> None:
    text = "Return #W6067464 via credit_card_4190576 for jo@x.com, see https://a.b/c?d=1, refund $12.50 in 3 days"
    assert generalise_text(text) == "Return {id} via {id} for {email}, see {url}, refund $12.50 in 3 days"


@pytest.mark.parametrize("kept", [
    "after 11am and before 3pm", "departing after 8 am est", "at 10:30", "on 2024-05-20", "on 5/20", "on May 20th",
    "pay $305", "up to $600", "12.5 dollars", "3 baggages", "two certificates", "2 checked bags", "in economy",
    "in basic economy or business", "a 65cm ball", "16GB of memory", "top-1 product in 2022", "a 50% refund",
])
def test_what_carries_meaning_is_kept(kept: str) -> None:
    assert generalise_text(f"You want {kept}.") == f"You want {kept}."


@pytest.mark.parametrize(("text", "general"), [
    ("reservation SI5UKW and 59XX6W", "reservation {id} and {id}"),
    ("flight HAT136 at 11am", "flight {id} at 11am"),
    ("user mia_li_3668", "user {id}"),
    ("zip 19122, item 9624127908", "zip {number}, item {number}"),
    ("call 555-123-4567", "call {number}"),
    ("mail mia.li3818@example.com", "mail {email}"),
])
def test_what_identifies_becomes_a_placeholder(text: str, general: str) -> None:
    assert generalise_text(text) == general


def test_names_and_ids_of_the_run_are_replaced_as_whole_words() -> None:
    text = "Remove Ethan Li from reservation HXDUBJ; Ethanol and LIONS stay"
    assert generalise_text(text, names={"Ethan Li", "Ethan", "Li"}, ids={"HXDUBJ"}) == \
        "Remove {name} from reservation {id}; Ethanol and LIONS stay"


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
    assert {"Amelia", "Ahmed", "Amelia Ahmed", "Mia", "Li", "Sophia Silva", "Sophia", "Silva"} <= names
    assert "Electric Kettle" not in names  # a product's name is not a person's
    assert ids_in_trajectory(trajectory) == {"HXDUBJ", "mia_li_3668"}


def test_arguments_become_placeholders_named_after_the_argument() -> None:
    text = describe_step("find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"})
    assert text == "find user id by name zip (first_name={first_name}, last_name={last_name}, zip={zip})"
    assert describe_step("cancel_pending_order", {"order_id": "#W1", "reason": "ordered by mistake"}) == \
        "cancel pending order (order_id={order_id}, reason=ordered by mistake)"
    assert "[{item_id}, …]" in describe_step("return_items", {"item_ids": ["1", "2"]})


def test_types_and_names() -> None:
    assert [type_name(v) for v in (1, 1.5, "x", True, ["a"], {}, None)] == [
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
