"""The intent match of a request without steps against what a workflow changes (intent_match)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbgraph.search.scoring import intent_match, intent_matches, intent_share, one_ask_matches, repeat_factors


def test_a_request_of_one_ask_is_matched_as_a_whole() -> None:
    assert intent_match(0.7, [[0.2, 0.9]], [0.9], 1.0, 0.0) == pytest.approx(0.7)


def test_a_workflow_without_operations_is_matched_as_a_whole() -> None:
    assert intent_match(0.4, np.zeros((2, 0)), [0.8, 0.5], 1.0, 0.0) == pytest.approx(0.4)


def test_a_workflow_that_does_every_ask_beats_one_that_does_one_of_them() -> None:
    # Asks: "cancel the order that hasn't shipped" (best operation in memory: cancel, 0.73) and
    # "return the lamp I received" (best: return, 0.45). Columns: cancel, return.
    best = [0.73, 0.45]
    both = intent_match(0.5, [[0.73, 0.46], [0.22, 0.45]], best, 1.0, 0.0)
    only_return = intent_match(0.5, [[0.46], [0.45]], best, 1.0, 0.0)
    only_cancel = intent_match(0.5, [[0.73], [0.22]], best, 1.0, 0.0)
    mean_best = (0.73 + 0.45) / 2
    assert both == pytest.approx(mean_best)  # every ask answered by the operation it means, nothing else
    assert only_return == pytest.approx((0.46 / 0.73 + 1.0) / 2 * mean_best)
    assert only_cancel == pytest.approx((1.0 + 0.22 / 0.45) / 2 * mean_best)
    assert both > only_return > only_cancel


def test_changes_nobody_asked_for_cost_by_gamma() -> None:
    # Both asks mean the first operation; the second is asked for by nobody (0.2 of the best).
    matrix, best = [[0.8, 0.16], [0.6, 0.12]], [0.8, 0.6]
    asked = (1.0 + 0.2) / 2
    mean_best = 0.7
    assert intent_match(0.3, matrix, best, 1.0, 0.0) == pytest.approx(asked * mean_best)
    assert intent_match(0.3, matrix, best, 0.0, 0.0) == pytest.approx(mean_best)
    assert intent_match(0.3, matrix, best, 0.5, 0.0) == pytest.approx(math.sqrt(asked) * mean_best)


def test_an_asks_best_is_never_below_what_this_workflow_offers_it() -> None:
    # A stale or partial vocabulary (best 0.5) must not give a relative match above 1.
    assert intent_match(0.1, [[0.9, 0.0], [0.0, 0.9]], [0.5, 0.5], 1.0, 0.0) == pytest.approx(0.9)


def test_negative_cosines_are_no_evidence() -> None:
    assert intent_match(-0.3, [[-0.5]], [0.1], 1.0, 0.0) == 0.0
    assert intent_match(0.2, [[-0.5, 0.4], [0.6, -0.2]], [0.4, 0.6], 1.0, 0.0) == pytest.approx(0.5)


@pytest.mark.parametrize(("whole", "matrix", "best", "gamma", "message"), [
    (math.nan, [[0.1]], [0.1], 1.0, "whole"),
    (1.5, [[0.1]], [0.1], 1.0, "whole"),
    (0.1, [[math.inf, 0.1], [0.1, 0.1]], [0.1, 0.1], 1.0, "NaN or infinite"),
    (0.1, [0.1, 0.2], [0.1], 1.0, "matrix"),
    (0.1, [[0.1], [0.2]], [0.1], 1.0, "best_by_ask has 1 values for 2 asks"),
    (0.1, [[0.1]], [0.1], 1.5, "unasked_penalty"),
])
def test_bad_inputs_are_refused(whole: float, matrix: list[object], best: list[float], gamma: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        intent_match(whole, matrix, best, gamma, 0.0)


def test_a_workflow_that_does_the_asks_in_the_order_they_were_asked_wins_over_the_same_changes_reversed() -> None:
    # "cancel order A, and swap the boots I got": ask 0 means cancel (column 0), ask 1 exchange (column 1).
    asks_by_operation = [[0.8, 0.3], [0.2, 0.7]]
    best = [0.8, 0.7]
    in_order = intent_match(0.5, asks_by_operation, best, 1.0, order_penalty=0.1)
    reversed_ = intent_match(0.5, [[0.3, 0.8], [0.7, 0.2]], best, 1.0, order_penalty=0.1)   # exchange first
    assert in_order == pytest.approx(intent_match(0.5, asks_by_operation, best, 1.0, 0.0)), "nothing inverted: unchanged"
    assert reversed_ == pytest.approx(0.9 * in_order), "the one pair of asks inverted: 1 − ε"
    # Three asks, the last two of them swapped: one pair of three inverted.
    three = [[0.9, 0.1, 0.1], [0.1, 0.1, 0.9], [0.1, 0.9, 0.1]]
    assert intent_match(0.5, three, [0.9] * 3, 1.0, order_penalty=0.3) == pytest.approx(
        (1 - 0.3 / 3) * intent_match(0.5, three, [0.9] * 3, 1.0, 0.0))


def test_two_asks_one_operation_are_in_no_order() -> None:
    # "cancel A and cancel B": both asks mean the one cancel the workflow makes.
    matrix = [[0.8, 0.1], [0.7, 0.1]]
    assert intent_match(0.5, matrix, [0.8, 0.7], 1.0, order_penalty=0.5) == pytest.approx(
        intent_match(0.5, matrix, [0.8, 0.7], 1.0, 0.0))


@pytest.mark.parametrize("asks", [1, 2, 3])
def test_many_workflows_at_once_score_as_each_does_alone(asks: int) -> None:
    rng = np.random.default_rng(asks)
    by_operation = rng.uniform(-0.2, 0.9, size=(asks, 7))
    best = by_operation.max(axis=1) * rng.uniform(0.6, 1.1, size=asks)   # below some workflows' own best
    sequences = [[], [0], [3, 1], [6, 5, 4, 2], [2], [0, 1, 2, 3, 4, 5, 6]]
    wholes = rng.uniform(-0.1, 1.0, size=len(sequences))
    for epsilon in (0.0, 0.2):
        together = intent_matches(wholes, by_operation, sequences, best, 0.5, epsilon)
        alone = [intent_match(whole, by_operation[:, columns], best, 0.5, epsilon)
                 for whole, columns in zip(wholes, sequences)]
        assert together == pytest.approx(alone, abs=1e-12)


def test_many_workflows_at_once_refuse_what_one_refuses() -> None:
    with pytest.raises(ValueError, match="finite"):
        intent_matches([0.5], [[np.nan, 0.2], [0.1, 0.3]], [[0]], [0.5, 0.5], 0.5, 0.0)
    with pytest.raises(ValueError, match="2 whole cosines for 1"):
        intent_matches([0.5, 0.4], [[0.2], [0.1]], [[0]], [0.5, 0.5], 0.5, 0.0)


def test_a_request_new_to_the_memory_takes_all_of_iota_on_the_ramp_and_a_known_task_none() -> None:
    assert intent_share(0.9, 0.30, "ramp", 0.45, 0.70) == 0.9
    assert intent_share(0.9, 0.80, "ramp", 0.45, 0.70) == 0.0
    assert intent_share(0.9, 0.575, "ramp", 0.45, 0.70) == pytest.approx(0.45)


def test_novelty_scales_iota_by_the_distance_from_the_nearest_text_and_fixed_keeps_it() -> None:
    assert intent_share(0.9, 0.5, "novelty", 0.45, 0.70) == pytest.approx(0.45)
    assert intent_share(0.9, 1.4, "novelty", 0.45, 0.70) == 0.0  # a cosine above 1 is clipped
    assert intent_share(0.9, 0.5, "fixed", 0.45, 0.70) == 0.9


def test_a_ramp_that_does_not_rise_or_an_unknown_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="must exceed"):
        intent_share(0.9, 0.5, "ramp", 0.70, 0.70)
    with pytest.raises(ValueError, match="unknown intent scale"):
        intent_share(0.9, 0.5, "steep", 0.45, 0.70)


def test_one_ask_costs_a_workflow_each_change_it_was_not_asked_for() -> None:
    # "Can I swap it?": exchange 0.30 (the best operation in memory), return 0.15, modify address 0.06.
    by_operation = [0.30, 0.15, 0.06]
    wholes = [0.21, 0.22, 0.20]
    scores = one_ask_matches(wholes, by_operation, [[0], [1, 2], [0, 1]], 0.30, 3.0)
    assert scores[0] == pytest.approx(0.21)  # one change: matched as a whole
    assert scores[1] == pytest.approx(0.22 * ((0.15 + 0.06) / 2 / 0.30) ** 3)
    assert scores[2] == pytest.approx(0.20 * ((0.30 + 0.15) / 2 / 0.30) ** 3)
    assert scores[0] > scores[2] > scores[1]


def test_without_the_penalty_one_ask_is_matched_as_a_whole_only() -> None:
    assert list(one_ask_matches([0.2, 0.4], [0.3, 0.1], [[0], [0, 1]], 0.3, 0.0)) == [0.2, 0.4]


def test_a_workflow_without_operations_keeps_its_whole_match_and_best_is_never_below_what_is_offered() -> None:
    # The memory's best (0.1) is stale: the workflow's own 0.5 stands in, so no factor exceeds 1.
    scores = one_ask_matches([0.3, 0.6], [0.5, 0.5], [[], [0, 1]], 0.1, 2.0)
    assert scores[0] == pytest.approx(0.3) and scores[1] == pytest.approx(0.6)


@pytest.mark.parametrize(("wholes", "by_operation", "sequences", "best", "penalty", "message"), [
    ([0.1], [0.1], [[0]], 0.1, -1.0, "penalty"),
    ([0.1], [0.1], [[0]], 0.1, math.nan, "penalty"),
    ([0.1, 0.2], [0.1], [[0]], 0.1, 1.0, "2 whole cosines for 1 workflows"),
    ([0.1], [math.inf], [[0]], 0.1, 1.0, "finite"),
])
def test_one_ask_refuses_what_is_no_cosine_or_weight(wholes: list[float], by_operation: list[float],
                                                    sequences: list[list[int]], best: float, penalty: float,
                                                    message: str) -> None:
    with pytest.raises(ValueError, match=message):
        one_ask_matches(wholes, by_operation, sequences, best, penalty)


def test_a_workflow_that_repeats_its_changes_pays_for_each_repeat() -> None:
    # Credit four times then report (2 of 5), credit and report twice each (2 of 4), once each (2 of 2).
    assert repeat_factors([5, 4, 2], [2, 2, 2], 1.0) == pytest.approx([0.4, 0.5, 1.0])
    assert repeat_factors([4], [2], 0.5) == pytest.approx([math.sqrt(0.5)])


def test_no_repeat_no_change_or_no_penalty_costs_nothing() -> None:
    assert repeat_factors([3, 0], [3, 0], 2.0) == pytest.approx([1.0, 1.0])
    assert repeat_factors([6], [1], 0.0) == pytest.approx([1.0])


@pytest.mark.parametrize(("made", "distinct", "penalty"), [([2], [3], 1.0), ([2], [1, 1], 1.0), ([2], [1], -0.5),
                                                           ([2], [1], float("nan"))])
def test_impossible_counts_or_penalties_are_refused(made: list[int], distinct: list[int], penalty: float) -> None:
    with pytest.raises(ValueError):
        repeat_factors(made, distinct, penalty)
