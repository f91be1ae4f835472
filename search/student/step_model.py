"""The step channel of a large namespace, answered in the process: the namespace's step texts (one
vector per distinct ``action: text``, ``StepText``) as a float32 matrix, with the experiences that
say each one, kept with the namespace's search version (:mod:`kbgraph.search.student.versioned`)
and brought forward by the change feed (:mod:`kbgraph.search.student.change_feed`).

The exact scan (``search_step_scan``) scores every step text, then walks from the best text to the
steps that say it and their experiences. Many experiences say the same text (every retail run
starts by finding the user): at 100,000 experiences a text is said by thousands of steps, and a
query whose first texts' experiences the filters drop expands them all (p95 446 ms for queries
with executed steps in ``bench online`` at 100,000). Here the walk is over arrays: the texts in
score order, each one's experiences (in id order) that pass the filters, until ``k`` are found.

Kept current in the background as the vectors are (:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`)
and used only when read at the version the search read, and not with a quality floor above 0
(feedback moves quality without a new version). The answer is the exact scan's: the experiences
with their best step's Neo4j score ``(1 + cos) / 2``, best first, ties by id.

Its rows are one per experience, ``[id, kind, status, domain, success_rate, scope, owner_agent,
texts]``, ``texts`` the sorted bytes of the unit float32 vectors of the step texts its steps say: a
write changes a few experiences' rows, and the change feed reads only theirs
(``search_step_text_rows_of``) where it read every step text again after every write (read whole,
under ``bench online``'s mixed traffic at 10,000 the queries with steps asked the exact scan, ~60 ms
of the server each and its largest cost).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.student.change_feed import following
from kbgraph.search.student.experience_filters import ExperienceFilters, kept_positions, spliced_positions
from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.versioned import Follow, RowsRead, VersionedRead
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import unit_vector

__all__ = ["StepRow", "StepSayers", "following_steps", "patched_steps", "step_rows"]

#: ``[id, kind, status, domain, success_rate, scope, owner_agent, texts]`` (see the module docstring).
StepRow = list[Any]
#: Where the texts' vectors are in a row.
_TEXTS = 7
#: A patched model's matrix is compacted once it holds this many rows per text someone says.
_SPARE_ROWS = 1.25


@dataclass
class StepSayers:
    """One version of a namespace's step texts: their distinct unit vectors (equal vectors share a
    row and score equal, as in Neo4j), and for each row the experiences that say it, as indices into
    ``experiences`` (whose ids are in id order, ascending within a row): row ``r``'s are
    ``said[starts[r]:starts[r + 1]]``."""

    experiences: ExperienceFilters
    vectors: npt.NDArray[np.float32]
    starts: npt.NDArray[np.intp]
    said: npt.NDArray[np.intp]
    #: The row of each vector by its bytes (made when a patch first asks; not to be changed).
    _rows_by_bytes: dict[bytes, int] | None = field(default=None)

    @classmethod
    def of(cls, rows: Sequence[StepRow]) -> StepSayers:
        """From rows in id order (:func:`step_rows`)."""
        return _made(ExperienceFilters.of(rows), [], [(n, row[_TEXTS]) for n, row in enumerate(rows)], {})

    def sayers(self) -> list[npt.NDArray[np.intp]]:
        """Each row's experiences (indices into ``experiences``)."""
        return [self.said[self.starts[r]:self.starts[r + 1]] for r in range(len(self.vectors))]

    def rows_by_bytes(self) -> dict[bytes, int]:
        """The row of each vector by its bytes, for :func:`patched_steps`."""
        if self._rows_by_bytes is None:
            self._rows_by_bytes = {row.tobytes(): n for n, row in enumerate(self.vectors)}
        return self._rows_by_bytes

    def nearest(self, vector: Sequence[float], params: Mapping[str, Any], k: int) -> list[ChannelHit]:
        """The ``k`` experiences whose best step text is nearest to ``vector``, among those that pass
        the filters, as ``search_step_scan`` ranks them: best first, ties by id."""
        if not self.said.size or k <= 0:
            return []
        text_score = (1.0 + np.einsum("ij,j->i", self.vectors, unit_vector(vector)).astype(np.float64)) / 2.0
        passed = self.experiences.mask(params)
        found = np.zeros(len(self.experiences.ids), dtype=bool)
        best = np.zeros(len(self.experiences.ids), dtype=np.float64)
        order = np.argsort(-text_score, kind="stable")
        count, n = 0, 0
        while n < order.size:
            # A group of texts of equal score: an experience saying any of them scores that.
            group_score = text_score[order[n]]
            while n < order.size and text_score[order[n]] == group_score:
                r = order[n]
                said = self.said[self.starts[r]:self.starts[r + 1]]
                new = said[passed[said] & ~found[said]]
                found[new], best[new] = True, group_score
                count += new.size
                n += 1
            if count >= k:
                break
        hits = np.flatnonzero(found)
        # Best first, then by id: hits are in id order, and the sort is stable.
        ranked = hits[np.argsort(-best[hits], kind="stable")][:k]
        return [ChannelHit(self.experiences.ids[i], float(best[i])) for i in ranked]


def _made(experiences: ExperienceFilters, pairs: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]],
          fresh: Sequence[tuple[int, Sequence[bytes]]], rows_by_bytes: dict[bytes, int],
          vectors: npt.NDArray[np.float32] | None = None) -> StepSayers:
    """The model of ``experiences`` that say, as (experience index, row) pairs, ``pairs`` (arrays) and,
    for each ``fresh`` experience index, the texts of its row (vectors by their bytes, rows found in
    ``rows_by_bytes`` or added after ``vectors``)."""
    added: list[bytes] = []
    rows_by_bytes = dict(rows_by_bytes)
    base = 0 if vectors is None else len(vectors)
    dimension = vectors.shape[1] if vectors is not None and len(vectors) else None
    fresh_exps: list[int] = []
    fresh_rows: list[int] = []
    for n, texts in fresh:
        for key in texts:
            if dimension is None:
                dimension = len(key) // 4
            if len(key) != 4 * dimension:  # a vector of another model: not comparable
                continue
            row = rows_by_bytes.get(key)
            if row is None:
                row = rows_by_bytes[key] = base + len(added)
                added.append(key)
            fresh_exps.append(n)
            fresh_rows.append(row)
    width = dimension or 0
    matrix = vectors if vectors is not None else np.zeros((0, width), dtype=np.float32)
    if added:
        matrix = np.concatenate([matrix.reshape(-1, width),
                                 np.frombuffer(b"".join(added), dtype=np.float32).reshape(len(added), width)])
    exps = np.concatenate([*(p[0] for p in pairs), np.asarray(fresh_exps, dtype=np.intp)])
    rows = np.concatenate([*(p[1] for p in pairs), np.asarray(fresh_rows, dtype=np.intp)])
    order = np.lexsort((exps, rows))  # by row, then by experience (its id order)
    starts = np.zeros(len(matrix) + 1, dtype=np.intp)
    np.cumsum(np.bincount(rows, minlength=len(matrix)), out=starts[1:])
    model = StepSayers(experiences, matrix, starts, exps[order].astype(np.intp), rows_by_bytes)
    return model


def patched_steps(before: StepSayers, rows: list[StepRow], changed: list[str]) -> StepSayers:
    """The model of ``rows`` (the rows now, in id order) made from ``before`` and the ids whose rows
    ``changed`` (the change feed): the experiences the write left alone keep their texts (their
    indices moved), the changed ones say the texts of their rows now, a text not held before gets a
    row of its own. It answers as :meth:`StepSayers.of` of ``rows`` does."""
    if not changed:  # no row changed: the model before, with its masks
        return before
    spliced = spliced_positions(before.experiences.ids, rows, set(changed))
    if spliced is None:
        return StepSayers.of(rows)
    ids, taken, fresh_at = spliced
    fresh_rows = [rows[n] for n in fresh_at]
    experiences = before.experiences.spliced(ids, taken, fresh_at, fresh_rows)
    # Each experience kept, from its index before to its index now (-1: changed or gone).
    moved = np.full(len(before.experiences.ids), -1, dtype=np.intp)
    moved[taken] = kept_positions(len(ids), fresh_at)
    old_rows = np.repeat(np.arange(len(before.vectors), dtype=np.intp), np.diff(before.starts))
    now = moved[before.said]
    kept = now >= 0
    model = _made(experiences, [(now[kept], old_rows[kept])], [(int(n), rows[n][_TEXTS]) for n in fresh_at],
                  before.rows_by_bytes(), before.vectors)
    if len(model.vectors) > _SPARE_ROWS * max(int(np.count_nonzero(np.diff(model.starts))), 1) + 16:
        return StepSayers.of(rows)  # mostly texts no one says any more: made anew
    return model


def step_rows(gateway: Neo4jGateway, namespace: str) -> RowsRead[list[StepRow]]:
    """The rows of ``namespace`` (``search_step_text_rows``, with the version kept: a versioned read),
    of experiences ``ids`` only when given (``search_step_text_rows_of``, the change feed)."""
    def read(known: str | None, ids: list[str] | None = None) -> VersionedRead[list[StepRow]]:
        if ids is None:
            answer = gateway.read("search_step_text_rows", kb=namespace, known=known)[0]
            unchanged = bool(answer["unchanged"])
        else:
            answer, unchanged = gateway.read("search_step_text_rows_of", kb=namespace, ids=ids)[0], False
        return VersionedRead(answer["version"], unchanged, _rows(answer["experiences"], answer["texts"]))

    return read


def _rows(experiences: Sequence[Sequence[Any]], texts: Sequence[Sequence[Any]]) -> list[StepRow]:
    """One row per experience, in id order, from the read's experiences and texts ``[embedding, ids]``
    (an id of no experience read is dropped)."""
    said: dict[str, set[bytes]] = {str(row[0]): set() for row in experiences}
    for embedding, ids in texts:
        if not embedding:
            continue
        key = unit_vector(embedding).astype(np.float32).tobytes()
        for exp_id in ids:
            if (keys := said.get(str(exp_id))) is not None:
                keys.add(key)
    rows = [[str(row[0]), *row[1:_TEXTS], tuple(sorted(said[str(row[0])]))] for row in experiences]
    return sorted(rows, key=lambda row: str(row[0]))


def following_steps(gateway: Neo4jGateway, namespace: str) -> Follow[list[StepRow]]:
    """How the rows of :func:`step_rows` follow the writes (made of their rows alone)."""
    return following(gateway, namespace, step_rows(gateway, namespace), rows_alone=True)
