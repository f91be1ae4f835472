"""The semantic and structural channels of a large namespace, answered in the process: every
experience's problem+goal and workflow-shape vectors as two float32 matrices (each distinct vector
once), with what the channels filter on, kept with the namespace's search version
(:mod:`kbgraph.search.student.versioned`).

Above ``exact_scan_max`` experiences the two channels asked Neo4j's shared HNSW indexes, which on
5.26 cannot filter: each request over-fetched nodes of every namespace and filtered them, ~15 ms of
the server's CPU and an approximate answer. Here a search scans the namespace's own vectors
exactly: the product of a 10,000 × 384 matrix and the query's vector takes about a millisecond.
The model is kept current in the background (:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`:
``search_experience_vector_rows``, which reads nothing while the version sent is unchanged, twice
per version) and a search uses it only when it was read at the version the search read; until
then the indexes answer. Vectors travel only for experiences this process has not held with both vectors (a
concrete experience's id is its content's hash, and its vectors are written with it and never
change) and for abstract ones, whose vectors follow their group. The vectors held by id are views of
the matrices' rows, and a write's new vectors are added in place (:mod:`.distinct_vectors`). A search with a quality floor above 0 does not use it (feedback changes quality
without a new version: :func:`~kbgraph.search.student.versioned.version_applies`), nor a namespace
small enough for the exact Cypher scan, which stays the reference.

The answer is the exact scan's (``search_experience_scan``): the experiences that pass the filters
and hold the vector, ranked by ``(2·score − 1)`` times the other-domain discount, ties by id, with
Neo4j's score ``(1 + cos) / 2``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import stored_unit_vector, unit_vector
from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.change_feed import without
from kbgraph.search.student.distinct_vectors import GrowingMatrix, RowIndex, distinct_rows
from kbgraph.search.student.experience_filters import ExperienceFilters, kept_positions, spliced_positions
from kbgraph.search.ranked import best_positions
from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.versioned import KeptByVersion, Patch, RowsRead, VersionedRead, filter_key

__all__ = ["IN_PROCESS_MAX", "ExperienceFilters", "ExperienceVectors", "VectorKind", "built", "experience_vectors",
           "held_as_rows", "neo4j_scores", "patched_vectors", "vector_rows"]

#: The largest namespace (experiences) whose vector channels scan in the process. An exact scan
#: costs time in proportion to the namespace: two channels took 1.1 ms at 10,000 experiences and
#: 13.2 ms at 100,000 (p50 of 60 requests, bench-scaled-10000 and -100000, 2026-12-05). Keeping
#: 100,000 (measured 2026-12-07 on prof-100000, 200 queries a round in one process): settled
#: searches p50 · p95 21 · 44 ms against 30–36 · 63–78 with the indexes, but the first ~200
#: searches of a process 85 · 1,373 ms against 36 · 819 while the vectors (0.63 s of the client's
#: CPU per 5,000 experiences: Bolt's lists of floats), facts and feedback are read beside them, and
#: the process 2.1 GB resident against 1.0. Above it the indexes answer.
IN_PROCESS_MAX = 40_000
#: Which matrix a channel scans: problem+goal (semantic) or workflow shape (structural).
VectorKind = Literal["pg", "structure"]
#: Vectors asked for per request when the rows changed.
_PAGE = 5000
#: Candidates kept per model, one per set of filters and matrix (a namespace's searches use a few).
_MASKS = 64
#: A patched model is built anew once its matrices hold this many rows per experience that has a
#: vector (rows of vectors no experience has any more stay until then).
_SPARE_ROWS = 1.25


@dataclass
class ExperienceVectors:
    """One version of a namespace's experiences (``filters``) and their distinct unit vectors."""

    filters: ExperienceFilters
    #: The distinct unit vectors of each kind, and for each experience (by its index in
    #: ``filters.ids``) the row of its vector (-1: it has none). Equal vectors share a row, so equal
    #: vectors score equal, as they do in Neo4j, and ties fall to the ids (a product computed per
    #: row can differ in the last bit from one row to another).
    vectors: dict[VectorKind, npt.NDArray[np.float32]]
    row_of: dict[VectorKind, npt.NDArray[np.intp]]
    #: The vectors by id, for the next version to reuse.
    held: dict[str, tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None]]
    abstract: frozenset[str]
    #: Per filters and matrix, the experiences a channel scores.
    _candidates: BoundedMap[tuple[Any, ...], npt.NDArray[np.intp]] = field(default_factory=lambda: BoundedMap(_MASKS))
    #: Per matrix, its rows by their bytes' hash (made when a patch first asks, unless built with).
    _row_index: dict[VectorKind, RowIndex] = field(default_factory=dict)
    #: Per matrix, the buffer it is the first rows of, where a patch adds rows (made when one first
    #: asks, unless built with).
    _grown: dict[VectorKind, GrowingMatrix] = field(default_factory=dict)

    def row_index(self, which: VectorKind) -> RowIndex:
        """The rows of matrix ``which`` by their bytes' hash, for :func:`patched_vectors` (not to be
        changed: a patch copies it)."""
        found = self._row_index.get(which)
        if found is None:
            found = RowIndex.of(self.vectors[which])
            self._row_index[which] = found
        return found

    def grown(self, which: VectorKind) -> tuple[GrowingMatrix, bool]:
        """The buffer matrix ``which`` is the first rows of, and whether it was made just now (the
        matrix is then not a view of it)."""
        found = self._grown.get(which)
        if found is not None:
            return found, False
        found = self._grown[which] = GrowingMatrix(self.vectors[which], self.vectors[which].shape[1])
        return found, True

    def nearest(self, which: VectorKind, vector: Sequence[float], params: Mapping[str, Any], k: int) -> list[ChannelHit]:
        """The ``k`` experiences nearest to ``vector`` that pass the filters, as the exact scan
        ranks them, each with Neo4j's cosine score."""
        row_of, ids = self.row_of[which], self.filters.ids
        key = (which, *filter_key(params))
        candidates = self._candidates.get(key)
        if candidates is None:
            candidates = np.flatnonzero(self.filters.mask(params) & (row_of >= 0))
            self._candidates.put(key, candidates)
        if candidates.size == 0 or k <= 0:
            return []
        # The distinct vectors times the query, then each candidate's: indexing the matrix first
        # would copy it.
        score = neo4j_scores(self.vectors[which], vector)[row_of[candidates]]
        domain, other = params["domain"], float(params["other_domain"])
        discount = np.ones(candidates.size) if domain is None else np.where(self.filters.in_domain(domain)[candidates], 1.0, other)
        rank = (2.0 * score - 1.0) * discount
        order = best_positions(rank, np.arange(candidates.size), k, lambda i: ids[candidates[i]])
        return [ChannelHit(ids[candidates[i]], float(score[i])) for i in order]


def held_as_rows(ids: Sequence[str], held: dict[str, tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None]],
                 vectors: Mapping[VectorKind, npt.NDArray[np.float32]], row_of: Mapping[VectorKind, npt.NDArray[np.intp]],
                 ) -> dict[str, tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None]]:
    """``held`` (by id, in the order of ``ids``) with every vector a matrix holds given as a view of
    its row, so that the vectors are kept once, not once in the matrix and once by id."""
    pg, structure = vectors["pg"], vectors["structure"]
    pg_rows, structure_rows = row_of["pg"], row_of["structure"]
    out: dict[str, tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.float32] | None]] = {}
    for n, exp_id in enumerate(ids):
        pair = held.get(exp_id)
        if pair is None:
            continue
        p, s = int(pg_rows[n]), int(structure_rows[n])
        out[exp_id] = (pg[p] if p >= 0 else pair[0], structure[s] if s >= 0 else pair[1])
    return out


def neo4j_scores(unit_rows: npt.NDArray[np.float32], vector: Sequence[float]) -> npt.NDArray[np.float64]:
    """Neo4j's cosine score ``(1 + cos) / 2`` of each of ``unit_rows`` (unit float32 vectors)
    against ``vector``: the float32 product, then the score in float64. np.einsum, not BLAS: a
    product of this size makes OpenBLAS start its threads, which then spin after it (2.6 ms of CPU
    against 0.9 at 10,000; as the intent channel's table, kbgraph.search.student.intent)."""
    product: npt.NDArray[np.float64] = np.einsum("ij,j->i", unit_rows, unit_vector(vector)).astype(np.float64)
    return (1.0 + product) / 2.0


def experience_vectors(gateway: Neo4jGateway, namespace: str,
                       kept: KeptByVersion[str, ExperienceVectors]) -> ExperienceVectors:
    """The namespace's experience vectors at its current search version: the kept ones when the
    version is unchanged, else read again (vectors only for ids not held, and abstract ones)."""
    return kept.get(namespace, vector_rows(gateway, namespace), built(gateway, namespace, kept))


def vector_rows(gateway: Neo4jGateway, namespace: str) -> RowsRead[list[list[Any]]]:
    """The read of what the channels filter on (``search_experience_vector_rows``), given the
    version the rows were kept with; of experiences ``ids`` only when given (the change feed)."""
    def read(known: str | None, ids: list[str] | None = None) -> VersionedRead[list[list[Any]]]:
        answer = gateway.read("search_experience_vector_rows", kb=namespace, known=known, ids=ids)[0]
        return VersionedRead(answer["version"], bool(answer["unchanged"]), list(answer["rows"]))

    return read


def built(gateway: Neo4jGateway, namespace: str,
          kept: KeptByVersion[str, ExperienceVectors]) -> Callable[[list[list[Any]]], ExperienceVectors]:
    """Makes the model of rows read with :func:`vector_rows`, reading the vectors of the experiences
    the model ``kept`` holds now does not."""
    def make(rows: list[list[Any]]) -> ExperienceVectors:
        before = kept.kept(namespace)
        return _built(gateway, namespace, rows, before[1] if before is not None else None)

    return make


def _built(gateway: Neo4jGateway, namespace: str, rows: list[list[Any]],
           previous: ExperienceVectors | None) -> ExperienceVectors:
    ids = [str(row[0]) for row in rows]
    abstract = frozenset(i for i, row in zip(ids, rows, strict=True) if row[1] == "abstract")
    # Only an experience read with both vectors is held over: one read without either may have been
    # read as its write was being applied (Neo4j reads at read committed, see versioned), and the
    # read that confirms a version must ask for it again.
    held = {i: v for i, v in (previous.held.items() if previous is not None else ())
            if i not in abstract and v[0] is not None and v[1] is not None}
    wanted = [i for i in ids if i not in held]
    for start in range(0, len(wanted), _PAGE):
        for r in gateway.read("search_experience_vectors_of", kb=namespace, ids=wanted[start : start + _PAGE]):
            held[r["id"]] = (stored_unit_vector(r["pg_bytes"], r["pg"]),
                             stored_unit_vector(r["structure_bytes"], r["structure"]))
    held = {i: held[i] for i in ids if i in held}
    dimension = next((len(v) for pair in held.values() for v in pair if v is not None), 0)
    vectors: dict[VectorKind, npt.NDArray[np.float32]] = {}
    row_of: dict[VectorKind, npt.NDArray[np.intp]] = {}
    index: dict[VectorKind, RowIndex] = {}
    grown: dict[VectorKind, GrowingMatrix] = {}
    kinds: tuple[VectorKind, VectorKind] = ("pg", "structure")
    for slot, which in enumerate(kinds):
        present = [n for n, exp_id in enumerate(ids)
                   if (v := held.get(exp_id, (None, None))[slot]) is not None and len(v) == dimension]
        rows_of = np.full(len(ids), -1, dtype=np.intp)
        grown[which], rows_of[present], index[which] = distinct_rows(
            [np.asarray(held[ids[n]][slot], dtype=np.float32) for n in present], dimension)
        vectors[which], row_of[which] = grown[which].first(grown[which].filled), rows_of

    return ExperienceVectors(filters=ExperienceFilters.of(rows), vectors=vectors, row_of=row_of,
                             held=held_as_rows(ids, held, vectors, row_of), abstract=abstract, _row_index=index,
                             _grown=grown)


def patched_vectors(gateway: Neo4jGateway, namespace: str) -> Patch[ExperienceVectors, list[list[Any]]]:
    """The model of rows read with :func:`vector_rows` made from the model before them and the ids
    whose rows changed (the change feed, kbgraph.search.student.change_feed): only their vectors are
    read, and a vector the matrices do not hold is added as a row of its own. The model ranks as
    :func:`built` would: the same vectors, equal ones sharing a row, each scored on its own."""
    def patch(before: ExperienceVectors, rows: list[list[Any]], changed: list[str]) -> ExperienceVectors:
        gone = set(changed)
        spliced = spliced_positions(before.filters.ids, rows, gone)
        if spliced is None:  # rows not the ones before with the changed ones replaced
            return _built(gateway, namespace, rows, before)
        ids, taken, fresh_at = spliced
        fresh_rows = [rows[n] for n in fresh_at]
        held = without(before.held, gone)
        wanted = [ids[n] for n in fresh_at]
        for start in range(0, len(wanted), _PAGE):
            for r in gateway.read("search_experience_vectors_of", kb=namespace, ids=wanted[start : start + _PAGE]):
                held[r["id"]] = (stored_unit_vector(r["pg_bytes"], r["pg"]),
                                 stored_unit_vector(r["structure_bytes"], r["structure"]))
        source = np.full(len(ids), -1, dtype=np.intp)
        source[kept_positions(len(ids), fresh_at)] = taken
        vectors: dict[VectorKind, npt.NDArray[np.float32]] = {}
        row_of: dict[VectorKind, npt.NDArray[np.intp]] = {}
        index: dict[VectorKind, RowIndex] = {}
        grown: dict[VectorKind, GrowingMatrix] = {}
        moved = False
        kinds: tuple[VectorKind, VectorKind] = ("pg", "structure")
        for slot, which in enumerate(kinds):
            grown[which], matrix, rows_of, index[which], moved_now = _patched_rows(
                before, which, source, [(int(n), held.get(ids[n], (None, None))[slot]) for n in fresh_at])
            if matrix.shape[0] > _SPARE_ROWS * max(int((rows_of >= 0).sum()), 1) + 16:
                return _built(gateway, namespace, rows, before)  # mostly rows no one has: built anew
            vectors[which], row_of[which], moved = matrix, rows_of, moved or moved_now
        abstract = before.abstract.difference(gone).union(str(row[0]) for row in fresh_rows if row[1] == "abstract")
        filters = before.filters.spliced(ids, taken, fresh_at, fresh_rows)
        # The vectors by id as views of the matrices' rows: all of them when a matrix moved to a new
        # buffer (so that the old one can go), else those read now.
        fresh_ids = [ids[n] for n in fresh_at]
        held.update(held_as_rows(ids if moved else fresh_ids, held, vectors,
                                 row_of if moved else {w: row_of[w][fresh_at] for w in kinds}))
        return ExperienceVectors(filters=filters, vectors=vectors, row_of=row_of, held=held, abstract=abstract,
                                 _row_index=index, _grown=grown)

    return patch


def _patched_rows(before: ExperienceVectors, which: VectorKind, source: npt.NDArray[np.intp],
                  fresh: list[tuple[int, npt.NDArray[np.float32] | None]]
                  ) -> tuple[GrowingMatrix, npt.NDArray[np.float32], npt.NDArray[np.intp], RowIndex, bool]:
    """One matrix of a patched model: the rows of ``before``'s for the experiences taken over
    (``source``: each one's position in ``before``, -1 for one changed or new), and ``fresh``'s
    vectors (by position) on the row of an equal vector, else on a row added for it; with the
    buffer it is in, its row index, and whether it moved to another buffer than ``before``'s."""
    matrix = before.vectors[which]
    previous = before.row_of[which]
    rows_of = np.where(source >= 0, previous[np.maximum(source, 0)], -1).astype(np.intp)
    dimension = matrix.shape[1] if matrix.shape[0] else next((len(v) for _, v in fresh if v is not None), 0)
    index = before.row_index(which).copy()
    added: list[npt.NDArray[np.float32]] = []
    base = matrix.shape[0]

    def row(n: int) -> npt.NDArray[np.float32]:
        found: npt.NDArray[np.float32] = matrix[n] if n < base else added[n - base]
        return found

    for n, vector in fresh:
        if vector is None or len(vector) != dimension:
            continue
        vector = vector.astype(np.float32)
        placed = rows_of[n] = index.place(vector, row, base + len(added))
        if placed == base + len(added):
            added.append(vector)
    grown, made = before.grown(which)
    grown, matrix, moved = grown.extended(base, added)
    return grown, matrix, rows_of, index, made or moved
