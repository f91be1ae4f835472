"""What the workflows of a namespace change, as the intent channel reads them
(``search_workflow_operations``), with what the intent match needs of them worked out once.

At 10,000 experiences one search reads ~1,600 workflows that make ~27,000 operations between them.
Turning those into words (:func:`kbgraph.core.shapes.intent_text`), finding the vectors of the
words and stacking them cost a search ~60 ms of client CPU, every time, for the same rows. A
:class:`WorkflowOperations` is made from the rows one search read and kept by their content
(:meth:`kbgraph.search.student.context.SearchContext.workflow_operations`): the next search that
reads the same rows reuses it, and a write that changes any row (an experience added, archived,
merged, its operations or filtered properties changed) makes the rows, and so the key, different.
Nothing is kept that the rows do not say; the request's own side (its asks, their vectors) is the
:class:`~kbgraph.search.student.intent.IntentMatcher`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from threading import Lock
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.core.shapes import intent_text, operation_words
from kbgraph.search.handoff import is_handoff
from kbgraph.search.scoring import NO_CHANGE
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.search.student.text_vectors import IntentVectors
from kbgraph.search.student.intent_history import HistoryRow, rows_of
from kbgraph.search.student.versioned import NamespaceVersions, VersionedRead

__all__ = ["SEPARATOR", "IntentRows", "OperationRow", "SequenceTable", "WorkflowOperations", "in_domain", "read_intent_rows",
           "read_rows"]

#: One workflow: (experience id, domain, its operations in order).
OperationRow = tuple[str, str | None, tuple[str, ...]]
#: What follows each operation's name in the joined string ``search_workflow_operations`` returns
#: (the ASCII unit separator; a row with a name that holds it comes with its list as well).
SEPARATOR = "\x1f"


def in_domain(text: str, domain: str | None) -> str:
    """What an operation does, with the domain it does it in ("book reservation" is a flight's in
    airline): the words of an operation alone often leave out what it acts on."""
    return f"{text} ({domain})" if domain else text


class SequenceTable:
    """Distinct sequences of operations, each with its domain, and their vectors for the intent
    match: the whole sequence read as one text (:meth:`texts`), and each distinct (operation,
    domain) pair any of them makes with the columns each sequence makes (:meth:`operations`).
    Each part is read from the vectors the first time it is asked for, then kept: no lock is held
    while it is read (a search that stopped or hung inside the embedder must never block every later
    search of the namespace); two searches asking at once may both compute it, the same value, and
    the last one's is kept."""

    def __init__(self, sequences: Sequence[tuple[tuple[str, ...], str | None]], vectors: IntentVectors):
        self.sequences = list(sequences)
        self._vectors = vectors
        self._texts: npt.NDArray[np.float64] | None = None
        self._operations: tuple[npt.NDArray[np.float64], list[list[int]]] | None = None
        self._column_operations: list[str] | None = None
        self._handoffs: tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]] | None = None
        #: Every sequence's columns end to end, the sequence each belongs to, and their counts (sequence_means).
        self._layout: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]] | None = None
        #: Each sequence's distinct operations, in the order it makes them (the history's part of
        #: the match is a function of them alone).
        self.distinct = [tuple(dict.fromkeys(ops)) for ops, _ in self.sequences]
        self._distinct_sets: tuple[list[tuple[str, ...]], npt.NDArray[np.intp]] | None = None
        self._set_columns: tuple[list[str], npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]] | None = None
        #: The row of each text :meth:`texts` and :meth:`operations` hold (:meth:`vectors_of`).
        self._rows: dict[str, tuple[npt.NDArray[np.float64], int]] | None = None

    def texts(self) -> npt.NDArray[np.float64]:
        """Unit vectors of what each sequence changes, in words and in its domain: one row each."""
        texts = self._texts
        if texts is None:
            texts = self._vectors.of(self._sequence_texts())
            self._texts = texts
        return texts

    def operations(self) -> tuple[npt.NDArray[np.float64], list[list[int]]]:
        """Unit vectors of every distinct (operation, domain) pair the sequences make (one row each),
        and each sequence's distinct operations as row numbers of it, in the order it makes them."""
        operations = self._operations
        if operations is None:
            pairs = self._pairs()
            row = {pair: i for i, pair in enumerate(pairs)}
            matrix = self._vectors.of(self._pair_texts(pairs)) if pairs else np.zeros((0, 0))
            operations = (matrix, [[row[(op, domain)] for op in dict.fromkeys(ops)] for ops, domain in self.sequences])
            # Set before the operations, which a concurrent search reads as "both are there".
            self._column_operations = [op for op, _ in pairs]
            self._operations = operations
        return operations

    def _sequence_texts(self) -> list[str]:
        """What each sequence changes, in words and in its domain (the texts of :meth:`texts`)."""
        return [in_domain(intent_text(ops), domain) for ops, domain in self.sequences]

    def _pairs(self) -> list[tuple[str, str | None]]:
        """Every distinct (operation, domain) pair the sequences make, in the order first made."""
        return list(dict.fromkeys((op, domain) for ops, domain in self.sequences for op in ops))

    @staticmethod
    def _pair_texts(pairs: Sequence[tuple[str, str | None]]) -> list[str]:
        """Each pair's operation in words and in its domain (the texts of :meth:`operations`)."""
        return [in_domain(operation_words(op), domain) for op, domain in pairs]

    def distinct_sets(self) -> tuple[list[tuple[str, ...]], npt.NDArray[np.intp]]:
        """Each set of distinct operations the sequences make (:attr:`distinct`) once, in the order
        first made, and the set of each sequence as its index: what depends on a sequence's
        distinct operations alone is worked out per set and spread with one indexing."""
        layout = self._distinct_sets
        if layout is None:
            index: dict[tuple[str, ...], int] = {}
            of_sequence = np.fromiter((index.setdefault(d, len(index)) for d in self.distinct), dtype=np.intp,
                                      count=len(self.distinct))
            layout = (list(index), of_sequence)
            self._distinct_sets = layout
        return layout

    def set_columns(self) -> tuple[list[str], npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """The sets of :meth:`distinct_sets` laid end to end for a per-set pass over their
        operations: every operation any set makes, once (:data:`NO_CHANGE` for a set of none,
        which is how the history counts it); each set's operations as indices into that list, in
        the set's order; the set each entry belongs to; and where each set's entries start."""
        layout = self._set_columns
        if layout is None:
            sets, _ = self.distinct_sets()
            made = [list(ops) or [NO_CHANGE] for ops in sets]
            names = list(dict.fromkeys(op for ops in made for op in ops))
            index = {op: i for i, op in enumerate(names)}
            counts = np.array([len(ops) for ops in made], dtype=np.intp)
            flat = np.fromiter((index[op] for ops in made for op in ops), dtype=np.intp, count=int(counts.sum()))
            starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
            layout = (names, flat, np.repeat(np.arange(len(made)), counts), starts)
            self._set_columns = layout
        return layout

    def vectors_of(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """The unit vectors of ``texts``, one row each, as :meth:`IntentVectors.of` gives them: the
        rows this table holds for its own texts (what a sequence changes, an operation's words),
        the vectors' for the others. A candidate of the channel is scored from the rows its ranking
        used: a namespace of more distinct texts than the process keeps (``KEPT_VECTORS``) would
        otherwise embed them again, search after search."""
        rows = self._rows
        if rows is None:
            sequences, (matrix, _) = self.texts(), self.operations()
            rows = {text: (matrix, i) for i, text in enumerate(self._pair_texts(self._pairs()))}
            rows.update({text: (sequences, i) for i, text in enumerate(self._sequence_texts())})
            self._rows = rows
        missing = [t for t in texts if t not in rows]
        found = dict(zip(missing, self._vectors.of(missing), strict=True)) if missing else {}
        if not texts:
            return np.zeros((0, 0))
        return np.stack([found[t] if t in found else rows[t][0][rows[t][1]] for t in texts])

    def handoffs(self) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """Which columns of :meth:`operations` hand the task to a human
        (:func:`kbgraph.search.handoff.is_handoff`), and which sequences make one."""
        handoffs = self._handoffs
        if handoffs is None:
            columns = np.array([is_handoff(op) for op in self.column_operations()], dtype=bool)
            handoffs = (columns, self.sequence_means(columns.astype(np.float64)) > 0)
            self._handoffs = handoffs
        return handoffs

    def sequence_means(self, by_column: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Each sequence's mean of ``by_column`` (one value per column of :meth:`operations`) over
        its distinct operations; 0 for a sequence without any. One pass for thousands of sequences:
        the columns of all sequences laid end to end, kept with the table."""
        layout = self._layout
        if layout is None:
            _, columns = self.operations()
            counts = np.array([len(made) for made in columns], dtype=np.intp)
            flat = np.fromiter((c for made in columns for c in made), dtype=np.intp, count=int(counts.sum()))
            layout = (flat, np.repeat(np.arange(len(columns)), counts), counts)
            self._layout = layout
        flat, owner, counts = layout
        sums = np.bincount(owner, weights=np.asarray(by_column, dtype=np.float64)[flat], minlength=len(counts))
        return np.divide(sums, counts, out=np.zeros(len(counts)), where=counts > 0)

    def column_operations(self) -> list[str]:
        """The operation of each column of :meth:`operations`."""
        self.operations()
        names = self._column_operations
        assert names is not None
        return names


class WorkflowOperations:
    """The rows of one ``search_workflow_operations`` read: the distinct sequences of operations
    (:attr:`table`, each with the experiences standing for it, :attr:`members`), the order the
    channel breaks equal scores in, and per query domain the operations an ask could mean."""

    def __init__(self, rows: Sequence[OperationRow], vectors: IntentVectors):
        self._rows = rows
        members: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for exp_id, domain, operations in rows:
            members.setdefault((str(domain), operations), []).append(exp_id)
        #: The experiences that stand for each sequence, by (domain, operations), in the rows' order.
        self.members = members
        self.keys = list(members)
        self.table = SequenceTable([(ops, domain) for domain, ops in self.keys], vectors)
        #: Each sequence's place in (domain, operations) order: the channel's tie-break.
        self.tie_order = np.empty(len(self.keys), dtype=np.intp)
        self.tie_order[sorted(range(len(self.keys)), key=self.keys.__getitem__)] = np.arange(len(self.keys))
        self._known: dict[str | None, list[tuple[str, str | None]]] = {}
        self._of_domain: dict[str, npt.NDArray[np.bool_]] = {}
        self._lock = Lock()
        #: The domains of the rows, once: every search of a request asks whether its own is among them.
        self._domains = frozenset(d for _, d, _ in rows)

    def known_operations(self, domain: str | None) -> list[tuple[str, str | None]]:
        """What an ask could mean: the distinct (operation, domain) pairs of the workflows of
        ``domain`` (of every domain, when it is None or the memory has no workflow of it)."""
        with self._lock:
            known = self._known.get(domain)
            if known is None:
                home = list(dict.fromkeys((op, d) for _, d, ops in self._rows if d == domain for op in ops))
                known = home or list(dict.fromkeys((op, d) for _, d, ops in self._rows for op in ops))
                self._known[domain] = known
            return known

    def of_domain(self, domain: str) -> npt.NDArray[np.bool_]:
        """Which sequences (:attr:`keys`, the table's order) are of ``domain``: the channel
        discounts the others. Worked out once per domain."""
        mask = self._of_domain.get(domain)
        if mask is None:
            mask = np.array([d == domain for d, _ in self.keys], dtype=bool)
            self._of_domain[domain] = mask
        return mask

    def holds(self, domain: str | None) -> bool:
        """The memory holds workflows of ``domain`` (of any domain, when it is None): a request of
        that domain can be matched with its own domain's operations."""
        return bool(self._rows) if domain is None else domain in self._domains

    @staticmethod
    def rows_of(records: Sequence[Sequence[Any]]) -> tuple[OperationRow, ...]:
        """The query's rows ``[id, domain, joined, operations]`` (see :func:`read_rows`) as
        :data:`OperationRow`."""
        return tuple((exp_id, domain, tuple(listed) if listed is not None else tuple(joined.split(SEPARATOR)[:-1]))
                     for exp_id, domain, joined, listed in records)


def read_rows(gateway: Neo4jGateway, params: Mapping[str, Any],
              known: str | None = None) -> VersionedRead[tuple[tuple[Any, ...], ...]]:
    """The rows of ``search_workflow_operations`` for the filters ``params``, hashable: ``(id,
    domain, joined, operations)``, each experience's operations one string, every name followed by
    :data:`SEPARATOR` (the list itself only where a name holds it). The key a table is kept by:
    equal rows, equal key, made without splitting ~27,000 names every search. With the
    namespace's search version; none read when it is ``known`` (kbgraph.search.student.versioned)."""
    return read_intent_rows(gateway, params, known).operations


@dataclass(frozen=True)
class IntentRows:
    """One answer of ``search_workflow_operations``: the workflows' rows (see :func:`read_rows`)
    and, when asked for, the history of requests of the query's domain
    (:class:`~kbgraph.search.student.intent_history.IntentHistory`)."""

    operations: VersionedRead[tuple[tuple[Any, ...], ...]]
    history: VersionedRead[tuple[HistoryRow, ...]] | None
    #: The versions the request read (the feedback version with the search version).
    versions: NamespaceVersions

    @property
    def rows_read(self) -> bool:
        """Whether the server read rows that are kept by its version, so that the next search of the
        same filters may send it and be spared them (kbgraph.search.student.read_turns)."""
        return any(read is not None and read.version is not None and not read.unchanged
                   for read in (self.operations, self.history))


def read_intent_rows(gateway: Neo4jGateway, params: Mapping[str, Any], known: str | None = None,
                     history: bool = False, history_known: str | None = None, ids: list[str] | None = None) -> IntentRows:
    """What the intent channel reads, in one request: the workflows' rows (none when the search
    version is ``known``) and, with ``history``, the history's (none when it is ``history_known``);
    of experiences ``ids`` only when given (the change feed: kbgraph.search.student.intent_follow)."""
    answer = gateway.read("search_workflow_operations", **params, separator=SEPARATOR, known=known,
                          history=history, history_known=history_known, ids=ids)[0]
    rows = tuple((exp_id, domain, joined, tuple(listed) if listed is not None else None)
                 for exp_id, domain, joined, listed in answer["rows"])
    version = answer["version"]
    return IntentRows(VersionedRead(version, bool(answer["unchanged"]), rows),
                      VersionedRead(version, bool(answer["history_unchanged"]), rows_of(answer["history"]))
                      if history else None, NamespaceVersions.of(answer))
