"""The learning loop's pure functions, kept importable from their old place: they moved to
:mod:`kbgraph.core.utility` (feedback, maintenance and the agents use them too, and they sit beside
search, not above it)."""

from __future__ import annotations

from kbgraph.core.utility import (
    CONTEXT_FACTOR_RANGE,
    MAINTENANCE_EPSILON,
    NEUTRAL_UTILITY,
    SECONDS_PER_DAY,
    Verdict,
    ability,
    bottom_fraction,
    context_factor,
    days_between,
    decay_rate_per_day,
    decayed,
    edv_verdict,
    growth_checkpoint_reached,
    impact_after_use,
    maintenance_score,
    next_growth_checkpoint,
    outcome_evidence,
    quality_update,
    reward_to_unit,
    running_mean,
    step_score,
    utility,
    utility_factor,
)

__all__ = [
    "CONTEXT_FACTOR_RANGE", "MAINTENANCE_EPSILON", "NEUTRAL_UTILITY", "SECONDS_PER_DAY", "Verdict", "ability",
    "bottom_fraction", "context_factor", "days_between", "decay_rate_per_day", "decayed", "edv_verdict",
    "growth_checkpoint_reached", "impact_after_use", "maintenance_score", "next_growth_checkpoint",
    "outcome_evidence", "quality_update", "reward_to_unit", "running_mean", "step_score", "utility",
    "utility_factor",
]
