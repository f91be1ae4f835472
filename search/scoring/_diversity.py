"""Diversity of the final candidates (docs/design.md §3): Maximal Marginal Relevance (AutoRefine §3)."""

from __future__ import annotations

import operator

import numpy as np
import numpy.typing as npt

from kbgraph.search.scoring._checks import _scores, _unit_interval


def _count(k: int) -> int:
    """``k`` as a count of results: an integer (not a bool) ≥ 0, else ValueError."""
    try:
        count = operator.index(k)
    except TypeError:
        raise ValueError(f"k must be an integer, got {k!r}") from None
    if isinstance(k, bool):
        raise ValueError("k must be an integer, not a bool")
    if count < 0:
        raise ValueError(f"k must be >= 0, got {count}")
    return count


def mmr_from_similarity(
    candidate_scores: npt.ArrayLike,
    similarity: npt.ArrayLike,
    k: int,
    lam: float,
) -> list[int]:
    """Maximal Marginal Relevance selection (AutoRefine §3; docs/design.md §3)::

        MMR(p_j) = λ·rel(p_j) − (1−λ)·max_{p_s ∈ selected} sim(p_j, p_s)

    Greedy: the first pick is the most relevant candidate, then each pick maximises MMR over the
    rest. ``candidate_scores`` are the n relevance scores, ``similarity`` the n×n cosine similarity
    matrix of the candidates (retrieval computes it from their problem+goal vectors), ``lam`` λ
    (``SearchWeights.selection.mmr_lambda``; 1 is plain relevance order). Returns the indices of up to ``k``
    candidates in the order picked (all of them when k ≥ n; ``[]`` when k = 0). Ties go to the
    lowest index, so the result is deterministic. k < 0, λ outside [0, 1], NaN/inf or a matrix
    that is not n×n raise ValueError.
    """
    count = _count(k)
    weight = _unit_interval(lam, "lam")
    relevance = _scores(candidate_scores, "candidate_scores")
    n = relevance.size
    matrix = np.asarray(similarity, dtype=np.float64)
    if matrix.shape != (n, n):
        raise ValueError(f"similarity must be {n}x{n} for {n} candidates, got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("similarity must be finite")
    if n == 0 or count == 0:
        return []
    selected: list[int] = []
    available = np.ones(n, dtype=bool)
    # Highest similarity of each candidate to anything selected so far (none yet: no penalty).
    redundancy = np.full(n, -np.inf)
    while len(selected) < min(count, n):
        if selected:
            objective = weight * relevance - (1.0 - weight) * redundancy
        else:
            objective = relevance.copy()
        objective[~available] = -np.inf
        best = int(np.argmax(objective))  # argmax returns the first maximum: lowest index wins
        selected.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, matrix[best])
    return selected
