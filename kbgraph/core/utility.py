"""Pure functions of the learning loop (docs/design.md §4–5): quality, utility with time decay, the
AutoRefine maintenance score, the EDV verdict and the ability estimate.

Nothing here touches the database; :mod:`kbgraph.learning.feedback`, :mod:`kbgraph.learning.maintenance` and
:mod:`kbgraph.learning.agents` apply them (the Cypher files compute the same formulas in the database
where a value must be read and written in one transaction). How a learnt value weighs a search score
(the utility factor, the task-conditioned context factor, MAEL's step score) is a ranking formula,
in :mod:`kbgraph.search.scoring`, which reads utility through the Cypher of the search queries
(pinned equal to :func:`utility` by tests/search/scoring/test_utility_in_cypher.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

# AutoRefine eq. 1's ε: keeps s/u finite for unused experiences.
MAINTENANCE_EPSILON = 0.01


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


def calendar_days_between(earlier: datetime | None, later: datetime) -> int:
    """Whole calendar days (UTC) from ``earlier``'s date to ``later``'s; 0 when ``earlier`` is
    unknown or in the future. Utility decays by these, in the searches and wherever it is
    reported (kb.learning_state, maintenance, the report, ``top_by_utility``), so a reader sees
    the number the ranking used. Decayed by the second, two experiences stored a second apart
    with the same quality would differ in the seventh decimal, which of two otherwise equal hits
    comes first would change from one second to the next, and two ways of asking one experience's
    utility a few seconds apart would disagree. By calendar day, experiences of the same day stay
    tied (their order falls to their ids) and an older day always weighs less."""
    if earlier is None:
        return 0
    return max((later.astimezone(UTC).date() - earlier.astimezone(UTC).date()).days, 0)


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
    away, and a partial outcome adds in proportion. ``feedback_used.cypher`` keeps the sum in the
    database the same way (days there are the exact time between two outcomes); tests/kbgraph/
    learning/test_feedback.py pins the two equal.
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


def running_mean(mean: float | None, count: int, value: float) -> tuple[float, int]:
    """The mean after one more value (a step's reward over every report of it)."""
    if mean is None or count <= 0:
        return value, 1
    return (mean * count + value) / (count + 1), count + 1
