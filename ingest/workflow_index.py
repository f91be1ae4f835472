"""One domain's workflows, shortest first, with their operation sets as bitmasks (for COMPOSITION).

COMPOSITION links a workflow to the longer ones of its domain that hold its operations in order
(ingest/link.py). Only a workflow holding every operation of the smaller one can: that set test
comes first, and over a domain of W workflows planning every workflow's COMPOSITION asks it W²
times — 30,000 workflows of one domain (a 100,000-experience KB) made that hours of Python. Here
each workflow is a row of bits over features, so the test runs over the whole domain at once in
numpy and only the workflows that pass it are checked for order, lazily, until enough are found:

- a workflow *offers* its operations and every ordered pair (a, b) such that some a comes before
  some b in it (from the first and last position of each operation: a few dozen pairs);
- a workflow *requires*, to be inside another, its operations and each pair of consecutive
  operations. A workflow inside another offers everything it requires: necessary, not
  sufficient;
- the longer workflows that pass are checked for order together, in numpy (one pass per
  operation of the smaller workflow over their operation codes). On a 20,000-experience scaled KB
  2.4 million one-by-one order tests still took 11 s of the 17 s a link plan from scratch took.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from kbgraph.ingest.link import Workflow

__all__ = ["DomainWorkflows"]

#: (order, workflow, its set of operations); order = (number of operations, operations).
Entry = tuple[tuple[int, tuple[str, ...]], Workflow, frozenset[str]]
Feature = str | tuple[str, str]  # an operation, or an ordered pair of operations
Bits = npt.NDArray[np.uint64]
_WORD = 64


def _order(workflow: Workflow) -> tuple[int, tuple[str, ...]]:
    return len(workflow[1]), workflow[1]


def offered(operations: tuple[str, ...]) -> frozenset[Feature]:
    """Its operations, and (a, b) whenever some a comes before some b."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for position, name in enumerate(operations):
        first.setdefault(name, position)
        last[name] = position
    pairs = {(a, b) for a in first for b in last if first[a] < last[b]}
    return frozenset([*first, *pairs])


def required(operations: tuple[str, ...]) -> frozenset[Feature]:
    """Its operations and its consecutive pairs: what a workflow containing it must offer."""
    return frozenset([*operations, *zip(operations, operations[1:], strict=False)])


class DomainWorkflows:
    """The workflows of one domain that have a representative, closest (shortest) first."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._bits: dict[Feature, int] = {}  # feature -> bit, in the order first seen
        # One row per entry, kept in step with it; None: rebuilt when next asked.
        self._offered: Bits | None = None
        self._required: Bits | None = None
        self._codes: dict[str, int] = {}  # operation -> code, for the order test
        self._sequences: npt.NDArray[np.int32] | None = None  # one row of codes per entry, padded with -1

    def __len__(self) -> int:
        return len(self.entries)

    # -- changing ------------------------------------------------------------------------------

    def place(self, workflow: Workflow, present: bool) -> None:
        """Adds (``present``) or removes a workflow, keeping the order."""
        entry: Entry = (_order(workflow), workflow, frozenset(workflow[1]))
        at = bisect.bisect_left(self.entries, entry[:2])
        if present:
            self.entries.insert(at, entry)
            offer, need = self._row(offered(workflow[1])), self._row(required(workflow[1]))  # may drop the matrices
            if self._offered is not None and self._required is not None:
                self._offered = np.insert(self._offered, at, offer, axis=0)
                self._required = np.insert(self._required, at, need, axis=0)
            if self._sequences is not None:
                if len(workflow[1]) > self._sequences.shape[1]:
                    self._sequences = None
                else:
                    self._sequences = np.insert(self._sequences, at, self._sequence(workflow[1]), axis=0)
        else:
            del self.entries[at]
            if self._offered is not None and self._required is not None:
                self._offered = np.delete(self._offered, at, axis=0)
                self._required = np.delete(self._required, at, axis=0)
            if self._sequences is not None:
                self._sequences = np.delete(self._sequences, at, axis=0)

    # -- reading -------------------------------------------------------------------------------

    def longer_containing(self, small: Workflow) -> Iterator[tuple[Workflow, frozenset[str]]]:
        """The longer workflows that hold ``small``'s operations in order, closest first."""
        start = bisect.bisect_left(self.entries, ((len(small[1]) + 1, ()),))
        if start >= len(self.entries):
            return
        need = self._row(required(small[1]))
        rows = self._matrices()[0][start:]
        hits = np.flatnonzero(np.all((rows & need) == need, axis=1)) + start
        first, chunk = 0, 256  # callers usually want the closest few: test the order chunk by chunk
        while first < len(hits):
            part = hits[first : first + chunk]
            if len(small[1]) > 1:
                part = self._hold_in_order(part, small[1])
            for index in part.tolist():
                _, workflow, operations = self.entries[index]
                yield workflow, operations
            first, chunk = first + chunk, chunk * 8

    def shorter_within(self, big: Workflow) -> Iterator[tuple[Workflow, frozenset[str]]]:
        """The shorter workflows that ``big`` may hold in order (it offers all they require)."""
        end = bisect.bisect_left(self.entries, ((len(big[1]), ()),))
        if end == 0:
            return
        outside = ~self._row(offered(big[1]))
        rows = self._matrices()[1][:end]
        for index in np.flatnonzero(np.all((rows & outside) == 0, axis=1)).tolist():
            _, workflow, operations = self.entries[index]
            yield workflow, operations

    # -- order -------------------------------------------------------------------------------

    def _hold_in_order(self, rows: npt.NDArray[np.intp], operations: tuple[str, ...]) -> npt.NDArray[np.intp]:
        """Those of the entries ``rows`` that hold ``operations`` in order (greedy: each operation
        matched at its first occurrence after the previous one's); rows that fail drop out at once."""
        sequences = self._sequence_matrix()[rows]
        if any(name not in self._codes for name in operations):
            return rows[:0]
        columns = np.arange(sequences.shape[1])
        position = np.full(len(rows), -1)
        for name in operations:
            match = (sequences == self._codes[name]) & (columns > position[:, None])
            found = match.any(axis=1)
            if not found.all():
                rows, sequences, match = rows[found], sequences[found], match[found]
                if not len(rows):
                    break
            position = match.argmax(axis=1)
        return rows

    def _sequence(self, operations: tuple[str, ...], width: int | None = None) -> npt.NDArray[np.int32]:
        row = np.full(width if width is not None else self._sequence_width(), -1, dtype=np.int32)
        for position, name in enumerate(operations):
            row[position] = self._codes.setdefault(name, len(self._codes))
        return row

    def _sequence_width(self) -> int:
        if self._sequences is not None:
            return int(self._sequences.shape[1])
        return max([1, *(len(workflow[1]) for _, workflow, _ in self.entries)])

    def _sequence_matrix(self) -> npt.NDArray[np.int32]:
        if self._sequences is None:
            width = self._sequence_width()
            matrix = np.full((len(self.entries), width), -1, dtype=np.int32)
            for index, (_, workflow, _) in enumerate(self.entries):
                matrix[index] = self._sequence(workflow[1], width)
            self._sequences = matrix
        return self._sequences

    # -- bits ----------------------------------------------------------------------------------

    def _row(self, features: frozenset[Feature]) -> Bits:
        for feature in features - self._bits.keys():
            self._bits[feature] = len(self._bits)
        if self._offered is not None and self._words() > self._offered.shape[1]:
            self._offered = self._required = None  # wider rows now: rebuilt when next asked
        row = np.zeros(self._words() if self._offered is None else self._offered.shape[1], dtype=np.uint64)
        for feature in features:
            bit = self._bits[feature]
            row[bit // _WORD] |= np.uint64(1 << (bit % _WORD))
        return row

    def _matrices(self) -> tuple[Bits, Bits]:
        if self._offered is None or self._required is None:
            offers = [self._row(offered(workflow[1])) for _, workflow, _ in self.entries]
            needs = [self._row(required(workflow[1])) for _, workflow, _ in self.entries]
            self._offered = _stack(offers, self._words())
            self._required = _stack(needs, self._words())
        return self._offered, self._required

    def _words(self) -> int:
        """64-bit words a row needs for every feature seen so far."""
        return max(1, -(-len(self._bits) // _WORD))


def _stack(rows: list[Bits], width: int) -> Bits:
    matrix = np.zeros((len(rows), width), dtype=np.uint64)
    for index, row in enumerate(rows):
        matrix[index, : len(row)] = row
    return matrix
