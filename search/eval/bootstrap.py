"""Judging a change by statistics: the paired bootstrap over queries, per set and pooled.

Two rankings of the same queries (before and after a change, or kbgraph with and without a
mechanism) give one nDCG change per query. A set's verdict is the mean change with its 95 %
interval, by resampling the queries with replacement (the paired bootstrap: each query keeps its
own pair, so what the two systems share cancels out). A set of a few dozen queries moves by ±0.05
from one or two queries, which is why a default is never chosen by the worst of many small sets
but by this rule (:func:`verdict`): the pooled leak-free change is positive with its interval
above 0, and no set's interval lies wholly below −0.02.

Pure and deterministic (a seeded generator): the same changes give the same interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel

__all__ = ["HARM_MARGIN", "RESAMPLES", "Interval", "Verdict", "paired_bootstrap", "verdict"]

#: Resamples of the bootstrap (the 2.5th and 97.5th percentiles of this many means).
RESAMPLES = 10_000
#: A set whose whole interval lies below −HARM_MARGIN vetoes a default.
HARM_MARGIN = 0.02


class Interval(BaseModel):
    """The mean per-query change of a set and its 95 % bootstrap interval."""

    queries: int
    mean: float
    low: float
    high: float


class Verdict(BaseModel):
    """Whether a change may become a default: ``adopt`` when the pooled change's interval lies
    above 0 and no set's lies wholly below −:data:`HARM_MARGIN` (``harmed`` names those)."""

    adopt: bool
    pooled: Interval
    harmed: list[str]


def paired_bootstrap(changes: Sequence[float], resamples: int = RESAMPLES, seed: int = 0) -> Interval:
    """The mean of ``changes`` (after − before, one per query) and its 95 % percentile interval
    over ``resamples`` resamples of the queries. No queries: a mean of 0 and an interval [0, 0]."""
    values = np.asarray(changes, dtype=np.float64).reshape(-1)
    if values.size and not np.isfinite(values).all():
        raise ValueError("changes contain NaN or infinite values")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if values.size == 0:
        return Interval(queries=0, mean=0.0, low=0.0, high=0.0)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, values.size, size=(resamples, values.size))
    means = values[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Interval(queries=int(values.size), mean=round(float(values.mean()), 6),
                    low=round(float(low), 6), high=round(float(high), 6))


def verdict(changes_by_set: Mapping[str, Sequence[float]], resamples: int = RESAMPLES, seed: int = 0) -> Verdict:
    """The adoption rule over sets of per-query changes (each set's leak-free ones): pooled over
    every query of every set, and per set."""
    pooled = paired_bootstrap([c for changes in changes_by_set.values() for c in changes], resamples, seed)
    harmed = [name for name, changes in changes_by_set.items()
              if changes and paired_bootstrap(changes, resamples, seed).high < -HARM_MARGIN]
    return Verdict(adopt=pooled.low > 0 and not harmed, pooled=pooled, harmed=harmed)
