"""What feedback has taught, as it weighs a search score (docs/design.md §3–5): the utility factor
(Agent KB D.3), the task-conditioned outcome evidence and its factor, and MAEL's step score.

The values they read are learnt elsewhere: utility and step rewards by :mod:`kbgraph.learning.feedback`
(utility itself is :func:`kbgraph.core.utility.utility`), outcomes by ``record_feedback(task=…)``.
These formulas only say how much the learnt value moves a score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import overload

import numpy as np

from kbgraph.core.utility import NEUTRAL_UTILITY
from kbgraph.search.scoring._checks import FloatArray, _finite, _scores, _similarity, _unit_interval

#: The context factor's range: four failures on this very task cost at most ×0.25.
CONTEXT_FACTOR_RANGE = (0.25, 4.0)
#: How fast a past task's weight falls with its distance from the query, above the similarity floor.
OUTCOME_SHARPNESS = 4.0
#: The reward of a step nobody has rated, on the [0, 1] scale: neither helped nor hurt.
NEUTRAL_REWARD = 0.5


@overload
def utility_factor(utility: float, weight: float) -> float: ...


@overload
def utility_factor(utility: FloatArray, weight: float) -> FloatArray: ...


def utility_factor(utility: float | FloatArray, weight: float) -> float | FloatArray:
    """How utility scales a search score: ``(1 − w) + w·U/U₀``, U₀ = 0.5 the utility of a new
    experience (:data:`kbgraph.core.utility.NEUTRAL_UTILITY`), so an experience without feedback keeps
    its score (factor 1), a reinforced one gains up to ×(1 + w) and a failing or long-unused one
    loses up to ×(1 − w). Equal utilities leave the ranking alone; w = 0 turns the factor off.

    ``utility`` is one value or an array of them (elementwise), each clamped to [0, 1]; ``weight``
    (``SearchWeights.outcomes.utility_weight``) must be in [0, 1]."""
    w = _unit_interval(weight, "utility_weight")
    if isinstance(utility, np.ndarray):
        factors: FloatArray = (1.0 - w) + w * np.clip(_scores(utility, "utility"), 0.0, 1.0) / NEUTRAL_UTILITY
        return factors
    return (1.0 - w) + w * min(max(_finite(utility, "utility"), 0.0), 1.0) / NEUTRAL_UTILITY


def outcome_evidence(similarities: Sequence[float], outcomes: Sequence[float], floor: float) -> float:
    """What an experience's past outcomes on tasks like the query say (task-conditioned feedback):
    ``Σ w_i·(2·outcome_i − 1)`` with ``w_i = ((cos_i − floor)/(1 − floor))^4`` for the outcomes
    whose task has cosine ``cos_i`` > ``floor`` (``SearchWeights.outcomes.outcome_similarity_floor``) with the
    query, 0 otherwise. The same task weighs 1; a merely related one next to nothing — an
    experience that failed someone else's kind of task is not held against this one."""
    if len(similarities) != len(outcomes):
        raise ValueError("one similarity per outcome")
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must be in [0, 1), not {floor!r}")
    evidence = 0.0
    for cosine, outcome in zip(similarities, outcomes, strict=True):
        if cosine > floor:
            weight = min((cosine - floor) / (1.0 - floor), 1.0) ** OUTCOME_SHARPNESS
            evidence += weight * (2.0 * _unit_interval(outcome, "outcome") - 1.0)
    return evidence


def context_factor(evidence: float, strength: float) -> float:
    """How past outcomes on similar tasks scale a search score: ``exp(strength·evidence)``, in
    [0.25, 4] (``strength`` is ``SearchWeights.outcomes.outcome_weight``). One failure on the same task
    with strength 0.7 halves the score; one success doubles it."""
    low, high = CONTEXT_FACTOR_RANGE
    return min(max(math.exp(strength * evidence), low), high)


def step_score(similarity: float, reward: float | None, alpha: float) -> float:
    """MAEL step-wise retrieval: ``α·similarity + (1 − α)·reward``, the reward (a mean of reports
    in [−1, 1]) mapped to [0, 1] as ``(reward + 1)/2`` and a step nobody rated counting as neutral
    (0.5). ``similarity`` is a cosine, clamped to [0, 1]; ``alpha`` in [0, 1]."""
    weight = _unit_interval(alpha, "alpha")
    unit = NEUTRAL_REWARD if reward is None else (min(max(_finite(reward, "reward"), -1.0), 1.0) + 1.0) / 2.0
    return weight * _similarity(similarity, "similarity") + (1.0 - weight) * unit
