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
change) and for abstract ones, whose vectors follow their group. A search with a quality floor above 0 does not use it (feedback changes quality
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
from kbgraph.store.vector_cache import unit_vector
from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.change_feed import without
from kbgraph.search.student.experience_filters import ExperienceFilters, kept_positions, spliced_positions
from kbgraph.search.ranked import best_positions
from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.versioned import KeptByVersion, Patch, RowsRead, VersionedRead, filter_key

__all__ = ["IN_PROCESS_MAX", "ExperienceFilters", "ExperienceVectors", "VectorKind", "built", "experience_vectors",
           "neo4j_scores", "patched_vectors", "vector_rows"]

#: The largest namespace (experiences) whose vector channels scan in the process. An exact scan
#: costs time in proportion to the namespace: two channels took 1.1 ms at 10,000 experiences and
#: 13.2 ms at 100,000 (p50 of 60 requests, bench-scaled-10000 and -100000, 2026-12-05), more than the HNSW
#: indexes answer in there, and holding 100,000 experiences' vectors took 54 s of reading for a
#: process that just started. Above it the indexes answer.
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
    #: Per matrix, the row of each vector by its bytes (made when a patch first asks).
    _rows_by_bytes: dict[VectorKind, dict[bytes, int]] = field(default_factory=dict)

    def rows_by_bytes(self, which: VectorKind) -> dict[bytes, int]:
        """The row of each vector of matrix ``which`` by its bytes, for :func:`patched_vectors` (not to
        be changed: a patch copies it)."""
        found = self._rows_by_bytes.get(which)
        if found is None:
            found = {row.tobytes(): n for n, row in enumerate(self.vectors[which])}
            self._rows_by_bytes[which] = found
        return found

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
            held[r["id"]] = (unit_vector(r["pg"]) if r["pg"] is not None else None,
                             unit_vector(r["structure"]) if r["structure"] is not None else None)
    held = {i: held[i] for i in ids if i in held}
    dimension = next((len(v) for pair in held.values() for v in pair if v is not None), 0)
    vectors: dict[VectorKind, npt.NDArray[np.float32]] = {}
    row_of: dict[VectorKind, npt.NDArray[np.intp]] = {}
    for slot, which in enumerate(("pg", "structure")):
        present = [n for n, exp_id in enumerate(ids)
                   if (v := held.get(exp_id, (None, None))[slot]) is not None and len(v) == dimension]
        rows_of = np.full(len(ids), -1, dtype=np.intp)
        if present:
            matrix = np.stack([held[ids[n]][slot] for n in present]).astype(np.float32)  # type: ignore[misc]
            distinct, inverse = np.unique(matrix, axis=0, return_inverse=True)
            rows_of[present] = inverse.reshape(-1)
        else:
            distinct = np.zeros((0, dimension), dtype=np.float32)
        vectors[which], row_of[which] = distinct, rows_of  # type: ignore[index]

    return ExperienceVectors(filters=ExperienceFilters.of(rows), vectors=vectors, row_of=row_of, held=held,
                             abstract=abstract)


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
                held[r["id"]] = (unit_vector(r["pg"]) if r["pg"] is not None else None,
                                 unit_vector(r["structure"]) if r["structure"] is not None else None)
        source = np.full(len(ids), -1, dtype=np.intp)
        source[kept_positions(len(ids), fresh_at)] = taken
        vectors: dict[VectorKind, npt.NDArray[np.float32]] = {}
        row_of: dict[VectorKind, npt.NDArray[np.intp]] = {}
        by_bytes: dict[VectorKind, dict[bytes, int]] = {}
        kinds: tuple[VectorKind, VectorKind] = ("pg", "structure")
        for slot, which in enumerate(kinds):
            matrix, rows_of, by_bytes[which] = _patched_rows(
                before, which, source, [(int(n), held.get(ids[n], (None, None))[slot]) for n in fresh_at])
            if matrix.shape[0] > _SPARE_ROWS * max(int((rows_of >= 0).sum()), 1) + 16:
                return _built(gateway, namespace, rows, before)  # mostly rows no one has: built anew
            vectors[which], row_of[which] = matrix, rows_of
        abstract = before.abstract.difference(gone).union(str(row[0]) for row in fresh_rows if row[1] == "abstract")
        filters = before.filters.spliced(ids, taken, fresh_at, fresh_rows)
        return ExperienceVectors(filters=filters, vectors=vectors, row_of=row_of, held=held, abstract=abstract,
                                 _rows_by_bytes=by_bytes)

    return patch


def _patched_rows(before: ExperienceVectors, which: VectorKind, source: npt.NDArray[np.intp],
                  fresh: list[tuple[int, npt.NDArray[np.float32] | None]]
                  ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp], dict[bytes, int]]:
    """One matrix of a patched model: the rows of ``before``'s for the experiences taken over
    (``source``: each one's position in ``before``, -1 for one changed or new), and ``fresh``'s
    vectors (by position) on the row of an equal vector, else on a row added for it."""
    matrix = before.vectors[which]
    previous = before.row_of[which]
    rows_of = np.where(source >= 0, previous[np.maximum(source, 0)], -1).astype(np.intp)
    dimension = matrix.shape[1] if matrix.shape[0] else next((len(v) for _, v in fresh if v is not None), 0)
    row_by_bytes = dict(before.rows_by_bytes(which))
    added: list[npt.NDArray[np.float32]] = []
    for n, vector in fresh:
        if vector is None or len(vector) != dimension:
            continue
        vector = vector.astype(np.float32)
        key = vector.tobytes()
        row = row_by_bytes.get(key)
        if row is None:
            row = matrix.shape[0] + len(added)
            added.append(vector)
            row_by_bytes[key] = row
        rows_of[n] = row
    if added:
        matrix = np.concatenate([matrix.reshape(-1, dimension), np.stack(added)]).astype(np.float32)
    return matrix, rows_of, row_by_bytes
