"""Concept vectors for clustering: labels normalised, a label's embedding mixed with its context's,
centroids and exact nearest neighbours. Pure numpy; the rules are in :mod:`kbgraph.ingest.dedupe`."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

#: Share of the context embedding in a concept's clustering vector (0 = label only).
DEFAULT_CONTEXT_WEIGHT = 0.5

# Cosines closer than this are a tie (float noise from summing in a different order).
TIE = 1e-6


def normalise_label(label: str) -> str:
    """The key under which two labels are the same concept: NFC, case-folded, white space collapsed."""
    return " ".join(unicodedata.normalize("NFC", label).casefold().split())


def concept_context(insights: Sequence[str], actions: Sequence[str] = ()) -> str:
    """The context text of a concept: its insight sentences, then the workflow's action names.

    Action names are kept as written (``return_delivered_order_items``): MiniLM splits them into
    word pieces anyway, and measured that way they separate families slightly better than with
    spaces. Repeated insights or actions are listed once, in first-seen order.
    """
    unique_insights = list(dict.fromkeys(s.strip() for s in insights if s.strip()))
    unique_actions = list(dict.fromkeys(a.strip() for a in actions if a.strip()))
    text = " ".join(unique_insights)
    if unique_actions:
        text = f"{text} Actions: {', '.join(unique_actions)}".strip()
    return text


def checked_unit_rows(array: npt.ArrayLike) -> npt.NDArray[np.float64]:
    rows = np.asarray(array, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-d array of vectors, got shape {rows.shape}")
    if not np.isfinite(rows).all():
        raise ValueError("vectors contain NaN or infinite values")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: npt.NDArray[np.float64] = rows / norms
    return unit


def concept_vectors(
    label_vectors: npt.ArrayLike, context_vectors: npt.ArrayLike,
    context_weight: float = DEFAULT_CONTEXT_WEIGHT,
) -> Vectors:
    """Unit vectors for clustering: ``(1 - w) · label + w · context``, re-normalised row by row.

    A zero context row (a concept without context) leaves the label's direction unchanged.
    """
    if not 0.0 <= context_weight <= 1.0:
        raise ValueError(f"context_weight must be within [0, 1], not {context_weight}")
    labels = checked_unit_rows(label_vectors)
    contexts = checked_unit_rows(context_vectors)
    if labels.shape != contexts.shape:
        raise ValueError(f"label vectors {labels.shape} and context vectors {contexts.shape} differ in shape")
    mixed = checked_unit_rows((1.0 - context_weight) * labels + context_weight * contexts)
    return mixed.astype(np.float32)


def centroid(vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    mean = vectors.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    result: npt.NDArray[np.float64] = mean / norm if norm > 0 else mean
    return result


def nearest_neighbours(
    vectors: npt.NDArray[np.float64], k: int, chunk: int = 1024,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Exact cosine k-nearest neighbours (self first), computed in row chunks to bound memory.

    Handed to UMAP as ``precomputed_knn``: below 4,096 points UMAP would otherwise build the full
    distance matrix and a numba k-NN over it, which measured 8-9 s of its 11 s on 3,000 concepts;
    this takes well under a second.
    """
    n = len(vectors)
    indices = np.empty((n, k), dtype=np.int64)
    distances = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        similarity = vectors[start:stop] @ vectors.T
        rows = np.arange(stop - start)
        similarity[rows, rows + start] = np.inf  # each point is its own first neighbour
        top = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        top_similarity = np.take_along_axis(similarity, top, axis=1)
        # Sort by similarity, ties by index: the same input always gives the same graph.
        order = np.lexsort((top, -top_similarity), axis=1)
        top = np.take_along_axis(top, order, axis=1)
        top_similarity = np.take_along_axis(top_similarity, order, axis=1)
        top_similarity[:, 0] = 1.0
        indices[start:stop] = top
        distances[start:stop] = np.clip(1.0 - top_similarity, 0.0, 2.0)
    return indices, distances
