"""The student phase's relevance before weighting (docs/design.md §3): the coarse and fine scores, their
stage blend λ(t) (Agent KB §A.1), and the hybrid of lexical and semantic scores (Agent KB §E.2)."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from kbgraph.search.scoring._checks import (
    SIMILARITY_SLACK, FloatArray, _finite, _rows, _same_dimension, _scores, _unit_interval, _unit_rows, _vector,
)
from kbgraph.search.scoring._vectors import cosine_similarity

LambdaKind = Literal["exponential", "linear", "constant"]


def coarse_score(query_pg: npt.ArrayLike, candidate_pg: npt.ArrayLike) -> float:
    """Coarse (workflow-level) score ``S_coarse = cos(f(π)+f(γ), f(π̂)+f(γ̂))`` (Agent KB §A.1).

    Takes the **combined** problem-goal vectors, one 1-d vector per side: either an experience's
    ``pg_embedding`` (the embedding of its problem and goal text) or the output of
    :func:`combine_problem_goal` when problem and goal were embedded separately. Never a pair.

    Returns the cosine clamped to [0, 1] (negative cosine counts as no similarity), so that it can
    be blended with :func:`fine_score`. The θ_coarse cut-off is applied by the caller.
    """
    query, candidate = _vector(query_pg, "query_pg"), _vector(candidate_pg, "candidate_pg")
    _same_dimension(query, candidate, "query_pg", "candidate_pg")
    return max(0.0, cosine_similarity(query, candidate))


def fine_score(query_steps: npt.ArrayLike, candidate_steps: npt.ArrayLike) -> float:
    """Fine (step-level) score ``S_fine = (1/m) Σ_j max_ℓ cos(s_ℓ, ŝ_j)`` (Agent KB §A.1, docs/design.md §3).

    ``query_steps`` is the m×d matrix of the steps executed so far ``ŝ_1..ŝ_m``; ``candidate_steps``
    the n×d matrix of a candidate experience's steps ``s_1..s_n``. A 1-d vector counts as one step.
    Each executed step is matched to its most similar candidate step; the mean over the m executed
    steps (the paper sums; docs/design.md divides by m) keeps the score in [0, 1]. Each cosine is clamped
    at 0 first, so an executed step with no positively similar candidate step contributes 0.

    Returns 0.0 when either side has no steps (nothing executed yet, or a step-less experience).
    """
    query, candidate = _rows(query_steps, "query_steps"), _rows(candidate_steps, "candidate_steps")
    if query.shape[0] == 0 or candidate.shape[0] == 0:
        return 0.0
    _same_dimension(query, candidate, "query_steps", "candidate_steps")
    cosines = np.clip(_unit_rows(query) @ _unit_rows(candidate).T, 0.0, 1.0)  # m×n
    return float(np.clip(cosines.max(axis=1).mean(), 0.0, 1.0))


# --------------------------------------------------------------------------- stage blend


def lambda_schedule(
    t: float,
    kind: LambdaKind = "exponential",
    rate: float = 0.25,
    floor: float = 0.2,
) -> float:
    """The stage weight λ(t) of ``S(t) = λ(t)·S_coarse + (1−λ(t))·S_fine`` (Agent KB §A.1).

    ``t`` is the number of steps executed so far (t ≥ 0). Every kind gives λ(0) = 1 (nothing
    executed: only the problem-goal match counts), is non-increasing in t and never below ``floor``:

    - ``"exponential"``: ``λ(t) = max(floor, exp(−rate·t))``;
    - ``"linear"``: ``λ(t) = max(floor, 1 − rate·t)``;
    - ``"constant"``: ``λ(0) = 1``, then ``λ(t) = max(floor, 1 − rate)`` for every t > 0 (a fixed
      blend as soon as any step has been executed).

    ``rate`` must be finite and ≥ 0; ``floor`` in [0, 1]; otherwise ValueError.
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


def stage_blend(coarse: float, fine: float, lam: float) -> float:
    """``S(t) = λ·S_coarse + (1−λ)·S_fine`` (Agent KB §A.1); λ in [0, 1], scores finite."""
    weight = _unit_interval(lam, "lam")
    return weight * _finite(coarse, "coarse") + (1.0 - weight) * _finite(fine, "fine")


# --------------------------------------------------------------------------- hybrid lexical + semantic


def minmax_normalise(scores: npt.ArrayLike) -> FloatArray:
    """Min-max normalisation over one query's candidate set: ``(x − min) / (max − min)``.

    Used on full-text (Lucene) scores, which are unbounded and only comparable within one query.
    When all scores are equal there is no spread to normalise: the result is all **1.0** when the
    common score is positive (every candidate matched the text equally well) and all **0.0**
    otherwise (no candidate matched; give a candidate absent from the full-text results score 0).
    An empty input gives an empty array; NaN or infinite scores raise ValueError.
    """
    array = _scores(scores, "scores")
    if array.size == 0:
        return np.zeros(0, dtype=np.float64)
    low, high = float(array.min()), float(array.max())
    if high == low:
        return np.full(array.shape, 1.0 if high > 0 else 0.0, dtype=np.float64)
    normalised: FloatArray = (array - low) / (high - low)
    return normalised


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


def hybrid_score(semantic: npt.ArrayLike, lexical: npt.ArrayLike, alpha: float = 0.5) -> FloatArray:
    """Hybrid retrieval ``α·text + (1−α)·semantic`` (Agent KB §E.2; α = 0.5 was best there).

    ``semantic`` are cosine similarities of the candidates (convert Neo4j index scores with
    :func:`neo4j_to_cosine` first), clamped to [0, 1]. ``lexical`` are the raw full-text scores of
    the same candidates, in the same order, normalised per query with :func:`minmax_normalise`.
    ``alpha`` weighs the lexical part and must be in [0, 1]. Returns one score in [0, 1] per
    candidate.
    """
    weight = _unit_interval(alpha, "alpha")
    sem = _scores(semantic, "semantic")
    lex = _scores(lexical, "lexical")
    if sem.shape != lex.shape:
        raise ValueError(
            f"semantic and lexical must score the same candidates ({sem.size} vs {lex.size} scores)"
        )
    if sem.size and (sem.min() < -1.0 - SIMILARITY_SLACK or sem.max() > 1.0 + SIMILARITY_SLACK):
        raise ValueError("semantic scores must be cosine similarities in [-1, 1]")
    combined: FloatArray = weight * minmax_normalise(lex) + (1.0 - weight) * np.clip(sem, 0.0, 1.0)
    return combined
