"""Stage 4 — concept deduplication (BREW steps 3–4): paraphrased concept labels become one meta-concept.

Reflection produces a concept label per insight, independently per trajectory, so the same idea
arrives under many names ("return item", "send back a product", "return a delivered item"). This
package groups them. Everything here is pure and deterministic: no database, no model, a fixed
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
   large ones are first cut into dense regions by UMAP + HDBSCAN (docs/design.md §2.4), then clustered region
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

The package: :mod:`._vectors` (labels, context, clustering vectors, centroids, neighbours),
:mod:`._cluster` (:func:`cluster_concepts`), :mod:`._attach` (:func:`representative`, :func:`attach`).
"""

from __future__ import annotations

from kbgraph.ingest.dedupe._attach import DEFAULT_ATTACH_THRESHOLD, attach, representative
from kbgraph.ingest.dedupe._cluster import (
    DEFAULT_MERGE_THRESHOLD,
    DEFAULT_MIN_CLUSTER_SIZE,
    DEFAULT_UMAP_COMPONENTS,
    DEFAULT_UMAP_MIN_CONCEPTS,
    DEFAULT_UMAP_NEIGHBORS,
    cluster_concepts,
)
from kbgraph.ingest.dedupe._vectors import (
    DEFAULT_CONTEXT_WEIGHT,
    Vectors,
    concept_context,
    concept_vectors,
    nearest_neighbours,
    normalise_label,
)

__all__ = [
    "DEFAULT_ATTACH_THRESHOLD",
    "DEFAULT_CONTEXT_WEIGHT",
    "DEFAULT_MERGE_THRESHOLD",
    "DEFAULT_MIN_CLUSTER_SIZE",
    "DEFAULT_UMAP_COMPONENTS",
    "DEFAULT_UMAP_MIN_CONCEPTS",
    "DEFAULT_UMAP_NEIGHBORS",
    "Vectors",
    "attach",
    "cluster_concepts",
    "concept_context",
    "concept_vectors",
    "nearest_neighbours",
    "normalise_label",
    "representative",
]
