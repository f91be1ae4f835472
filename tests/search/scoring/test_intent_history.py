"""What the memory's own requests say a new request's words ask for (history_association): pure."""

from __future__ import annotations

import math

from pytest import approx

from kbgraph.search.scoring import (
    NO_CHANGE, WordOperationCounts, ask_history_association, asks_association, history_association, operations_association,
)

#: A small airline history: the words of each stored request and what its run changed.
HISTORY = WordOperationCounts.of([
    (["fly", "one", "way", "economy"], ["book_reservation"]),
    (["fly", "round", "trip", "bags"], ["book_reservation"]),
    (["move", "flight", "day", "later"], ["update_reservation_flights"]),
    (["move", "flight", "earlier", "nonstop"], ["update_reservation_flights"]),
    (["cancel", "trip", "refund"], ["cancel_reservation"]),
    (["baggage", "allowance", "many"], []),
])


def test_the_counts_count_each_run_word_and_operation_once_and_a_run_without_changes_under_no_change() -> None:
    counts = WordOperationCounts.of([(["move", "move", "flight"], ["update", "update"]), (["what"], [])])
    assert counts.runs == 2
    assert counts.by_word == {"move": 1, "flight": 1, "what": 1}
    assert counts.by_operation == {"update": 1, NO_CHANGE: 1}
    assert counts.together[("move", "update")] == 1 and counts.together[("what", NO_CHANGE)] == 1


def test_words_the_history_made_an_operation_with_raise_it_and_are_no_evidence_against_the_others() -> None:
    request = ["move", "flight", "friday"]  # "friday": in no stored request, left out
    update = history_association(request, ["update_reservation_flights"], HISTORY)
    book = history_association(request, ["book_reservation"], HISTORY)
    assert update is not None and update > 0
    assert book == 0.0


def test_the_association_is_the_idf_weighted_mean_lift_of_the_smoothed_probability() -> None:
    # One word, "cancel", in 1 of 6 runs, always with cancel_reservation (1 of 6 runs):
    # P(o|w) = (1 + 1·1/6) / (1 + 1) = 7/12, P(o) = 1/6, lift = log(3.5); one word: its idf cancels out.
    assert history_association(["cancel"], ["cancel_reservation"], HISTORY) == approx(math.log(3.5))
    # A sequence of operations: the mean of their associations, a negative one counting 0
    # ("cancel" never went with a booking: P = (0 + 1·2/6) / 2 = 1/6 against P(o) = 2/6).
    both = history_association(["cancel"], ["cancel_reservation", "book_reservation"], HISTORY)
    assert both == approx(math.log(3.5) / 2)


def test_a_request_for_nothing_to_change_matches_the_runs_that_changed_nothing() -> None:
    question = ["baggage", "allowance"]
    nothing = history_association(question, [], HISTORY)
    book = history_association(question, ["book_reservation"], HISTORY)
    assert nothing is not None and nothing > 0 and book == 0.0


def test_smoothing_keeps_one_run_s_words_from_deciding() -> None:
    light = history_association(["cancel"], ["cancel_reservation"], HISTORY, smoothing=0.1)
    heavy = history_association(["cancel"], ["cancel_reservation"], HISTORY, smoothing=10.0)
    assert light is not None and heavy is not None and light > heavy > 0


def test_nothing_is_said_without_history_or_without_a_known_word() -> None:
    assert history_association(["move"], ["update_reservation_flights"], WordOperationCounts()) is None
    assert history_association(["teleport"], ["update_reservation_flights"], HISTORY) is None
    # An operation no stored run made: nothing learnt about it either way.
    assert history_association(["move"], ["upgrade_membership"], HISTORY) == 0.0


def test_a_request_of_several_asks_credits_a_workflow_ask_by_ask() -> None:
    asks = [["move", "flight"], ["cancel", "refund"]]
    both = ask_history_association(asks, ["update_reservation_flights", "cancel_reservation"], HISTORY)
    one = ask_history_association(asks, ["cancel_reservation"], HISTORY)
    assert both is not None and one is not None
    # Each ask takes the operation its own words went with: a workflow doing both asks gets both.
    assert both == approx((history_association(asks[0], ["update_reservation_flights"], HISTORY)
                           + history_association(asks[1], ["cancel_reservation"], HISTORY)) / 2)
    assert both > one > 0


def test_an_ask_the_history_says_nothing_of_counts_zero_and_none_when_no_ask_is_known() -> None:
    assert ask_history_association([["friday"], ["zebra"]], ["book_reservation"], HISTORY) is None
    known = ask_history_association([["friday"], ["cancel"]], ["cancel_reservation"], HISTORY)
    assert known == approx(history_association(["cancel"], ["cancel_reservation"], HISTORY) / 2)


def test_an_association_is_the_same_from_each_operations_own_association() -> None:
    # The intent channel works each operation's association out once and combines them for
    # thousands of workflows: the combination must give exactly what the whole call gives.
    counts = WordOperationCounts.of([
        (["swap", "kettle"], ["exchange"]), (["swap", "lamp"], ["exchange", "return"]),
        (["refund", "lamp"], ["return"]), (["cancel"], ["cancel"]), (["cancel", "refund"], ["cancel", "return"]),
    ])
    words, asks = ["swap", "refund", "lamp"], [["swap", "kettle"], ["refund"], ["unknown"]]
    for operations in (["exchange"], ["exchange", "return"], ["cancel", "return", "exchange"]):
        alone = [history_association(words, [o], counts) for o in operations]
        assert operations_association(alone) == history_association(words, operations, counts)
        by_ask = [[history_association(ask, [o], counts) for o in operations] for ask in asks]
        assert asks_association(by_ask) == ask_history_association(asks, operations, counts)


def test_nothing_said_of_any_operation_or_ask_is_none() -> None:
    assert operations_association([None, None]) is None and operations_association([]) is None
    assert asks_association([[None], [None, None]]) is None
    assert asks_association([[None], [0.4, 0.2]]) == approx(0.2)  # an ask nothing is said of counts 0


def test_an_ask_by_ask_association_from_the_caller_s_own_associations_is_the_same() -> None:
    # A search works each (ask, operation) association out once and hands them in (said=).
    asks = [["cancel"], ["refund", "lamp"]]
    said = {(i, o): history_association(ask, [o], HISTORY) for i, ask in enumerate(asks)
            for o in ("cancel_reservation", "update_reservation_flights", NO_CHANGE)}
    for operations in (["cancel_reservation"], ["update_reservation_flights", "cancel_reservation"], []):
        assert (ask_history_association(asks, operations, HISTORY, said=lambda i, o: said[(i, o)])
                == ask_history_association(asks, operations, HISTORY))
