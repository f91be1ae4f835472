"""The state a request says its object is in, and the state an operation's name needs it in
(kbgraph.search.order_state): pure rules."""

from __future__ import annotations

import pytest

from kbgraph.search.order_state import operation_state, stated_states


@pytest.mark.parametrize("ask", [
    "The glass kettle from #W1166549 came in white",
    "the dumbbells that came are too heavy",
    "I got a green steel water bottle but I'd prefer the glass one",
    "I want to send back the lamp I received",
    "My electric grill arrived but I'd rather have the charcoal one",
])
def test_what_came_is_delivered(ask: str) -> None:
    assert stated_states(ask) == {"delivered"}


@pytest.mark.parametrize("ask", [
    "My portable electric grill hasn't shipped yet. Could you make it the one with a rotisserie?",
    "Please cancel the order that has not been shipped",
    "Can you switch it to the 7-inch black model before it leaves?",
    "change the items of my pending order",
])
def test_what_has_not_shipped_is_pending(ask: str) -> None:
    assert stated_states(ask) == {"pending"}


def test_an_ask_that_says_no_state_or_both_states() -> None:
    assert stated_states("Can I get the 30-50 lb iron ones instead?") == frozenset()
    assert stated_states("the tablet I received, and the espresso machine that hasn't gone out yet") == {
        "delivered", "pending"}


def test_an_operation_needs_the_state_its_name_says() -> None:
    assert operation_state("exchange_delivered_order_items") == "delivered"
    assert operation_state("modify_pending_order_address") == "pending"
    assert operation_state("cancel_reservation") is None
    assert operation_state("get_order_details") is None
