"""The concept map's points: concept (or experience) embeddings projected to 2-D.

UMAP (cosine, exact neighbours, fixed seed) for a set large enough to have neighbours, PCA below
:data:`UMAP_MIN_POINTS` points or when UMAP fails; the same graph always gives the same map.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from kbgraph.report._model import ConceptMap, MapPoint, Row

#: Below this many points the map is a PCA projection: UMAP's 15-neighbour graph would span the set.
UMAP_MIN_POINTS = 15
UMAP_NEIGHBORS = 15
#: Fixed seed: the same graph gives the same map.
MAP_RANDOM_STATE = 42
#: The map projects at most this many points (evenly spaced in id order) to keep UMAP within seconds.
DEFAULT_MAP_LIMIT = 5_000

Points = npt.NDArray[np.float64]


def _pca_2d(vectors: Points) -> Points:
    """The first two principal components (zeros where there are fewer), signs fixed so the
    largest loading of each component is positive: the same input always gives the same picture."""
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    coordinates = np.zeros((len(vectors), 2))
    if len(vectors) < 2 or not np.any(centred):
        return coordinates
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    for axis in range(min(2, len(components))):
        component = components[axis]
        component = component * (1.0 if component[np.argmax(np.abs(component))] >= 0 else -1.0)
        coordinates[:, axis] = centred @ component
    return coordinates


def project_2d(
    vectors: npt.ArrayLike, random_state: int = MAP_RANDOM_STATE, umap_min_points: int = UMAP_MIN_POINTS
) -> tuple[Points, Literal["umap", "pca", "none"], list[str]]:
    """2-D coordinates of ``vectors`` (cosine UMAP, or PCA for small sets), the method used, and
    notes (UMAP failing falls back to PCA and says why)."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.size == 0:
        return np.zeros((0, 2)), "none", []
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = rows / np.where(norms == 0, 1.0, norms)
    if len(rows) < umap_min_points:
        return _pca_2d(rows), "pca", []
    try:
        import umap

        from kbgraph.ingest.dedupe import nearest_neighbours

        neighbours = min(UMAP_NEIGHBORS, len(rows) - 1)
        with warnings.catch_warnings():
            # A fixed random_state makes UMAP single-threaded and it says so (intended: a reproducible map).
            warnings.simplefilter("ignore")
            # Exact neighbours from numpy spare UMAP compiling its own k-NN: measured 17 s instead of
            # 42 s for a first call in a process on the busy 2-core machine.
            reducer = umap.UMAP(n_neighbors=neighbours, n_components=2, metric="cosine", min_dist=0.1,
                                random_state=random_state, n_jobs=1,
                                precomputed_knn=nearest_neighbours(rows, neighbours))
            embedded = np.asarray(reducer.fit_transform(rows.astype(np.float32)), dtype=np.float64)
        if embedded.shape != (len(rows), 2) or not np.isfinite(embedded).all():
            raise ValueError(f"UMAP returned an unusable projection of shape {embedded.shape}")
        return embedded, "umap", []
    except Exception as error:  # a broken UMAP install or degenerate data still gets a map
        return _pca_2d(rows), "pca", [f"UMAP failed ({type(error).__name__}: {error}); projected with PCA instead"]


def concept_map(
    concept_rows: Sequence[Row], experience_rows: Callable[[], Sequence[Row]],
    limit: int = DEFAULT_MAP_LIMIT, random_state: int = MAP_RANDOM_STATE,
) -> ConceptMap:
    """The map's points: concepts with an embedding; when none has one, the experiences (lazily
    read) exhibiting a meta-concept. Rows need id, label, embedding, meta_id, meta_name."""
    source: Literal["concepts", "experiences"] = "concepts"
    rows = list(concept_rows)
    if not any(r["embedding"] for r in rows):
        fallback = list(experience_rows())
        if fallback:
            source, rows = "experiences", fallback
    if not rows:
        return ConceptMap(source="none", method="none")
    sizes = Counter(len(r["embedding"]) for r in rows if r["embedding"])
    dimension = sizes.most_common(1)[0][0] if sizes else 0
    usable = [r for r in rows if r["embedding"] and len(r["embedding"]) == dimension]
    notes: list[str] = []
    if source == "experiences":
        notes.append("no concept carries an embedding: the map shows experiences (problem+goal embedding) "
                     "coloured by the meta-concept they exhibit")
    if len(usable) > limit:
        keep = sorted(set(np.linspace(0, len(usable) - 1, limit).round().astype(int).tolist()))
        notes.append(f"{len(usable)} points: showing {len(keep)}, evenly spaced in id order")
        chosen = [usable[i] for i in keep]
    else:
        chosen = usable
    if not chosen:
        return ConceptMap(source=source, method="none", candidates=len(rows), without_embedding=len(rows),
                          notes=notes)
    coordinates, method, projection_notes = project_2d([r["embedding"] for r in chosen], random_state)
    points = [
        MapPoint(id=str(r["id"]), label=str(r["label"] or ""), meta_id=r["meta_id"], meta_name=r["meta_name"],
                 x=round(float(x), 5), y=round(float(y), 5))
        for r, (x, y) in zip(chosen, coordinates, strict=True)
    ]
    return ConceptMap(source=source, method=method, points=points, candidates=len(usable),
                      without_embedding=len(rows) - len(usable), notes=notes + projection_notes)
