"""The operations a request names by their verb, and an operation's verb
(kbgraph.search.asked_verbs): pure rules over the lexicon of kbgraph.core.operation_keys."""

from __future__ import annotations

import pytest

from kbgraph.search.asked_verbs import asked_verbs, operation_verb


@pytest.mark.parametrize(("ask", "verbs"), [
    ("Can I swap it?", {"exchange"}),
    ("I want to send back the kettle", {"return"}),
    ("please call off my order", {"cancel"}),
    ("Book me one way JFK to SFO", {"book"}),
    ("Please open a savings account", {"open"}),
    # Everyday words for a cancellation, a closure and a move (2026-12-04).
    ("Get rid of my DTW-LGA booking", {"cancel"}),
    ("I'd like to scrap it", {"cancel"}),
    ("shut my empty Light Blue one", {"close"}),
    ("Can you shift both legs by one day?", {"update"}),
    ("bump up my cabin", {"upgrade"}),
])
def test_a_verb_in_its_base_form_names_its_operation(ask: str, verbs: set[str]) -> None:
    assert asked_verbs(ask) == verbs


@pytest.mark.parametrize("ask", [
    "I don't want to change my trip",          # negated
    "I'm fine paying up to $100 a year",        # describes, does not ask
    "she is opening a business checking account",
    "Can you look up my order?",                # a look-up changes nothing
])
def test_a_denied_described_or_looking_verb_names_nothing(ask: str) -> None:
    assert asked_verbs(ask) == frozenset()


def test_a_past_form_describes_and_the_ask_after_it_counts() -> None:
    assert asked_verbs("I booked a flight this morning by mistake. Please cancel it") == {"cancel"}


def test_an_operation_has_the_verb_its_name_starts_with() -> None:
    assert operation_verb("exchange_delivered_order_items") == "exchange"
    assert operation_verb("modify_pending_order_items") == "update"
    assert operation_verb("close_bank_account") == "close"
    assert operation_verb("get_order_details") is None


def test_everyday_words_are_read_in_a_request_and_not_in_a_tools_name() -> None:
    # A customer "pushes" a flight back a day; a tool that pushes commits pushes, and is no update.
    assert asked_verbs("Push my flight back a day") == {"update"}
    assert operation_verb("commit_and_push") is None
    assert operation_verb("kill_process") is None
