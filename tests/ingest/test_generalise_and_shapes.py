"""Generalisation turns concrete values into placeholders; shapes compare workflows."""

from kbgraph.ingest.generalise import describe_step, generalise_text, humanise_action, type_name
from kbgraph.ingest.shapes import is_subsequence, verb_shape


def test_ids_emails_urls_amounts_and_numbers_become_placeholders() -> None:
    text = "Return #W6067464 via credit_card_4190576 for jo@x.com, see https://a.b/c?d=1, refund $12.50 in 3 days"
    assert generalise_text(text) == "Return {id} via {id} for {email}, see {url}, refund {amount} in {number} days"


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
