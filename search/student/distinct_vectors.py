"""Matrices of distinct unit vectors, as the in-process vector channels keep them
(:mod:`.vector_model`): each distinct vector on one row, found again by the hash of its bytes
(:class:`RowIndex`), and rows added in place as writes bring new vectors (:class:`GrowingMatrix`).

At 100,000 experiences a matrix is 154 MB. Sorting its rows to find the distinct ones
(``np.unique(axis=0)``) took 4.6 s with the GIL held; a dict keyed by each row's bytes held a second
copy of the matrix; and a write that brought one new vector copied the whole matrix (and every
experience's vector was kept a second time, by id, beside it). Here the distinct rows are found by
hashing (~0.3 s), the index holds integers, a new vector is written into spare rows of the same
buffer, and the vectors kept by id are views of its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from threading import Lock

import numpy as np
import numpy.typing as npt

__all__ = ["GrowingMatrix", "RowIndex", "distinct_rows"]

#: Rows a matrix is given beyond those it holds, as a share of them (at least ``_MIN_SPARE``): new
#: vectors go there until it is full, then the rows move to a larger buffer.
_SPARE = 0.1
_MIN_SPARE = 256

Vector = npt.NDArray[np.float32]


class RowIndex:
    """The rows of a matrix of distinct vectors by the hash of each row's bytes, so that an equal
    vector finds its row. Rows whose bytes hash alike are told apart by comparing them."""

    __slots__ = ("_rows",)

    def __init__(self, rows: dict[int, int | tuple[int, ...]] | None = None) -> None:
        self._rows: dict[int, int | tuple[int, ...]] = rows if rows is not None else {}

    @classmethod
    def of(cls, matrix: Vector) -> RowIndex:
        index = cls()
        for n, row in enumerate(matrix):
            index.add(hash(row.tobytes()), n)
        return index

    def copy(self) -> RowIndex:
        return RowIndex(dict(self._rows))

    def find(self, key: int, vector: Vector, rows: Callable[[int], Vector]) -> int | None:
        """The row holding ``vector`` (``key``: the hash of its bytes; ``rows(n)``: row n)."""
        found = self._rows.get(key)
        if found is None:
            return None
        for n in (found,) if isinstance(found, int) else found:
            if np.array_equal(rows(n), vector):
                return n
        return None

    def place(self, vector: Vector, rows: Callable[[int], Vector], new_row: int) -> int:
        """The row holding ``vector``, else ``new_row``, recorded as holding it (the caller then
        puts it there)."""
        key = hash(vector.tobytes())
        found = self.find(key, vector, rows)
        if found is None:
            self.add(key, new_row)
            return new_row
        return found

    def add(self, key: int, row: int) -> None:
        """Row ``row`` holds a vector whose bytes hash to ``key`` (and no earlier row holds it)."""
        found = self._rows.get(key)
        self._rows[key] = row if found is None else ((found, row) if isinstance(found, int) else (*found, row))


def distinct_rows(vectors: Sequence[Vector], dimension: int) -> tuple[GrowingMatrix, npt.NDArray[np.intp], RowIndex]:
    """Each distinct vector of ``vectors`` (each of ``dimension`` floats) once, in the order first
    met, as the first rows of a :class:`GrowingMatrix`; the row of each of ``vectors``; and the
    rows' index."""
    index = RowIndex()
    firsts: list[Vector] = []
    row_of = np.empty(len(vectors), dtype=np.intp)
    for n, vector in enumerate(vectors):
        row = row_of[n] = index.place(vector, firsts.__getitem__, len(firsts))
        if row == len(firsts):
            firsts.append(vector)
    return GrowingMatrix(firsts, dimension), row_of, index


class GrowingMatrix:
    """A buffer whose first rows are a matrix of distinct vectors, with spare rows after them. A
    version of the model sees its first ``n`` rows (a view, :meth:`first`); a newer version adds
    its new vectors after them in place when no other version has added rows there since and they
    fit (the older views do not see them), else in a larger buffer of its own. Thread-safe."""

    def __init__(self, rows: Sequence[Vector] | Vector, dimension: int) -> None:
        count = len(rows)
        self._buffer: Vector = np.empty((count + max(_MIN_SPARE, int(count * _SPARE)), dimension), dtype=np.float32)
        if isinstance(rows, np.ndarray):
            self._buffer[:count] = rows
        elif count:
            np.stack(rows, out=self._buffer[:count])
        self._filled = count
        self._lock = Lock()

    @property
    def filled(self) -> int:
        """Rows written so far, by every version."""
        return self._filled

    def first(self, count: int) -> Vector:
        """The matrix of the first ``count`` rows (a view)."""
        return self._buffer[:count]

    def extended(self, count: int, added: Sequence[Vector]) -> tuple[GrowingMatrix, Vector, bool]:
        """The matrix of the first ``count`` rows and then ``added``: the buffer it is in, the
        matrix, and whether it moved to a new buffer (views of the old one are not of it)."""
        if not added:
            return self, self.first(count), False
        rows = np.stack(added).astype(np.float32, copy=False)
        with self._lock:
            if self._filled == count and count + len(rows) <= len(self._buffer) and rows.shape[1] == self._buffer.shape[1]:
                self._buffer[count : count + len(rows)] = rows
                self._filled = count + len(rows)
                return self, self.first(self._filled), False
        # A matrix of no rows may have been made before any vector gave it a dimension.
        head = self.first(count) if count else np.zeros((0, rows.shape[1]), dtype=np.float32)
        moved = GrowingMatrix(np.concatenate([head, rows]), rows.shape[1])
        return moved, moved.first(count + len(rows)), True
