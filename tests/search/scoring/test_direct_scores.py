"""Specification of the student phase's direct score (kbgraph.search.scoring): ``support_score``,
``direct_scores`` and ``mmr_from_similarity``, against values worked out by hand.

The formulas (docs/design.md §3), with every similarity clamped to [0, 1]::

    lexical = raw full-text score / the best candidate's
    textual = (1−α)·semantic + α·lexical
    coarse  = (1−ω)·textual + ω·structural     (textual alone without structure)
    stage   = λ·coarse + (1−λ)·fine
    direct  = stage · trans · (floor + (1−floor)·success) + β·support
    direct  ← (1−w_q)·direct + w_q·quality

No database is needed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from kbgraph.search.scoring import direct_scores, fit_score, mmr_from_similarity, support_score, workflow_score

approx = pytest.approx
NAN = float("nan")

#: The weights the hand computations below use (not kbgraph's defaults, which are tuned: a formula
#: has no default, so a spec states every weight it assumes).
HAND_WEIGHTS: dict[str, Any] = {
    "structure_weight": 0.5, "lam": 1.0, "alpha": 0.5, "success_floor": 0.2, "support_weight": 0.1,
    "quality_weight": 0.0, "utility_weight": 0.0, "lexical_normalised": False, "intent_weight": 0.0,
}


def direct(**arguments: Any) -> dict[str, Any]:
    """:func:`direct_scores` with ``HAND_WEIGHTS`` for every weight the call does not name."""
    return direct_scores(**{**HAND_WEIGHTS, **arguments})


# ----------------------------------------------------------------------------- support_score


def test_support_is_zero_without_trajectories() -> None:
    assert support_score(0, saturation=100) == 0.0


def test_support_is_one_at_saturation_and_capped_above() -> None:
    assert support_score(100, saturation=100) == approx(1.0)
    assert support_score(100_000, saturation=100) == 1.0
    assert support_score(7, saturation=7) == approx(1.0)
    assert support_score(8, saturation=7) == 1.0


def test_support_is_logarithmic() -> None:
    # ln(1+9) / ln(1+99) = ln 10 / ln 100 = 1/2
    assert support_score(9, saturation=99) == approx(0.5)
    assert support_score(1, saturation=3) == approx(math.log(2) / math.log(4))  # = 1/2 too


def test_support_is_monotone_in_the_number_of_trajectories() -> None:
    values = [support_score(n, saturation=50) for n in range(0, 120)]
    assert all(a <= b for a, b in zip(values, values[1:]))
    assert all(a < b for a, b in zip(values[:51], values[1:51]))  # strictly below saturation
    assert all(0.0 <= v <= 1.0 for v in values)


def test_more_trajectories_add_less_and_less() -> None:
    gains = [support_score(n + 1, 100) - support_score(n, 100) for n in range(10)]
    assert all(a > b for a, b in zip(gains, gains[1:]))


@pytest.mark.parametrize(
    ("trajectories", "saturation"), [(-1, 100), (2.5, 100), (True, 100), (3, 0), (3, -5), (3, 1.5)]
)
def test_support_rejects_bad_counts(trajectories: Any, saturation: Any) -> None:
    with pytest.raises(ValueError):
        support_score(trajectories, saturation)


# ----------------------------------------------------------------------------- direct_scores


def three_candidates(**overrides: Any) -> dict[str, Any]:
    """Three candidates; the third has no structure (a step-less experience).

    semantic  0.8, 0.6, −0.2 (clamped to 0)
    lexical   raw 8, 0, 2 → min-max 1, 0, 0.25 (the second was not returned by the full-text index)
    textual   α=0.5: 0.9, 0.3, 0.125
    coarse    ω=0.5: (0.9+0.4)/2 = 0.65, (0.3+0.9)/2 = 0.6, textual alone 0.125 (0.7 ignored)
    """
    arguments: dict[str, Any] = {
        "semantic": [0.8, 0.6, -0.2],
        "structural": [0.4, 0.9, 0.7],
        "has_structure": [True, True, False],
        "fine": [0.2, 1.0, 0.5],
        "lexical": [8.0, 0.0, 2.0],
        "trans": [1.0, 0.5, 1.0],
        "success": [1.0, 0.5, 0.0],
        "support": [0.0, 1.0, 0.5],
        "quality": [0.2, 0.4, 1.0],
    }
    arguments.update(overrides)
    return arguments


def test_every_part_is_returned_by_name() -> None:
    parts = direct(**three_candidates())
    assert set(parts) == {"lexical", "textual", "coarse", "stage", "success_factor", "utility_factor", "direct"}
    assert all(array.shape == (3,) for array in parts.values())


def test_hand_computed_parts() -> None:
    # HAND_WEIGHTS: ω=0.5, λ=1, α=0.5, floor=0.2, β=0.1, w_q=0.
    parts = direct(**three_candidates())
    assert parts["lexical"] == approx([1.0, 0.0, 0.25])
    assert parts["textual"] == approx([0.9, 0.3, 0.125])
    assert parts["coarse"] == approx([0.65, 0.6, 0.125])
    assert parts["stage"] == approx([0.65, 0.6, 0.125])  # λ=1: fine does not count
    # floor + (1−floor)·success = 0.2 + 0.8·(1, 0.5, 0)
    assert parts["success_factor"] == approx([1.0, 0.6, 0.2])
    # 0.65·1·1 + 0.1·0 ; 0.6·0.5·0.6 + 0.1·1 ; 0.125·1·0.2 + 0.1·0.5
    assert parts["direct"] == approx([0.65, 0.28, 0.075])


def test_stage_blends_coarse_and_fine_with_lambda() -> None:
    parts = direct(**three_candidates(), lam=0.5)
    # 0.5·coarse + 0.5·fine: (0.65+0.2)/2, (0.6+1.0)/2, (0.125+0.5)/2
    assert parts["stage"] == approx([0.425, 0.8, 0.3125])
    assert direct(**three_candidates(), lam=0.0)["stage"] == approx([0.2, 1.0, 0.5])


def test_a_candidate_without_structure_uses_the_textual_score_alone() -> None:
    low = direct(**three_candidates(structural=[0.4, 0.9, 0.0]))
    high = direct(**three_candidates(structural=[0.4, 0.9, 1.0]))
    assert low["coarse"][2] == high["coarse"][2] == approx(0.125)
    assert low["coarse"][:2] == approx(high["coarse"][:2])
    # Even when structure is all that counts (ω=1), it only counts where there is structure.
    parts = direct(**three_candidates(), structure_weight=1.0)
    assert parts["coarse"] == approx([0.4, 0.9, 0.125])
    assert direct(**three_candidates(), structure_weight=0.0)["coarse"] == approx([0.9, 0.3, 0.125])


def test_structural_similarity_is_clamped_at_zero() -> None:
    parts = direct(**three_candidates(structural=[-0.6, 0.9, 0.7]))
    assert parts["coarse"][0] == approx(0.5 * 0.9 + 0.5 * 0.0)


def test_lexical_scores_are_relative_to_the_best_match_of_the_query() -> None:
    parts = direct(**three_candidates(lexical=[12.0, 0.0, 3.0]))
    assert parts["lexical"] == approx([1.0, 0.0, 0.25])
    # Two near-equal matches stay near-equal (min-max would make them 1 and 0).
    assert direct(**three_candidates(lexical=[10.0, 9.0, 9.5]))["lexical"] == approx([1.0, 0.9, 0.95])


def test_a_candidate_absent_from_the_full_text_results_scores_zero_lexically() -> None:
    parts = direct(**three_candidates(lexical=[5.0, 0.0, 5.0]))
    assert parts["lexical"] == approx([1.0, 0.0, 1.0])
    assert parts["textual"][1] == approx(0.5 * 0.6)  # semantic half only


def test_no_full_text_match_at_all_leaves_the_semantic_half() -> None:
    parts = direct(**three_candidates(lexical=[0.0, 0.0, 0.0]))
    assert parts["lexical"] == approx([0.0, 0.0, 0.0])
    assert parts["textual"] == approx([0.4, 0.3, 0.0])


def test_equal_positive_full_text_scores_all_count_fully() -> None:
    parts = direct(**three_candidates(lexical=[3.0, 3.0, 3.0]))
    assert parts["lexical"] == approx([1.0, 1.0, 1.0])


def test_alpha_weighs_the_lexical_channel() -> None:
    assert direct(**three_candidates(), alpha=0.0)["textual"] == approx([0.8, 0.6, 0.0])
    assert direct(**three_candidates(), alpha=1.0)["textual"] == approx([1.0, 0.0, 0.25])


def test_success_floor_keeps_a_failed_experience_above_zero() -> None:
    parts = direct(**three_candidates(), support_weight=0.0, success_floor=0.2)
    assert parts["success_factor"][2] == approx(0.2)
    assert parts["direct"][2] == approx(0.125 * 0.2)
    without_floor = direct(**three_candidates(), support_weight=0.0, success_floor=0.0)
    assert without_floor["success_factor"] == approx([1.0, 0.5, 0.0])
    assert without_floor["direct"][2] == 0.0
    ignored = direct(**three_candidates(), support_weight=0.0, success_floor=1.0)
    assert ignored["success_factor"] == approx([1.0, 1.0, 1.0])


def test_support_adds_beta_times_support() -> None:
    base = direct(**three_candidates(), support_weight=0.0)["direct"]
    boosted = direct(**three_candidates(), support_weight=0.3)["direct"]
    assert boosted - base == approx([0.0, 0.3, 0.15])
    assert base == approx([0.65, 0.18, 0.025])


def test_quality_blends_into_the_direct_score() -> None:
    parts = direct(**three_candidates(), quality_weight=0.5)
    # 0.5·(0.65, 0.28, 0.075) + 0.5·(0.2, 0.4, 1.0)
    assert parts["direct"] == approx([0.425, 0.34, 0.5375])
    assert direct(**three_candidates(), quality_weight=1.0)["direct"] == approx([0.2, 0.4, 1.0])


def test_trans_multiplies_the_stage_score() -> None:
    parts = direct(**three_candidates(trans=[0.5, 0.5, 0.5]), support_weight=0.0)
    assert parts["direct"] == approx([0.325, 0.18, 0.0125])  # the second already had trans 0.5


def test_no_candidates_give_empty_parts() -> None:
    empty: dict[str, Any] = {name: [] for name in three_candidates()}
    parts = direct(**empty)
    assert all(array.shape == (0,) for array in parts.values())


@pytest.mark.parametrize(
    "name", ["structural", "has_structure", "fine", "lexical", "trans", "success", "support", "quality"]
)
def test_every_input_must_have_one_value_per_candidate(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        direct(**three_candidates(**{name: three_candidates()[name][:2]}))


@pytest.mark.parametrize(
    "name", ["semantic", "structural", "fine", "lexical", "trans", "success", "support", "quality"]
)
def test_nan_anywhere_raises(name: str) -> None:
    values = list(three_candidates()[name])
    values[1] = NAN
    with pytest.raises(ValueError):
        direct(**three_candidates(**{name: values}))


@pytest.mark.parametrize("name", ["trans", "success", "support", "quality"])
@pytest.mark.parametrize("bad", [-0.1, 1.1])
def test_probabilities_outside_the_unit_interval_raise(name: str, bad: float) -> None:
    values = list(three_candidates()[name])
    values[0] = bad
    with pytest.raises(ValueError, match=name):
        direct(**three_candidates(**{name: values}))


@pytest.mark.parametrize(
    "weight", ["structure_weight", "lam", "alpha", "success_floor", "support_weight", "quality_weight"]
)
@pytest.mark.parametrize("bad", [-0.01, 1.01, NAN, float("inf")])
def test_weights_outside_the_unit_interval_raise(weight: str, bad: float) -> None:
    with pytest.raises(ValueError, match=weight):
        direct(**three_candidates(), **{weight: bad})


@pytest.mark.parametrize(
    "weight", ["structure_weight", "lam", "alpha", "success_floor", "support_weight", "quality_weight"]
)
def test_weights_at_the_bounds_are_accepted(weight: str) -> None:
    for value in (0.0, 1.0):
        parts = direct(**three_candidates(), **{weight: value})
        assert np.isfinite(parts["direct"]).all()


# ----------------------------------------------------------------------------- mmr_from_similarity


def cosine_matrix(vectors: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[np.float64]]:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix: np.ndarray[Any, np.dtype[np.float64]] = unit @ unit.T
    return matrix


def test_lambda_one_is_pure_relevance_order() -> None:
    rng = np.random.default_rng(42)
    scores = rng.random(10)
    similarity = cosine_matrix(rng.normal(size=(10, 4)))
    expected = [int(i) for i in np.argsort(-scores, kind="stable")]
    assert mmr_from_similarity(scores, similarity, 10, lam=1.0) == expected
    assert mmr_from_similarity(scores, similarity, 3, lam=1.0) == expected[:3]


def test_hand_computed_diversity() -> None:
    # 0 and 1 are near duplicates; 2 is different. λ=0.5 after picking 0:
    #   MMR(1) = 0.5·0.85 − 0.5·0.99 = −0.07 ;  MMR(2) = 0.5·0.5 − 0.5·0.0 = 0.25  → 2 before 1.
    scores = [0.9, 0.85, 0.5]
    similarity = [[1.0, 0.99, 0.0], [0.99, 1.0, 0.1], [0.0, 0.1, 1.0]]
    assert mmr_from_similarity(scores, similarity, 3, lam=0.5) == [0, 2, 1]
    assert mmr_from_similarity(scores, similarity, 3, lam=1.0) == [0, 1, 2]


def test_ties_go_to_the_lowest_index() -> None:
    assert mmr_from_similarity([0.5, 0.5, 0.5], np.eye(3), 3, lam=1.0) == [0, 1, 2]


def test_k_bounds() -> None:
    similarity = np.eye(3)
    assert mmr_from_similarity([0.1, 0.3, 0.2], similarity, 0, lam=0.5) == []
    assert mmr_from_similarity([0.1, 0.3, 0.2], similarity, 10, lam=1.0) == [1, 2, 0]
    assert mmr_from_similarity([], np.zeros((0, 0)), 5, lam=0.5) == []
    with pytest.raises(ValueError):
        mmr_from_similarity([0.1, 0.3, 0.2], similarity, -1, lam=0.5)


@pytest.mark.parametrize(
    "similarity",
    [np.eye(2), np.eye(4), np.ones((3, 2)), np.ones(3), np.ones((3, 3, 1))],
    ids=["2x2", "4x4", "3x2", "1-d", "3-d"],
)
def test_a_similarity_matrix_of_the_wrong_shape_raises(similarity: np.ndarray[Any, np.dtype[np.float64]]) -> None:
    with pytest.raises(ValueError):
        mmr_from_similarity([0.1, 0.3, 0.2], similarity, 2, lam=0.5)


def test_a_non_finite_similarity_or_score_raises() -> None:
    similarity = np.eye(3)
    similarity[0, 1] = NAN
    with pytest.raises(ValueError):
        mmr_from_similarity([0.1, 0.3, 0.2], similarity, 2, lam=0.5)
    with pytest.raises(ValueError):
        mmr_from_similarity([0.1, NAN, 0.2], np.eye(3), 2, lam=0.5)


@pytest.mark.parametrize("lam", [-0.1, 1.1, NAN])
def test_lambda_outside_the_unit_interval_raises(lam: float) -> None:
    with pytest.raises(ValueError):
        mmr_from_similarity([0.1, 0.3, 0.2], np.eye(3), 2, lam=lam)


def test_utility_scales_the_score_and_is_neutral_without_feedback() -> None:
    plain = direct(**three_candidates())["direct"]
    neutral = direct(**three_candidates(utility=[0.5, 0.5, 0.5], utility_weight=0.5))["direct"]
    np.testing.assert_allclose(neutral, plain)
    learnt = direct(**three_candidates(utility=[1.0, 0.5, 0.0], utility_weight=0.5))
    np.testing.assert_allclose(learnt["utility_factor"], [1.5, 1.0, 0.5])
    np.testing.assert_allclose(learnt["direct"], plain * [1.5, 1.0, 0.5])
    with pytest.raises(ValueError, match="utility"):
        direct(**three_candidates(utility=[1.2, 0.5, 0.5]))


def test_share_weighs_a_way_by_how_often_it_solved_its_task() -> None:
    plain = direct(**three_candidates())
    shared = direct(**three_candidates(share=[0.75, 0.25, 1.0]))
    # Only the fit is scaled: 0.65·0.75 + 0.1·0 ; 0.18·0.25 + 0.1·1 ; unchanged
    assert shared["direct"] == approx([0.65 * 0.75, 0.6 * 0.5 * 0.6 * 0.25 + 0.1, plain["direct"][2]])
    with pytest.raises(ValueError, match="share"):
        direct(**three_candidates(share=[1.5, 1.0, 1.0]))


def test_a_workflow_scores_as_the_run_that_speaks_for_it() -> None:
    assert workflow_score(0.6, support=0.5, support_weight=0.2) == approx(0.7)
    parts = direct(**three_candidates())  # candidate 0: evidence 0.65, support 0
    assert workflow_score(0.65, 0.0, 0.1) == approx(parts["direct"][0])
    with pytest.raises(ValueError, match="evidence"):
        workflow_score(1.2, 0.5, 0.1)


def test_fit_is_the_direct_score_before_its_support_bonus() -> None:
    # 0.5 · 0.8 · (0.2 + 0.8 · 0.5) · 0.5 = 0.12, for a float and elementwise for arrays alike.
    assert fit_score(0.5, 0.8, 0.5, 0.5, success_floor=0.2) == approx(0.12)
    args = three_candidates()
    parts = direct(**args)
    fit = fit_score(parts["stage"], np.asarray(args["trans"]), np.asarray(args["success"]), np.ones(3), 0.2)
    assert parts["direct"] == approx(fit + 0.1 * np.asarray(args["support"]))


def test_a_lexical_score_already_scaled_to_the_query_is_not_stretched_to_the_best_candidate() -> None:
    common: dict[str, Any] = dict(semantic=[0.5, 0.5], structural=[0.0, 0.0], has_structure=[False, False],
                                  fine=[0.0, 0.0], trans=[1.0, 1.0], success=[1.0, 1.0], support=[0.0, 0.0],
                                  quality=[0.0, 0.0], alpha=0.5, success_floor=0.2, support_weight=0.0)
    # The best candidate covers a tenth of the request: by coverage it lends a tenth, not all of it.
    stretched = direct(lexical=[0.1, 0.05], **common)
    covered = direct(lexical=[0.1, 0.05], lexical_normalised=True, **common)
    assert stretched["lexical"].tolist() == approx([1.0, 0.5])
    assert covered["lexical"].tolist() == approx([0.1, 0.05])
    assert covered["textual"].tolist() == approx([0.5 * 0.5 + 0.5 * 0.1, 0.5 * 0.5 + 0.5 * 0.05])


def test_a_candidate_without_an_intent_match_is_mixed_with_the_others_mean_neither_favoured_nor_penalised() -> None:
    # Three candidates of equal text and shape; the first's workflow does what was asked (intent
    # 0.9), the second's does not (0.1), the third is a record without operations (no intent of its
    # own). Left unmixed it would outrank both; mixed with their mean it lands between them.
    base = dict(semantic=[0.4] * 3, structural=[0.2] * 3, has_structure=[True] * 3, fine=[0.0] * 3,
                lexical=[1.0] * 3, trans=[1.0] * 3, success=[1.0] * 3, support=[0.0] * 3, quality=[0.5] * 3)
    without = direct(**base)
    mixed = direct(**base, intent=[0.9, 0.1, 0.0], has_intent=[True, True, False], intent_weight=0.6)
    assert without["coarse"][0] == approx(0.5 * (0.5 * 0.4 + 0.5 * 1.0) + 0.5 * 0.2)
    assert mixed["coarse"][0] == approx(0.4 * without["coarse"][0] + 0.6 * 0.9)
    assert mixed["coarse"][1] == approx(0.4 * without["coarse"][1] + 0.6 * 0.1)
    assert mixed["coarse"][2] == approx(0.4 * without["coarse"][2] + 0.6 * 0.5)
    # No candidate with an intent match: nothing to mix, every coarse score stays as it was.
    none = direct(**base, intent=[0.0] * 3, has_intent=[False] * 3, intent_weight=0.6)
    assert none["coarse"].tolist() == approx(without["coarse"].tolist())
    with pytest.raises(ValueError, match="intent has 1 values for 3 candidates"):
        direct(**base, intent=[0.9], has_intent=[True, False, False], intent_weight=0.6)


def test_spread_intent_matches_are_stretched_min_to_max_over_the_candidates_that_have_one() -> None:
    # The matches of one request span a few tenths (0.3 to 0.5); stretched, the best weighs 1 and
    # the worst 0, and the record without operations takes their mean (0.5), as unstretched.
    base = dict(semantic=[0.4] * 4, structural=[0.2] * 4, has_structure=[True] * 4, fine=[0.0] * 4,
                lexical=[1.0] * 4, trans=[1.0] * 4, success=[1.0] * 4, support=[0.0] * 4, quality=[0.5] * 4)
    without = direct(**base)
    stretched = direct(**base, intent=[0.5, 0.4, 0.3, 0.0], has_intent=[True, True, True, False], intent_weight=0.6,
                       intent_spread=True)
    assert stretched["coarse"].tolist() == approx([0.4 * without["coarse"][0] + 0.6 * v for v in (1.0, 0.5, 0.0, 0.5)])
    # Equal matches say nothing: all of them 1, the order left to the rest of the score.
    equal = direct(**base, intent=[0.4] * 4, has_intent=[True] * 4, intent_weight=0.6, intent_spread=True)
    assert equal["coarse"].tolist() == approx([0.4 * without["coarse"][0] + 0.6] * 4)
