"""Specification of how what feedback taught weighs a score (kbgraph.search.scoring): the utility
factor, the task-conditioned outcome evidence and its factor, and MAEL's step score. No database."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbgraph.search.scoring import context_factor, outcome_evidence, step_score, utility_factor

approx = pytest.approx


def test_utility_factor_is_neutral_for_an_experience_without_feedback() -> None:
    assert utility_factor(0.5, 0.0) == 1.0 and utility_factor(0.9, 0.0) == 1.0
    assert utility_factor(0.5, 0.5) == approx(1.0)
    assert utility_factor(1.0, 0.5) == approx(1.5)
    assert utility_factor(0.0, 0.5) == approx(0.5)
    assert utility_factor(0.0, 1.0) == 0.0
    with pytest.raises(ValueError, match="utility_weight"):
        utility_factor(0.5, 1.1)


def test_utility_factor_is_elementwise_and_the_same_as_for_one_value() -> None:
    utilities = np.array([0.0, 0.25, 0.5, 1.0, 1.7])  # above 1 counts as 1
    factors = utility_factor(utilities, 0.3)
    assert factors.tolist() == [utility_factor(float(u), 0.3) for u in utilities]
    assert factors.tolist() == approx([0.7, 0.85, 1.0, 1.3, 1.3])
    with pytest.raises(ValueError, match="utility"):
        utility_factor(np.array([0.5, float("nan")]), 0.3)


def test_outcome_evidence_counts_outcomes_on_tasks_like_the_query() -> None:
    assert outcome_evidence([1.0], [0.0], floor=0.9) == approx(-1.0)
    assert outcome_evidence([1.0, 1.0], [1.0, 0.0], floor=0.9) == approx(0.0)
    # halfway between the floor and the same task: weight ((0.9 − 0.8)/(1 − 0.8))^4 = 0.5^4
    assert outcome_evidence([0.9], [1.0], floor=0.8) == approx(0.5 ** 4)
    assert outcome_evidence([0.79, 0.2], [0.0, 0.0], floor=0.8) == 0.0, "other kinds of tasks are not evidence"
    assert outcome_evidence([], [], floor=0.9) == 0.0
    with pytest.raises(ValueError):
        outcome_evidence([1.0], [], floor=0.9)
    with pytest.raises(ValueError, match="outcome"):
        outcome_evidence([1.0], [1.5], floor=0.9)


def test_context_factor_halves_after_a_failure_on_the_same_task_and_is_bounded() -> None:
    assert context_factor(0.0, 0.7) == 1.0
    assert context_factor(-1.0, 0.7) == approx(math.exp(-0.7))
    assert context_factor(1.0, 0.7) == approx(math.exp(0.7))
    assert context_factor(-10.0, 0.7) == 0.25 and context_factor(10.0, 0.7) == 4.0
    assert context_factor(-3.0, 0.0) == 1.0


def test_step_score_mixes_similarity_and_the_reward_on_the_same_scale() -> None:
    # α·sim + (1−α)·(reward + 1)/2
    assert step_score(0.8, 1.0, alpha=0.5) == approx(0.9)
    assert step_score(0.8, -1.0, alpha=0.5) == approx(0.4)
    assert step_score(0.8, 0.2, alpha=0.25) == approx(0.25 * 0.8 + 0.75 * 0.6)
    assert step_score(0.8, None, alpha=0.5) == approx(0.65), "a step nobody rated is neutral (0.5)"
    assert step_score(0.8, None, alpha=1.0) == approx(0.8)
    assert step_score(-0.3, 3.0, alpha=0.5) == approx(0.5), "negative cosine counts 0, a reward above 1 as 1"


@pytest.mark.parametrize(("similarity", "reward", "alpha"), [(0.5, float("nan"), 0.5), (0.5, 0.0, 1.5)])
def test_step_score_rejects_bad_inputs(similarity: float, reward: float, alpha: float) -> None:
    with pytest.raises(ValueError):
        step_score(similarity, reward, alpha)
