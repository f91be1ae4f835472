"""Similarities between vectors (docs/design.md §1, §3): Neo4j's index score back to a cosine, and the
plain cosine (of two domain names' embeddings, for :func:`~kbgraph.search.scoring.domain_distance`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kbgraph.search.scoring._checks import SIMILARITY_SLACK, _finite, _same_dimension, _vector


def neo4j_to_cosine(score: float) -> float:
    """Converts a Neo4j cosine vector-index score back to the cosine: ``cos = 2·score − 1``.

    Neo4j reports cosine similarity as ``score = (1 + cos) / 2`` in [0, 1] (docs/design.md §1); scores must
    be converted before they are mixed with anything else. A score outside [0, 1] by more than the
    rounding slack raises ValueError; the result is clamped to [-1, 1] to absorb float32 rounding.
    """
    number = _finite(score, "score")
    if not -SIMILARITY_SLACK <= number <= 1.0 + SIMILARITY_SLACK:
        raise ValueError(f"score must be a Neo4j cosine score in [0, 1], got {number}")
    return min(1.0, max(-1.0, 2.0 * number - 1.0))


def cosine_similarity(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Plain cosine ``a·b / (‖a‖·‖b‖)`` in [-1, 1]; 0.0 when either vector is zero. Not clamped."""
    left, right = _vector(a, "a"), _vector(b, "b")
    _same_dimension(left, right, "a", "b")
    norm = float(np.linalg.norm(left) * np.linalg.norm(right))
    if norm == 0.0:
        return 0.0
    return min(1.0, max(-1.0, float(left @ right) / norm))
