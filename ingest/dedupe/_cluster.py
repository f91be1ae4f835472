"""Clustering concepts into groups of the same concept: complete linkage for small sets, UMAP +
HDBSCAN regions merged region by region (and stitched back) for large ones."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbgraph.ingest.dedupe._attach import DEFAULT_ATTACH_THRESHOLD, attach_unblocked
from kbgraph.ingest.dedupe._vectors import TIE, centroid, checked_unit_rows, nearest_neighbours, normalise_label
from kbgraph.core.operation_keys import cannot_link, operation_key

#: Two concepts may share a group only if their vectors' cosine is at least this (complete linkage:
#: every pair in a group, not just the nearest one, so groups cannot drift by chaining).
DEFAULT_MERGE_THRESHOLD = 0.55
#: From this many distinct labels on, cluster with UMAP + HDBSCAN; below it, agglomerative only.
DEFAULT_UMAP_MIN_CONCEPTS = 50
#: UMAP output dimension: a few components are enough for HDBSCAN's density estimate and keep it fast.
DEFAULT_UMAP_COMPONENTS = 5
#: UMAP neighbourhood size (its default). HDBSCAN's smallest region (also its min_samples):
#: regions are topics, not concepts. Over neighbours 5/10/15/30 × sizes 2/3/5/10 every setting stayed
#: within 0.04 ARI of global agglomerative merging on the six measured subsets; 15 × 3 was closest
#: (largest difference 0.007).
DEFAULT_UMAP_NEIGHBORS = 15
DEFAULT_MIN_CLUSTER_SIZE = 3

# 200 epochs instead of UMAP's 500 for small sets halve its time with no measured change in groups.
_UMAP_INIT = "spectral"
_UMAP_EPOCHS = 200


def _complete_linkage(
    vectors: npt.NDArray[np.float64], threshold: float, apart: npt.NDArray[np.bool_] | None = None,
) -> list[list[int]]:
    """Groups (lists of row indices) in which every pair has cosine >= threshold and no pair is
    marked ``apart`` (different operations: the farthest distance there is, which complete
    linkage never merges)."""
    n = len(vectors)
    if n <= 1:
        return [list(range(n))]
    from sklearn.cluster import AgglomerativeClustering

    # Precomputed distances: exact cosine of unit rows, clipped so rounding cannot go negative.
    distances = np.clip(1.0 - vectors @ vectors.T, 0.0, 2.0)
    if apart is not None:
        distances[apart] = 2.0
    np.fill_diagonal(distances, 0.0)
    model = AgglomerativeClustering(
        # sklearn merges strictly below the distance threshold; TIE makes "cosine >= threshold" hold.
        n_clusters=None, metric="precomputed", linkage="complete", distance_threshold=1.0 - threshold + TIE,
    )
    assignment = model.fit_predict(distances)
    return _groups_from_assignment(assignment)


def _groups_from_assignment(assignment: npt.ArrayLike) -> list[list[int]]:
    """Cluster ids -> groups of indices, each sorted, ordered by first member (ids are arbitrary)."""
    by_id: dict[int, list[int]] = {}
    for index, cluster in enumerate(np.asarray(assignment).tolist()):
        by_id.setdefault(int(cluster), []).append(index)
    return sorted(by_id.values(), key=lambda group: group[0])


def _umap_hdbscan_blocks(
    vectors: npt.NDArray[np.float64], *, random_state: int, components: int, neighbors: int,
    min_cluster_size: int,
) -> tuple[list[list[int]], list[int]]:
    """Dense regions found by UMAP + HDBSCAN (lists of row indices), and the noise points."""
    import hdbscan
    import umap

    n = len(vectors)
    k = min(neighbors, n - 1)
    # Fixed random_state: UMAP then runs single-threaded, the price of reproducible groups.
    with warnings.catch_warnings():
        # UMAP warns that a fixed random_state disables parallelism (intended: reproducible groups)
        # and that precomputed neighbours disable transform() (not needed).
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(
            n_neighbors=k, n_components=min(components, n - 2), min_dist=0.0, metric="cosine",
            random_state=random_state, init=_UMAP_INIT, n_epochs=_UMAP_EPOCHS,
            precomputed_knn=nearest_neighbours(vectors, k),
        )
        embedded = reducer.fit_transform(vectors.astype(np.float32))
    clusterer = hdbscan.HDBSCAN(
        min_cluster_size=min_cluster_size, min_samples=min_cluster_size, cluster_selection_method="eom",
    )
    assignment = np.asarray(clusterer.fit_predict(embedded))
    blocks = [np.flatnonzero(assignment == c).tolist() for c in sorted(set(assignment.tolist())) if c >= 0]
    noise = np.flatnonzero(assignment < 0).tolist()
    return blocks, noise


def _cluster_large(
    vectors: npt.NDArray[np.float64], *, random_state: int, components: int, neighbors: int,
    min_cluster_size: int, merge_threshold: float, attach_threshold: float, apart: npt.NDArray[np.bool_],
) -> list[list[int]]:
    """UMAP + HDBSCAN find the dense regions (roughly: topics), complete linkage splits each into concepts.

    HDBSCAN's own clusters are not used as concepts directly: measured on the labelled set, UMAP
    glues neighbouring concepts of a topic together ("book a flight" with "rebook to a different
    flight"), and with min_cluster_size 2 (needed for pairs of paraphrases) its clusters reach
    pairwise precision 0.12–0.74 only. As blocks, they keep the agglomerative step's quality while
    bounding its quadratic cost by the largest region instead of the whole set.
    """
    blocks, noise = _umap_hdbscan_blocks(
        vectors, random_state=random_state, components=components, neighbors=neighbors,
        min_cluster_size=min_cluster_size,
    )
    groups: list[list[int]] = []
    for block in blocks:
        for part in _complete_linkage(vectors[block], merge_threshold, apart[np.ix_(block, block)]):
            groups.append([block[i] for i in part])

    # Noise points (outside every dense region) join the nearest group when close enough. Centroids
    # are fixed before any of them joins, so the order they come in cannot matter.
    if noise and groups:
        centroids = np.stack([centroid(vectors[group]) for group in groups])
        # A noise point never joins a group holding another operation.
        blocked = np.array([[bool(apart[point, group].any()) for group in groups] for point in noise])
        targets = attach_unblocked(vectors[noise], centroids, attach_threshold, blocked)
    else:
        targets = [None] * len(noise)
    alone: list[int] = []
    for point, target in zip(noise, targets, strict=True):
        if target is None:
            alone.append(point)
        else:
            groups[target].append(point)
    # The rest are merged among themselves by the same rule: a lone pair of paraphrases is below
    # HDBSCAN's minimum cluster size, yet still one concept.
    if alone:
        for part in _complete_linkage(vectors[alone], merge_threshold, apart[np.ix_(alone, alone)]):
            groups.append([alone[i] for i in part])
    return _stitch(vectors, groups, merge_threshold, apart)


def _stitch(
    vectors: npt.NDArray[np.float64], groups: list[list[int]], threshold: float, apart: npt.NDArray[np.bool_],
    k: int = 10,
) -> list[list[int]]:
    """Merges groups across region boundaries while complete linkage still holds.

    UMAP occasionally puts one member of a family next to another topic, so HDBSCAN's regions cut
    the family in two (seen on planted families: three members in one region, the fourth in
    another). Candidate pairs are each group's ``k`` nearest groups by centroid with cosine >=
    ``threshold``, tried from the most similar down; a pair merges only if every cross pair of
    members has cosine >= ``threshold`` — the rule agglomerative merging applies within a region.
    """
    if len(groups) < 2:
        return groups
    centroids = np.stack([centroid(vectors[group]) for group in groups])
    neighbours, distances = nearest_neighbours(centroids, min(k + 1, len(groups)))
    candidates = sorted(
        {(float(1.0 - d), min(a, int(b)), max(a, int(b)))
         for a in range(len(groups)) for b, d in zip(neighbours[a][1:], distances[a][1:], strict=True)
         if 1.0 - d >= threshold - TIE and int(b) != a},
        key=lambda c: (-c[0], c[1], c[2]),
    )
    root = list(range(len(groups)))
    members = {i: list(group) for i, group in enumerate(groups)}

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    for _, a, b in candidates:
        ra, rb = find(a), find(b)
        if ra == rb:
            continue
        cross = vectors[members[ra]] @ vectors[members[rb]].T
        if float(cross.min()) >= threshold - TIE and not apart[np.ix_(members[ra], members[rb])].any():
            keep, gone = min(ra, rb), max(ra, rb)
            root[gone] = keep
            members[keep].extend(members.pop(gone))
    return list(members.values())


def cluster_concepts(
    vectors: npt.ArrayLike, labels: Sequence[str], *, random_state: int = 42,
    merge_threshold: float = DEFAULT_MERGE_THRESHOLD, attach_threshold: float = DEFAULT_ATTACH_THRESHOLD,
    umap_min_concepts: int = DEFAULT_UMAP_MIN_CONCEPTS, umap_components: int = DEFAULT_UMAP_COMPONENTS,
    umap_neighbors: int = DEFAULT_UMAP_NEIGHBORS, min_cluster_size: int = DEFAULT_MIN_CLUSTER_SIZE,
) -> list[list[int]]:
    """Groups of indices into ``labels``/``vectors`` that name the same concept.

    ``vectors`` are the clustering vectors of :func:`concept_vectors`, one row per label.

    - Labels equal up to case and white space (:func:`normalise_label`) always share a group; they
      are clustered as one point, their vectors' centroid.
    - Fewer than ``umap_min_concepts`` distinct labels (or fewer than ``umap_neighbors + 1``):
      complete-linkage agglomerative merging — two concepts share a group only when *every* pair
      in it has cosine >= ``merge_threshold``.
    - Otherwise UMAP (cosine, ``umap_components`` dimensions, ``umap_neighbors`` neighbours,
      ``random_state``) + HDBSCAN (``min_cluster_size``) cut the set into dense regions, and each
      region is merged by the same complete-linkage rule. HDBSCAN noise points join the nearest
      group when their cosine to its centroid is >= ``attach_threshold`` (the one exception to
      complete linkage); the others are merged among themselves. Finally groups that a region
      boundary split are stitched back together when complete linkage allows it.

    The result is a partition: every index appears in exactly one group; indices ascend within a
    group and groups are ordered by their first index. The same multiset of (label, vector) pairs
    gives the same partition whatever order it comes in.
    """
    if not labels:
        if np.asarray(vectors).size:
            raise ValueError("vectors given without labels")
        return []
    rows = checked_unit_rows(vectors)
    if len(rows) != len(labels):
        raise ValueError(f"{len(labels)} labels but {len(rows)} vectors")

    # Collapse exact duplicates and order by key, so neither duplicates nor input order matter.
    members_by_key: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        members_by_key.setdefault(normalise_label(label), []).append(index)
    keys = sorted(members_by_key)
    unique = np.stack([centroid(rows[_canonical_order(members_by_key[key], labels, rows)]) for key in keys])

    operations = [operation_key(key) for key in keys]
    apart = np.array([[cannot_link(a, b) for b in operations] for a in operations], dtype=bool).reshape(len(keys), len(keys))
    if len(keys) >= max(umap_min_concepts, umap_neighbors + 1):
        unique_groups = _cluster_large(
            unique, random_state=random_state, components=umap_components, neighbors=umap_neighbors,
            min_cluster_size=min_cluster_size, merge_threshold=merge_threshold, attach_threshold=attach_threshold,
            apart=apart,
        )
    else:
        unique_groups = _complete_linkage(unique, merge_threshold, apart)

    groups = [sorted(i for u in group for i in members_by_key[keys[u]]) for group in unique_groups]
    return sorted(groups, key=lambda group: group[0])


def _canonical_order(members: list[int], labels: Sequence[str], rows: npt.NDArray[np.float64]) -> list[int]:
    # Summing the same floats in another order can change the last bit, and UMAP's optimisation
    # may amplify that; a fixed order makes duplicates' centroids bit-identical.
    return sorted(members, key=lambda i: (labels[i], rows[i].tobytes()))

