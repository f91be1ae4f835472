"""A request split into its asks by rule (kbgraph.search.asks.split_asks)."""

from __future__ import annotations

import pytest

from kbgraph.search.asks import MAX_ASKS, pays_only, split_asks


@pytest.mark.parametrize("request_text", [
    "Can I swap the kettle I got for the black one?",
    "I want the black and white kettle instead of the red one",
    "Please cancel order #W123, it was a mistake",
])
def test_a_request_for_one_thing_is_one_ask(request_text: str) -> None:
    assert split_asks(request_text) == [request_text.rstrip("?")]


def test_also_and_a_second_sentence_start_new_asks() -> None:
    assert split_asks("Cancel my pending order. Also, I want to return the lamp from the other one.") == [
        "Cancel my pending order", "I want to return the lamp from the other one"]


def test_and_followed_by_a_verb_splits_but_and_between_nouns_does_not() -> None:
    assert split_asks("Please cancel order A and return the kettle from order B") == [
        "Please cancel order A", "return the kettle from order B"]
    assert split_asks("Swap the black and white mug for the blue one") == ["Swap the black and white mug for the blue one"]


def test_while_you_are_at_it_adds_an_ask() -> None:
    assert split_asks("For order #W1 pay with my gift card instead, and while you're at it, switch the hose to blue.") == [
        "For order #W1 pay with my gift card instead", "switch the hose to blue"]


def test_pieces_without_a_verb_join_their_neighbour() -> None:
    assert split_asks("Hi there! Cancel my order please. Thanks!") == ["Hi there Cancel my order please Thanks"]


def test_a_blank_request_has_no_asks_and_a_long_one_at_most_max_asks() -> None:
    assert split_asks("  \n ") == []
    many = ". ".join(f"cancel order {i}" for i in range(20))
    asks = split_asks(many)
    assert len(asks) == MAX_ASKS
    assert asks[-1].endswith("cancel order 19")


def test_closing_and_ending_verbs_start_an_ask_of_their_own() -> None:
    # "shut", "kill", "redirect": plain verbs of a change; without them the ask joined the one before.
    assert split_asks("Open a savings account for my $6,000, and shut my empty Light Blue one.") == [
        "Open a savings account for my $6,000", "shut my empty Light Blue one"]
    assert split_asks("I don't need order #W1 anymore, please kill it. And on #W2, could the hose become the blue one?") == [
        "I don't need order #W1 anymore, please kill it", "And on #W2, could the hose become the blue one"]


def test_everyday_verbs_of_cancelling_and_moving_start_an_ask_of_their_own() -> None:
    # "scrap", "shift", "push": without them the piece had no verb and joined the ask next to it.
    assert split_asks("Please cancel my DTW trip and scrap the hotel too") == ["Please cancel my DTW trip", "scrap the hotel too"]
    assert split_asks("Move my outbound to the next day. Push my return back a day too") == [
        "Move my outbound to the next day", "Push my return back a day too"]


def test_changing_an_item_and_a_preference_are_asks_of_their_own() -> None:
    # "tweak", "adjust", "alter" ask a change; "I'd rather have" asks for another item.
    assert split_asks("Please ship #W3386832 to my Phoenix address, and also tweak the helmet to a small") == [
        "Please ship #W3386832 to my Phoenix address", "tweak the helmet to a small"]
    assert split_asks("Can my bike order go on my other card? Also, it hasn't shipped, so I'd rather have the red one") == [
        "Can my bike order go on my other card", "it hasn't shipped, so I'd rather have the red one"]


def test_a_piece_that_only_points_back_asks_the_same_change_again() -> None:
    # "Can I swap it?" names no object of its own: it is the ask before it, restated.
    assert split_asks("The notebook I got is A6 and I really wanted the A5 size instead. Can I swap it?") == [
        "The notebook I got is A6 and I really wanted the A5 size instead Can I swap it"]
    assert split_asks("I ordered #W1 and #W2 by mistake. Please cancel both of them.") == [
        "I ordered #W1 and #W2 by mistake Please cancel both of them"]
    # A piece that names an object of its own is an ask of its own.
    assert split_asks("My grill arrived but I'd rather have the charcoal one. Can you trade it for me? "
                      "Pay any difference with PayPal.", payment_joins=False) == [
        "My grill arrived but I'd rather have the charcoal one Can you trade it for me", "Pay any difference with PayPal"]


@pytest.mark.parametrize("piece", [
    "Pay with a gift card",
    "I'll pay with one travel certificate",
    "Charge any difference to my gift card",
    "Put the charge on my credit card ending 7334",
    "Use my gift card with the smallest balance",
    "Keep the Mastercard charge under $2000",
    "Gift card please",
])
def test_a_piece_that_only_says_how_to_pay_pays_only(piece: str) -> None:
    assert pays_only(piece)


@pytest.mark.parametrize("piece", [
    "pay off my credit card from checking",           # paying is the change asked for
    "Pay my credit card bill with my checking account",
    "put it on my gift card instead",                  # a shop changes an order's payment
    "I'll pay with a different credit card",
    "cancel it and pay with PayPal",                   # asks a change besides
    "I need a credit card",
])
def test_a_payment_that_is_the_change_or_comes_with_one_is_not_only_paying(piece: str) -> None:
    assert not pays_only(piece)


def test_how_to_pay_is_part_of_the_change_it_follows_not_an_ask_of_its_own() -> None:
    request = "Could you move my Chicago trip to economy with three bags? Pay with a gift card."
    assert split_asks(request) == [
        "Could you move my Chicago trip to economy with three bags Pay with a gift card"]
    assert split_asks(request, payment_joins=False) == [
        "Could you move my Chicago trip to economy with three bags", "Pay with a gift card"]
    assert split_asks("Cancel order #W1. Also add a second bag to my trip, charge it to my card ending 7334.") == [
        "Cancel order #W1", "add a second bag to my trip, charge it to my card ending 7334"]
