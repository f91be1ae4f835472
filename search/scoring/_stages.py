"""The student phase's relevance before weighting (docs/design.md §3): the stage weight λ(t) and the fine
score it blends with the coarse one (Agent KB §A.1), and the lexical score's scale.

The blend itself, the coarse score and the hybrid of lexical and semantic scores (Agent KB §E.2)
are computed, vectorised over the candidates, by :func:`~kbgraph.search.scoring.direct_scores`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from kbgraph.search.scoring._checks import FloatArray, _finite, _scores, _similarity, _unit_interval

LambdaKind = Literal["exponential", "linear", "constant"]


def fine_score(best_cosines: Sequence[float]) -> float:
    """Fine (step-level) score ``S_fine = (1/m) Σ_j max_ℓ cos(s_ℓ, ŝ_j)`` (Agent KB §A.1, docs/design.md §3).

    ``best_cosines`` holds, for each of the m steps executed so far ``ŝ_1..ŝ_m``, the cosine of the
    candidate experience's step most like it (the step index gives that max, or the bound below
    which it stopped returning steps). Each is clamped to [0, 1] (an executed step with no
    positively similar candidate step contributes 0), and the mean over the m executed steps (the
    paper sums; docs/design.md divides by m) keeps the score in [0, 1]. 0.0 when no step was executed.
    """
    if not best_cosines:
        return 0.0
    return float(np.mean([_similarity(c, f"best_cosines[{i}]") for i, c in enumerate(best_cosines)]))


def lambda_schedule(
    t: float,
    kind: LambdaKind,
    rate: float,
    floor: float,
) -> float:
    """The stage weight λ(t) of ``S(t) = λ(t)·S_coarse + (1−λ(t))·S_fine`` (Agent KB §A.1).

    ``t`` is the number of steps executed so far (t ≥ 0). Every kind gives λ(0) = 1 (nothing
    executed: only the problem-goal match counts), is non-increasing in t and never below ``floor``:

    - ``"exponential"``: ``λ(t) = max(floor, exp(−rate·t))``;
    - ``"linear"``: ``λ(t) = max(floor, 1 − rate·t)``;
    - ``"constant"``: ``λ(0) = 1``, then ``λ(t) = max(floor, 1 − rate)`` for every t > 0 (a fixed
      blend as soon as any step has been executed).

    ``kind``, ``rate`` and ``floor`` are ``SearchWeights.coarse.lambda_kind``, ``lambda_rate`` and
    ``lambda_floor``. ``rate`` must be finite and ≥ 0; ``floor`` in [0, 1]; otherwise ValueError.
    """
    steps = _finite(t, "t")
    if steps < 0:
        raise ValueError(f"t must be >= 0 (steps executed so far), got {steps}")
    speed = _finite(rate, "rate")
    if speed < 0:
        raise ValueError(f"rate must be >= 0, got {speed}")
    lowest = _unit_interval(floor, "floor")
    if steps == 0:
        return 1.0
    if kind == "exponential":
        value = math.exp(-speed * steps)
    elif kind == "linear":
        value = 1.0 - speed * steps
    elif kind == "constant":
        value = 1.0 - speed
    else:
        raise ValueError(f"kind must be 'exponential', 'linear' or 'constant', got {kind!r}")
    return min(1.0, max(lowest, value))


def max_normalise(scores: npt.ArrayLike) -> FloatArray:
    """Non-negative scores (BM25) relative to the best of one query's candidates: ``x / max``.

    0 means no match, so it is the natural bottom: two candidates that match almost equally keep
    almost equal scores, where min-max over them would stretch a small length difference to the
    whole [0, 1] range. All zeros (or an empty input) stay zeros; a negative, NaN or infinite score
    raises ValueError.
    """
    array = _scores(scores, "scores")
    if array.size and float(array.min()) < 0.0:
        raise ValueError("scores must be >= 0")
    high = float(array.max()) if array.size else 0.0
    if high <= 0.0:
        return np.zeros(array.shape, dtype=np.float64)
    normalised: FloatArray = array / high
    return normalised
