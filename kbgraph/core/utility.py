"""Pure functions of the learning loop (docs/design.md §4–5): quality, utility with time decay, the
AutoRefine maintenance score, the EDV verdict, the ability estimate and MAEL's step score.

Nothing here touches the database; :mod:`kbgraph.learning.feedback`, :mod:`kbgraph.learning.maintenance` and
:mod:`kbgraph.learning.agents` apply them, and search ranks by them (the Cypher files compute the same
formulas in the database where a value must be read and written in one transaction). They sit
below both, so neither imports the other for them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

# AutoRefine eq. 1's ε: keeps s/u finite for unused experiences.
MAINTENANCE_EPSILON = 0.01
SECONDS_PER_DAY = 86_400.0


def _unit(value: float, name: str) -> float:
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], not {value!r}")
    return value


def quality_update(quality: float, outcome: float, rate: float) -> float:
    """Agent KB D.1: ``Q_new = (1 − α)·Q_old + α·outcome``; outcome 1 is success, 0 failure."""
    _unit(quality, "quality")
    _unit(outcome, "outcome")
    _unit(rate, "rate")
    return (1.0 - rate) * quality + rate * outcome


def decay_rate_per_day(half_life_days: float) -> float:
    """λ of ``exp(−λ·Δt)`` for a half-life in days (a non-positive half-life means no decay)."""
    if not math.isfinite(half_life_days):
        raise ValueError(f"half-life must be finite, not {half_life_days!r}")
    return 0.0 if half_life_days <= 0 else math.log(2.0) / half_life_days


def days_between(earlier: datetime | None, later: datetime) -> float:
    """Days from ``earlier`` to ``later``; 0 when ``earlier`` is unknown or in the future."""
    if earlier is None:
        return 0.0
    return max((later - earlier).total_seconds() / SECONDS_PER_DAY, 0.0)


def decayed(value: float, elapsed_days: float, rate_per_day: float) -> float:
    """``value·exp(−λ·Δt)`` (Δt < 0, a clock skew, counts as 0)."""
    return value * math.exp(-rate_per_day * max(elapsed_days, 0.0))


def impact_after_use(
    impact: float, days_since_impact: float, rate_per_day: float, outcome: float, step: float
) -> float:
    """The usage-impact accumulator after one more use.

    Agent KB D.3 sums ``UsageImpact(E, t_i)`` over uses; each use's impact decays like quality,
    so the sum is kept as one number and the time it was last brought up to date:
    ``Σ_i step·(2·outcome_i − 1)·exp(−λ(t − t_i))``. A success adds ``step``, a failure takes it
    away, and a partial outcome adds in proportion.
    """
    _unit(outcome, "outcome")
    return decayed(impact, days_since_impact, rate_per_day) + step * (2.0 * outcome - 1.0)


def utility(
    quality: float, days_since_recent: float, rate_per_day: float,
    impact: float = 0.0, days_since_impact: float = 0.0,
) -> float:
    """Agent KB D.3: ``U(E, t) = Q·exp(−λ(t − t_recent)) + Σ usage impact``, clipped to [0, 1].

    ``t_recent`` is the last use, or the creation for an experience never used: utility decays
    unless the experience is reinforced.
    """
    value = decayed(quality, days_since_recent, rate_per_day) + decayed(impact, days_since_impact, rate_per_day)
    return min(max(value, 0.0), 1.0)


# The utility of an experience nobody has reported on yet (its prior quality, undecayed).
NEUTRAL_UTILITY = 0.5


def utility_factor(value: float, weight: float) -> float:
    """How utility scales a search score: ``(1 − w) + w·U/U₀``, U₀ = 0.5 the utility of a new
    experience, so an experience without feedback keeps its score (factor 1), a reinforced one
    gains up to ×(1 + w) and a failing or long-unused one loses up to ×(1 − w). Equal utilities
    leave the ranking alone; w = 0 turns the factor off."""
    return (1.0 - _unit(weight, "utility weight")) + weight * min(max(value, 0.0), 1.0) / NEUTRAL_UTILITY


def maintenance_score(succeeded: int, used: int, retrieved: int, epsilon: float = MAINTENANCE_EPSILON) -> float:
    """AutoRefine eq. 1: ``s/(u+ε) · log(1+u) · (1 + u/(r+ε))``.

    High when an experience is used often, succeeds when used and is used when retrieved; 0 for
    one never used (and for one used but never successful).
    """
    if min(succeeded, used, retrieved) < 0:
        raise ValueError("counters cannot be negative")
    return succeeded / (used + epsilon) * math.log1p(used) * (1.0 + used / (retrieved + epsilon))


def bottom_fraction(scores: Mapping[str, float], fraction: float) -> list[str]:
    """The ids of the lowest ``fraction`` of ``scores`` (rounded down, ties broken by id so the
    choice is reproducible), lowest first."""
    _unit(fraction, "fraction")
    count = math.floor(len(scores) * fraction + 1e-9)
    return [key for key, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]))[:count]]


def growth_checkpoint_reached(previous_total: int, new_total: int, first: int = 10) -> bool:
    """True when the count of experiences added crossed one of first, 2·first, 4·first, … —
    maintenance runs at exponentially spaced points of growth."""
    if first < 1:
        raise ValueError("first checkpoint must be at least 1")
    if new_total <= previous_total or new_total < first:
        return False
    checkpoint = first
    while checkpoint <= new_total:
        if checkpoint > previous_total:
            return True
        checkpoint *= 2
    return False


def next_growth_checkpoint(total: int, first: int = 10) -> int:
    """The smallest first·2^k above ``total``."""
    checkpoint = first
    while checkpoint <= total:
        checkpoint *= 2
    return checkpoint


Verdict = Literal["shared", "private", "rejected"]


def edv_verdict(votes: Mapping[str, bool]) -> tuple[Verdict, list[str]]:
    """EDV verify stage: unanimous approval → the shared bank; partial → the approvers' private
    banks; none (or no votes) → rejected, kept for audit. Returns the verdict and the approvers,
    sorted."""
    approvers = sorted(agent for agent, approved in votes.items() if approved)
    if votes and len(approvers) == len(votes):
        return "shared", approvers
    if approvers:
        return "private", approvers
    return "rejected", []


def ability(successes: int, attempts: int, prior_successes: float = 1.0, prior_attempts: float = 2.0) -> float:
    """An agent's success rate in a domain, smoothed towards ``prior_successes/prior_attempts``
    (Laplace: (s + 1)/(n + 2)), so one lucky attempt does not outrank a long record."""
    if successes < 0 or attempts < successes:
        raise ValueError("need 0 <= successes <= attempts")
    return (successes + prior_successes) / (attempts + prior_attempts)


def reward_to_unit(reward: float | None, neutral: float = 0.5) -> float:
    """A step reward in [−1, 1] on the [0, 1] scale of similarities; unknown → ``neutral``."""
    if reward is None:
        return neutral
    return (min(max(reward, -1.0), 1.0) + 1.0) / 2.0


def step_score(similarity: float, reward: float | None, alpha: float = 0.5) -> float:
    """MAEL step-wise retrieval: ``α·similarity + (1 − α)·reward`` (reward mapped to [0, 1])."""
    _unit(alpha, "alpha")
    return alpha * similarity + (1.0 - alpha) * reward_to_unit(reward)


def running_mean(mean: float | None, count: int, value: float) -> tuple[float, int]:
    """The mean after one more value (a step's reward over every report of it)."""
    if mean is None or count <= 0:
        return value, 1
    return (mean * count + value) / (count + 1), count + 1


def outcome_evidence(similarities: Sequence[float], outcomes: Sequence[float], floor: float = 0.9,
                     sharpness: float = 4.0) -> float:
    """What this experience's past outcomes on tasks like the query say (task-conditioned feedback):
    ``Σ w_i·(2·outcome_i − 1)`` with ``w_i = ((cos_i − floor)/(1 − floor))^sharpness`` for the
    outcomes whose task has cosine ``cos_i`` > ``floor`` with the query, 0 otherwise. The same task
    weighs 1; a merely related one next to nothing — an experience that failed someone else's
    kind of task is not held against this one."""
    if len(similarities) != len(outcomes):
        raise ValueError("one similarity per outcome")
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must be in [0, 1), not {floor!r}")
    evidence = 0.0
    for cosine, outcome in zip(similarities, outcomes, strict=True):
        if cosine > floor:
            weight = min((cosine - floor) / (1.0 - floor), 1.0) ** sharpness
            evidence += weight * (2.0 * _unit(outcome, "outcome") - 1.0)
    return evidence


# The context factor's range: four failures on this very task cost at most ×0.25.
CONTEXT_FACTOR_RANGE = (0.25, 4.0)


def context_factor(evidence: float, strength: float) -> float:
    """How past outcomes on similar tasks scale a search score: ``exp(strength·evidence)``, in
    [0.25, 4]. One failure on the same task with strength 0.7 halves the score; one success doubles it."""
    low, high = CONTEXT_FACTOR_RANGE
    return min(max(math.exp(strength * evidence), low), high)
