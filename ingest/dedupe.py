"""Stage 4 — concept deduplication (BREW steps 3–4): paraphrased concept labels become one meta-concept.

Reflection produces a concept label per insight, independently per trajectory, so the same idea
arrives under many names ("return item", "send back a product", "return a delivered item"). This
module groups them. Everything here is pure and deterministic: no database, no model, a fixed
random state, and inputs sorted by normalised label internally, so the grouping does not depend on
the order the concepts arrive in.

1. :func:`concept_context` — the text saying where a concept came from (its insight sentences and
   the actions of its workflow); the caller embeds it next to the label.
2. :func:`concept_vectors` — mixes each label's embedding with its context's. Labels alone are too
   short: MiniLM puts "return item" and "send back a product" at cosine 0.48, below many unrelated
   pairs; with their shared context they are at 0.79.
3. :func:`cluster_concepts` — groups of indices. Exact duplicates (same label up to case and white
   space) are collapsed first, so they always land together. Every group obeys complete linkage at
   a cosine threshold (all pairs similar, no chaining). Small sets are clustered that way directly;
   large ones are first cut into dense regions by UMAP + HDBSCAN (DESIGN §2.4), then clustered region
   by region, and groups split by a region boundary are stitched back together.
4. :func:`representative` — the member that names the group's MetaConcept.
5. :func:`attach` — incremental ingests: the nearest existing meta-concept, when close enough.

Measurements behind the defaults (real all-MiniLM-L6-v2; the labelled set of 90 concepts in 40
families over retail, airline, banking, devops, data analysis and web admin that
``tests/ingest/test_dedupe.py`` carries, where hard negatives share a workflow's actions with
another family; "P/R" are pairwise precision/recall against the families):

- context weight (complete linkage, best threshold per weight): 0 (labels only) ARI 0.62,
  0.3 0.84, 0.4 0.90, **0.5 0.94 (P 0.985, R 0.89 at 0.55)**, 0.6 0.94, 0.7 0.91, 1.0 (context
  only) 0.84. 0.5 and 0.6 tie; 0.5 keeps the label an equal partner so that concepts which merely
  share a workflow stay apart. On a held-out set written afterwards (34 concepts, 19 families:
  telecom, git, spreadsheets, desktop) 0.5 is the only weight with ARI 1.0 at every threshold
  from 0.50 to 0.65 (labels only: 0.69 at 0.55).
- merge threshold 0.55, complete linkage, weight 0.5: P 0.985, R 0.89 (ARI 0.94); 0.45 P 0.77,
  0.50 P 0.85 (over-merging); 0.60 R 0.85, 0.65 R 0.73, 0.70 R 0.53. Average linkage peaks at
  0.60 with the same P and R 0.88; complete linkage gives the simpler guarantee.
- attach threshold 0.60 (cosine to a group's centroid; leave-one-out over the 90 concepts):
  78 attached to the right family, 3 to a wrong one, 1 left alone wrongly, 8 singletons correctly
  left alone; 0.55 attaches one more wrongly, 0.65 leaves 9 alone that belonged.
- UMAP + HDBSCAN from 50 distinct labels: on random subsets of the set above plus WebArena's 812
  intents (190 template families) of 36 to 902 concepts, the region-by-region result equals the
  global agglomerative one within ±0.015 ARI at every size, so the cut-off only decides cost.
  Used alone with min_cluster_size 2, HDBSCAN's clusters reach P 0.17–0.74 (UMAP glues neighbours
  like "book a flight" and "rebook to a different flight"), hence regions, not concepts. Below
  ~50 points (3 × UMAP's 15 neighbours) its neighbourhood graph spans most of the set.

Performance (2 shared cores): UMAP's numba code is compiled on the first call in each process,
about 7–12 s (importing umap the very first time on a machine compiles and caches more, ~25 s).
After that, 1,000 concepts take 0.6 s, 3,000 about 2 s, 5,000 about 3.5 s (exact k-NN in numpy,
200 UMAP epochs, single-threaded because of the fixed random_state). Global agglomerative merging
is faster up to that size (0.6 s at 3,000) but needs the full n × n matrix, which the regions avoid.
"""

from __future__ import annotations

import unicodedata
import warnings
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbgraph.ingest.operations import cannot_link, operation_key

Vectors = npt.NDArray[np.float32]

#: Share of the context embedding in a concept's clustering vector (0 = label only).
DEFAULT_CONTEXT_WEIGHT = 0.5
#: Two concepts may share a group only if their vectors' cosine is at least this (complete linkage:
#: every pair in a group, not just the nearest one, so groups cannot drift by chaining).
DEFAULT_MERGE_THRESHOLD = 0.55
#: A new concept (or an HDBSCAN noise point) joins an existing group when its cosine to the
#: group's centroid is at least this. Higher than the merge threshold: a centroid averages its
#: members' differences away, so it sits nearer to each of them than they sit to one another.
DEFAULT_ATTACH_THRESHOLD = 0.6
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

# Cosines closer than this are a tie (float noise from summing in a different order).
_TIE = 1e-6


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


def _unit_rows(array: npt.ArrayLike) -> npt.NDArray[np.float64]:
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
    labels = _unit_rows(label_vectors)
    contexts = _unit_rows(context_vectors)
    if labels.shape != contexts.shape:
        raise ValueError(f"label vectors {labels.shape} and context vectors {contexts.shape} differ in shape")
    mixed = _unit_rows((1.0 - context_weight) * labels + context_weight * contexts)
    return mixed.astype(np.float32)


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
        # sklearn merges strictly below the distance threshold; _TIE makes "cosine >= threshold" hold.
        n_clusters=None, metric="precomputed", linkage="complete", distance_threshold=1.0 - threshold + _TIE,
    )
    assignment = model.fit_predict(distances)
    return _groups_from_assignment(assignment)


def _groups_from_assignment(assignment: npt.ArrayLike) -> list[list[int]]:
    """Cluster ids -> groups of indices, each sorted, ordered by first member (ids are arbitrary)."""
    by_id: dict[int, list[int]] = {}
    for index, cluster in enumerate(np.asarray(assignment).tolist()):
        by_id.setdefault(int(cluster), []).append(index)
    return sorted(by_id.values(), key=lambda group: group[0])


def _centroid(vectors: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
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
        centroids = np.stack([_centroid(vectors[group]) for group in groups])
        # A noise point never joins a group holding another operation.
        blocked = np.array([[bool(apart[point, group].any()) for group in groups] for point in noise])
        targets = _attach_unblocked(vectors[noise], centroids, attach_threshold, blocked)
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
    centroids = np.stack([_centroid(vectors[group]) for group in groups])
    neighbours, distances = nearest_neighbours(centroids, min(k + 1, len(groups)))
    candidates = sorted(
        {(float(1.0 - d), min(a, int(b)), max(a, int(b)))
         for a in range(len(groups)) for b, d in zip(neighbours[a][1:], distances[a][1:], strict=True)
         if 1.0 - d >= threshold - _TIE and int(b) != a},
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
        if float(cross.min()) >= threshold - _TIE and not apart[np.ix_(members[ra], members[rb])].any():
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
    rows = _unit_rows(vectors)
    if len(rows) != len(labels):
        raise ValueError(f"{len(labels)} labels but {len(rows)} vectors")

    # Collapse exact duplicates and order by key, so neither duplicates nor input order matter.
    members_by_key: dict[str, list[int]] = {}
    for index, label in enumerate(labels):
        members_by_key.setdefault(normalise_label(label), []).append(index)
    keys = sorted(members_by_key)
    unique = np.stack([_centroid(rows[_canonical_order(members_by_key[key], labels, rows)]) for key in keys])

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


def representative(group: Sequence[int], labels: Sequence[str], vectors: npt.ArrayLike) -> int:
    """The member closest to the group's centroid; ties go to the shortest, then alphabetically
    first label (short labels make better meta-concept names)."""
    if not group:
        raise ValueError("an empty group has no representative")
    rows = _unit_rows(vectors)
    members = list(group)
    similarities = rows[members] @ _centroid(rows[members])
    best = float(similarities.max())
    tied = [m for m, s in zip(members, similarities.tolist(), strict=True) if s >= best - _TIE]
    return min(tied, key=lambda m: (len(labels[m]), labels[m].casefold(), labels[m], m))


def attach(
    vectors: npt.ArrayLike, meta_vectors: npt.ArrayLike, threshold: float = DEFAULT_ATTACH_THRESHOLD,
    labels: Sequence[str] | None = None, meta_labels: Sequence[str] | None = None,
) -> list[int | None]:
    """For each vector, the index of the most similar meta-concept vector when their cosine is at
    least ``threshold``, else None. Ties go to the lower index. Meta-concept vectors are best the
    normalised centroids of their members' :func:`concept_vectors`. Given ``labels`` (the
    concepts') and ``meta_labels`` (the meta-concepts' names), a concept never attaches to a
    meta-concept of another operation (:func:`kbgraph.ingest.operations.cannot_link`)."""
    if np.asarray(vectors).size == 0:
        return []
    rows = _unit_rows(vectors)
    if np.asarray(meta_vectors).size == 0:
        return [None] * len(rows)
    metas = _unit_rows(meta_vectors)
    if rows.shape[1] != metas.shape[1]:
        raise ValueError(f"vectors have dimension {rows.shape[1]}, meta-concept vectors {metas.shape[1]}")
    blocked = np.zeros((len(rows), len(metas)), dtype=bool)
    if labels is not None and meta_labels is not None:
        if len(labels) != len(rows) or len(meta_labels) != len(metas):
            raise ValueError("one label per vector and one per meta-concept vector")
        keys, meta_keys = [operation_key(x) for x in labels], [operation_key(x) for x in meta_labels]
        blocked = np.array([[cannot_link(a, b) for b in meta_keys] for a in keys], dtype=bool).reshape(blocked.shape)
    return _attach_unblocked(rows, metas, threshold, blocked)


def _attach_unblocked(
    rows: npt.ArrayLike, metas: npt.ArrayLike, threshold: float, blocked: npt.NDArray[np.bool_],
) -> list[int | None]:
    similarities = _unit_rows(rows) @ _unit_rows(metas).T
    similarities[blocked] = -np.inf
    result: list[int | None] = []
    for row in similarities:
        best = int(np.argmax(row))  # first maximum: the lower index wins a tie
        result.append(best if row[best] >= threshold - _TIE else None)
    return result
