"""A group's representative, and attaching new concepts to existing meta-concepts (incremental
ingests): nearest centroid when close enough, never across operations."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbgraph.ingest.dedupe._vectors import TIE, centroid, checked_unit_rows
from kbgraph.core.operation_keys import cannot_link, operation_key

#: A new concept (or an HDBSCAN noise point) joins an existing group when its cosine to the
#: group's centroid is at least this. Higher than the merge threshold: a centroid averages its
#: members' differences away, so it sits nearer to each of them than they sit to one another.
DEFAULT_ATTACH_THRESHOLD = 0.6


def representative(group: Sequence[int], labels: Sequence[str], vectors: npt.ArrayLike) -> int:
    """The member closest to the group's centroid; ties go to the shortest, then alphabetically
    first label (short labels make better meta-concept names)."""
    if not group:
        raise ValueError("an empty group has no representative")
    rows = checked_unit_rows(vectors)
    members = list(group)
    similarities = rows[members] @ centroid(rows[members])
    best = float(similarities.max())
    tied = [m for m, s in zip(members, similarities.tolist(), strict=True) if s >= best - TIE]
    return min(tied, key=lambda m: (len(labels[m]), labels[m].casefold(), labels[m], m))


def attach(
    vectors: npt.ArrayLike, meta_vectors: npt.ArrayLike, threshold: float = DEFAULT_ATTACH_THRESHOLD,
    labels: Sequence[str] | None = None, meta_labels: Sequence[str] | None = None,
) -> list[int | None]:
    """For each vector, the index of the most similar meta-concept vector when their cosine is at
    least ``threshold``, else None. Ties go to the lower index. Meta-concept vectors are best the
    normalised centroids of their members' :func:`concept_vectors`. Given ``labels`` (the
    concepts') and ``meta_labels`` (the meta-concepts' names), a concept never attaches to a
    meta-concept of another operation (:func:`kbgraph.core.operation_keys.cannot_link`)."""
    if np.asarray(vectors).size == 0:
        return []
    rows = checked_unit_rows(vectors)
    if np.asarray(meta_vectors).size == 0:
        return [None] * len(rows)
    metas = checked_unit_rows(meta_vectors)
    if rows.shape[1] != metas.shape[1]:
        raise ValueError(f"vectors have dimension {rows.shape[1]}, meta-concept vectors {metas.shape[1]}")
    blocked = np.zeros((len(rows), len(metas)), dtype=bool)
    if labels is not None and meta_labels is not None:
        if len(labels) != len(rows) or len(meta_labels) != len(metas):
            raise ValueError("one label per vector and one per meta-concept vector")
        keys, meta_keys = [operation_key(x) for x in labels], [operation_key(x) for x in meta_labels]
        blocked = np.array([[cannot_link(a, b) for b in meta_keys] for a in keys], dtype=bool).reshape(blocked.shape)
    return attach_unblocked(rows, metas, threshold, blocked)


def attach_unblocked(
    rows: npt.ArrayLike, metas: npt.ArrayLike, threshold: float, blocked: npt.NDArray[np.bool_],
) -> list[int | None]:
    similarities = checked_unit_rows(rows) @ checked_unit_rows(metas).T
    similarities[blocked] = -np.inf
    result: list[int | None] = []
    for row in similarities:
        best = int(np.argmax(row))  # first maximum: the lower index wins a tie
        result.append(best if row[best] >= threshold - TIE else None)
    return result
