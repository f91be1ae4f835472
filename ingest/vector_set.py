"""A set of unit vectors by id, for "which of these is close to that?" without a Python loop.

Merging and linking compare a new experience with the members of its block or domain. Kept in one
growing matrix, adding or removing an id is O(1) amortised and finding what is close to a few
vectors is one matrix product over the set.

Cosines decide merges, alternatives and their order, so a full plan and an incremental one must
see the *same* numbers for a pair. A float32 matrix product may round a pair differently
depending on the shape of the product it was part of; so the product only shortlists (with a
margin far above its rounding error) and every shortlisted pair's cosine is then computed by
:func:`exact_cosines`, whose result for a pair depends on the two vectors alone (and is
symmetric).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]

#: A float32 dot product of two unit vectors of a few hundred values is off by ~1e-6 at most.
SHORTLIST_MARGIN = 1e-4


def exact_cosines(vector: Vector, rows: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """The cosine of ``vector`` with each row (all unit length), in float64, each value depending
    only on the pair: elementwise products (exact in IEEE arithmetic, and commutative) summed row
    by row in one fixed order."""
    products = rows.astype(np.float64) * vector.astype(np.float64)
    return np.asarray(products.sum(axis=1), dtype=np.float64)


def exact_cosine(a: Vector, b: Vector) -> float:
    return float(exact_cosines(a, b[np.newaxis, :])[0])


class VectorSet:
    def __init__(self) -> None:
        self._matrix: npt.NDArray[np.float32] | None = None
        self._ids: list[str | None] = []
        self._slot: dict[str, int] = {}
        self._free: list[int] = []

    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, item: str) -> bool:
        return item in self._slot

    def ids(self) -> list[str]:
        return list(self._slot)

    def add(self, item: str, vector: Vector) -> None:
        if item in self._slot:
            self._matrix[self._slot[item]] = vector  # type: ignore[index]
            return
        if self._matrix is None:
            self._matrix = np.zeros((8, vector.shape[0]), dtype=np.float32)
        if self._free:
            slot = self._free.pop()
        else:
            slot = len(self._ids)
            if slot == self._matrix.shape[0]:
                grown = np.zeros((slot * 2, self._matrix.shape[1]), dtype=np.float32)
                grown[:slot] = self._matrix
                self._matrix = grown
            self._ids.append(None)
        self._matrix[slot] = vector
        self._ids[slot] = item
        self._slot[item] = slot

    def remove(self, item: str) -> None:
        slot = self._slot.pop(item, None)
        if slot is None:
            return
        assert self._matrix is not None
        self._matrix[slot] = 0.0  # a zero row is close to nothing
        self._ids[slot] = None
        self._free.append(slot)

    def close_to(self, vectors: Iterable[Vector], threshold: float) -> list[list[tuple[float, str]]]:
        """For each vector, ``(cosine, id)`` of every member with cosine >= ``threshold``
        (exact_cosines; in no particular order). A member is close to itself."""
        queries = list(vectors)
        if not queries or not self._slot or self._matrix is None:
            return [[] for _ in queries]
        used = self._matrix[: len(self._ids)]
        found: list[list[tuple[float, str]]] = []
        for start in range(0, len(queries), 512):  # bounded memory: 512 rows of cosines at a time
            chunk = queries[start : start + 512]
            shortlist = np.stack(chunk) @ used.T >= threshold - SHORTLIST_MARGIN
            for query, row in zip(chunk, shortlist, strict=True):
                slots = np.flatnonzero(row)
                close: list[tuple[float, str]] = []
                if slots.size:
                    cosines = exact_cosines(query, used[slots]).tolist()
                    for slot, cosine in zip(slots.tolist(), cosines, strict=True):
                        item = self._ids[slot]
                        if item is not None and cosine >= threshold:
                            close.append((cosine, item))
                found.append(close)
        return found
