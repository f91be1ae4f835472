"""What an ask's words say beyond its vector moves the intent match's cosines
(kbgraph.search.student.ask_words): pure, on the default intent weights."""

from __future__ import annotations

import numpy as np

from kbgraph.core.weight_groups import IntentWeights
from kbgraph.search.student.ask_words import AskWords

OPERATIONS = ["exchange_delivered_order_items", "modify_pending_order_items", "return_delivered_order_items",
              "transfer_to_human_agents"]


def test_a_stated_state_and_a_named_verb_move_the_cosines_of_their_operations() -> None:
    words = AskWords(["The kettle I got is white, can I swap it?", "please cancel the other order"], IntentWeights())
    shifts = words.shifts(OPERATIONS)
    # "got": delivered (+0.1 exchange and return, −0.1 modify pending); "swap": exchange (+0.1).
    assert np.allclose(shifts[0], [0.2, -0.1, 0.1, 0.0])
    assert np.allclose(shifts[1], [0.0, 0.0, 0.0, 0.0]), "cancel names no operation here"
    assert words.moves and not words.human.any()


def test_an_ask_for_a_human_is_answered_in_full_by_the_handoff() -> None:
    words = AskWords(["My refund never came", "Let me speak to someone above you"], IntentWeights())
    by_pair = np.full((2, len(OPERATIONS)), 0.2)
    answered = words.answer_human(by_pair, np.array([op.startswith("transfer") for op in OPERATIONS]))
    assert answered[1, 3] == 1.0 and answered[0, 3] == 0.2 and by_pair[1, 3] == 0.2, "a copy"
    assert not words.one_human
    assert AskWords(["I want to talk to a real person!"], IntentWeights()).one_human


def test_switched_off_the_words_say_nothing() -> None:
    weights = IntentWeights(human_asks=False, state_shift=0.0, verb_shift=0.0)
    words = AskWords(["The kettle I got is white, can I swap it? Or let me talk to a real person."], weights)
    assert not words.moves and not words.human.any()
    assert np.array_equal(words.shifts(OPERATIONS), np.zeros((1, len(OPERATIONS))))
