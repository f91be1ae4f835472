"""The intent channel of a student search: for a request without executed steps, which workflows do
what it asks (docs/search.md, "Requests in the customer's own words").

A request before any step says what the customer wants *changed*; a workflow's own words for that
are its state-changing operations (``cancel_pending_order``), read as words
(:func:`kbgraph.core.shapes.intent_text`). This stage

1. splits the request into its asks (:func:`kbgraph.search.asks.split_asks`) and embeds each ask
   (the whole request's vector is the query's problem+goal one);
2. as a channel, reads what every workflow of the namespace changes (``search_workflow_operations``:
   abstract experiences, and concrete ones without a workflow), scores each distinct sequence of
   operations with :func:`kbgraph.search.scoring.intent_match`, and adds the ``intent_candidates``
   best as candidates: the workflow that does what was asked is found even when none of its runs'
   words are the customer's;
3. gives every candidate with steps its intent score, which the direct score mixes into the coarse
   one with weight ``intent_weight`` (:func:`kbgraph.search.scoring.direct_scores`), and the asks
   each operation answers, for the explanation;
4. takes an ask for a human ("put me through to a real person",
   :func:`kbgraph.search.handoff.asks_for_a_human`) as answered by the operations that hand the task
   to one (``transfer_to_human_agents``): their cosine with that ask is 1, whatever MiniLM makes of
   "a real person" and "human agents" (setting ``intent.human_asks``);
5. moves an ask's cosine with an operation by ``intent.state_shift`` towards the operations whose
   names need the state the ask says its object is in ("the boots that came" →
   ``exchange_delivered_order_items``) and away from those of another state
   (:mod:`kbgraph.search.order_state`), and by ``intent.verb_shift`` towards the operations whose verb
   the ask names ("can I swap it?" → ``exchange_delivered_order_items``, :mod:`kbgraph.search.asked_verbs`);
6. sharpens the match with the namespace's own history (read with step 2's rows): which
   operations the stored runs that worked made when their requests held the request's words
   (:func:`kbgraph.search.scoring.history_association`), added with weight
   ``intent_history_weight``. The query's own runs (``exclude``) are not counted: the rows of the
   domain are read once per search version, in the same request as step 2's, and the excluded
   runs' counts taken off in the client (:mod:`kbgraph.search.student.intent_history`).

The words of operations and intent texts are embedded once per process (:class:`IntentVectors`),
and what the rows of step 2 need of them is worked out once for the same rows
(:class:`~kbgraph.search.student.workflow_operations.WorkflowOperations`, kept by content); the rows
themselves are read again only when the namespace's search version changed
(:mod:`kbgraph.search.student.versioned`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kbgraph.core.shapes import intent_text, operation_words
from kbgraph.search.asks import split_asks
from kbgraph.search.handoff import is_handoff
from kbgraph.search.lexical import query_terms
from kbgraph.search.ranked import best_positions
from kbgraph.search.results import AskMatch
from kbgraph.search.scoring import (
    NO_CHANGE, WordOperationCounts, ask_history_association, asks_association, history_association, intent_match,
    intent_matches, one_ask_matches, operations_association, repeat_factors,
)
from kbgraph.search.student.ask_words import AskWords
from kbgraph.search.student.context import Run, SearchContext
from kbgraph.search.student.intent_history import HISTORY_TERMS
from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.text_vectors import IntentVectors, unit_rows
from kbgraph.search.student.versioned import NamespaceVersions
from kbgraph.search.student.workflow_operations import SequenceTable, in_domain

__all__ = ["HISTORY_TERMS", "INTENT_CHANNEL", "IntentMatcher", "IntentScore", "intent_channel", "uses_intent"]

#: The name the intent channel gives its candidates (``SearchHit.found_by``).
INTENT_CHANNEL = "intent:operations"


def uses_intent(run: Run) -> bool:
    """The intent match takes part: a request with words and without executed steps, and a weight."""
    return not run.steps and run.pg is not None and run.weights.intent.weight > 0


@dataclass(frozen=True)
class IntentScore:
    """A workflow's intent match and the asks its operations answer best."""

    score: float
    asks: tuple[AskMatch, ...]
    #: What the namespace's own history adds (η · association; 0 when it says nothing).
    learnt: float = 0.0


class IntentMatcher:
    """The intent match of one request against any sequence of operations (cached per sequence)."""

    def __init__(self, run: Run, vectors: IntentVectors, asks: list[str]):
        assert run.pg is not None
        self._vectors = vectors
        #: Where :meth:`score` reads the vectors of operations and of what a sequence changes: the
        #: channel's table once it ranked with it (:meth:`table_scores`), else the process's vectors.
        self._vectors_of: Callable[[Sequence[str]], npt.NDArray[np.float64]] = vectors.of
        self._penalty = run.weights.intent.unasked_penalty
        self._order_penalty = run.weights.intent.order_penalty
        self._one_ask_penalty = run.weights.intent.one_ask_penalty
        self._repeat_penalty = run.weights.intent.repeat_penalty
        self.asks = asks
        self._whole = unit_rows(np.asarray([run.pg], dtype=np.float64))[0]
        # The asks are this request's own: embedded here, not kept with the memory's texts.
        self._ask_vectors = (unit_rows(np.asarray(vectors.embedder.embed(asks), dtype=np.float64)) if len(asks) > 1
                             else self._whole[None, :])
        self._known: dict[tuple[str | None, tuple[str, ...]], IntentScore] = {}
        #: :meth:`candidate_scores` by (operations, domain): the score and the history's part of it.
        self._ranked: dict[tuple[tuple[str, ...], str | None], tuple[float, float]] = {}
        #: What the asks' words say beyond their vectors (a human, a state, a verb).
        self._reading = AskWords(asks, run.weights.intent)
        #: The memory holds workflows of the request's domain (:meth:`know`): the match is then with
        #: the operations of its own domain, not a guess across domains.
        self.home = True
        #: Each ask's largest cosine over every operation the namespace knows (:meth:`know`).
        self._best_by_ask = np.zeros(len(self._ask_vectors))
        #: The request's words, and what the namespace's history says of them (:meth:`learn`).
        self._words = query_terms(run.query.full_text(), HISTORY_TERMS)
        self._history: WordOperationCounts | None = None
        #: One operation's association with the request's words (-1) or an ask's (:meth:`_said`).
        self._associations: dict[tuple[int, str], float | None] = {}
        self._history_weight = run.weights.intent.history_weight
        # Each ask's own words, only where the history is read (η > 0) and there are several asks.
        self._ask_words = ([query_terms(ask, HISTORY_TERMS) for ask in asks]
                           if len(asks) > 1 and self._history_weight > 0 else [])

    def know(self, operations: Sequence[tuple[str, str | None]], home: bool = True) -> None:
        """Sets the operations the memory knows (each with its domain), against which each ask's
        best match is taken (before any :meth:`score`); ``home``: whether they include workflows
        of the request's own domain."""
        self.home = home
        distinct = sorted(set(operations), key=lambda item: (item[0], item[1] or ""))
        if distinct and (len(self.asks) > 1 or self._one_ask_penalty > 0):
            texts = [in_domain(operation_words(op), domain) for op, domain in distinct]
            by_pair = self._ask_vectors @ self._vectors.of(texts).T
            self._best_by_ask = self._reading.shifted(by_pair, [op for op, _ in distinct]).max(axis=1)
        if any(is_handoff(op) for op, _ in distinct):
            # An ask for a human means the handoff, which the memory knows: its best match is 1.
            self._best_by_ask = np.where(self._reading.human, 1.0, self._best_by_ask)
        self._known.clear()
        self._ranked.clear()

    @property
    def history_words(self) -> set[str]:
        """Every word :meth:`score` asks the history about: the request's and each ask's."""
        return {*self._words, *(word for words in self._ask_words for word in words)}

    def learn(self, history: WordOperationCounts) -> None:
        """Sets the namespace's history of requests and operations (before any :meth:`score`)."""
        self._history = history
        self._associations.clear()
        self._known.clear()
        self._ranked.clear()

    @classmethod
    def of(cls, ctx: SearchContext, run: Run) -> IntentMatcher:
        text = run.query.full_text()
        asks = ctx.ask_splitter(text) if ctx.ask_splitter is not None else None
        return cls(run, ctx.intent_vectors, asks or split_asks(text, run.weights.intent.payment_joins))

    def score(self, operations: Sequence[str], domain: str | None = None) -> IntentScore:
        key = tuple(operations)
        known = self._known.get((domain, key))
        if known is not None:
            return known
        whole = float(self._vectors_of([in_domain(intent_text(key), domain)])[0] @ self._whole)
        distinct = list(dict.fromkeys(key))
        if distinct:
            matrix = self._ask_vectors @ self._vectors_of([in_domain(operation_words(op), domain) for op in distinct]).T
        else:
            matrix = np.zeros((len(self._ask_vectors), 0))
        shifts = self._reading.shifts(distinct)
        matrix = matrix + shifts
        if len(self.asks) < 2 and distinct:
            whole += float(shifts[0].mean())
        handoffs = np.array([is_handoff(op) for op in distinct], dtype=bool)
        matrix = self._reading.answer_human(matrix, handoffs)
        if self._reading.one_human and handoffs.any():
            whole = 1.0
        score = intent_match(min(1.0, max(-1.0, whole)), np.clip(matrix, -1.0, 1.0),
                             np.clip(self._best_by_ask, -1.0, 1.0), self._penalty, self._order_penalty)
        if self._one_ask_counts():
            score = float(one_ask_matches([score], matrix[0], [range(len(distinct))], float(self._best_by_ask[0]),
                                          self._one_ask_penalty)[0])
        if self._repeat_penalty > 0:
            score *= float(repeat_factors([len(key)], [len(distinct)], self._repeat_penalty)[0])
        # What the history adds, from each operation's association worked out once per request
        # (_said; the same floats as history_association / ask_history_association of the set:
        # tests/search/test_intent_channel.py), not again for every candidate.
        if self._ask_words and self._history is not None and self._history_weight > 0:
            association = ask_history_association(self._ask_words, distinct, self._history, said=self._said)
            learnt = self._history_weight * association if association is not None else 0.0
        else:
            learnt = self.learnt(distinct)
        self._known[(domain, key)] = IntentScore(score + learnt, _ask_matches(self.asks, distinct, matrix, whole), learnt)
        return self._known[(domain, key)]

    def learnt(self, distinct: Sequence[str]) -> float:
        """What the history adds to the match of the distinct operations ``distinct``, as
        :meth:`score` works it out (``learnt``): η times
        :func:`~kbgraph.search.scoring.history_association` of the request's words (one ask) or
        :func:`~kbgraph.search.scoring.ask_history_association` of each ask's (several), 0 when it
        says nothing, combined by the same functions those use
        (:func:`~kbgraph.search.scoring.operations_association`,
        :func:`~kbgraph.search.scoring.asks_association`), so the value is equal; each operation's
        association is worked out once per request (:meth:`_said`): a namespace's workflows make a
        few hundred distinct operations. One set at a time: the channel takes every set of its
        table at once (:meth:`table_learnt`, checked against this set by set)."""
        if self._history is None or self._history_weight <= 0:
            return 0.0
        operations = list(distinct) or [NO_CHANGE]
        # One ask: the request's words for every operation; several: each ask's own words for the
        # operation that answers it best (a workflow is credited ask by ask).
        association = (operations_association([self._said(-1, op) for op in operations]) if not self._ask_words
                       else asks_association([[self._said(i, op) for op in operations]
                                              for i in range(len(self._ask_words))]))
        return self._history_weight * association if association is not None else 0.0

    def table_learnt(self, table: SequenceTable) -> npt.NDArray[np.float64]:
        """:meth:`learnt` of each set of :meth:`SequenceTable.distinct_sets`, in one pass over the
        sets' operations: the same associations per operation (:meth:`_said`), added in the same
        order as :func:`~kbgraph.search.scoring.operations_association` and
        :func:`~kbgraph.search.scoring.asks_association` add them, so the same floats; a namespace
        of 100,000 experiences has thousands of sets, each a call of :meth:`learnt` before."""
        names, flat, owner, starts = table.set_columns()
        sets = len(starts)
        if self._history is None or self._history_weight <= 0 or not sets:
            return np.zeros(sets)
        if not self._ask_words:
            said = np.array([np.nan if (v := self._said(-1, op)) is None else v for op in names])[flat]
            known = np.bincount(owner, weights=~np.isnan(said), minlength=sets) > 0
            sums = np.bincount(owner, weights=np.nan_to_num(said, nan=0.0), minlength=sets)
            association = np.where(known, sums / np.bincount(owner, minlength=sets), np.nan)
        else:
            total, any_said = np.zeros(sets), np.zeros(sets, dtype=bool)
            for ask in range(len(self._ask_words)):
                said = np.array([-np.inf if (v := self._said(ask, op)) is None else v for op in names])[flat]
                best = np.maximum.reduceat(said, starts)
                total = total + np.where(best > -np.inf, best, 0.0)
                any_said |= best > -np.inf
            association = np.where(any_said, total / len(self._ask_words), np.nan)
        return np.where(np.isnan(association), 0.0, self._history_weight * association)

    def _said(self, ask: int, operation: str) -> float | None:
        """The association of ask ``ask``'s words (-1: the request's) with ``operation`` alone."""
        key = (ask, operation)
        if key not in self._associations:
            assert self._history is not None
            words = self._words if ask < 0 else self._ask_words[ask]
            self._associations[key] = history_association(words, [operation], self._history)
        return self._associations[key]

    def _one_ask_counts(self) -> bool:
        """A request of one ask, of a domain the memory holds workflows of, costs a workflow the
        changes it makes beyond one (:func:`~kbgraph.search.scoring.one_ask_matches`); another
        domain's request is matched across domains as a guess, and left as it is."""
        return len(self.asks) < 2 and self.home and self._one_ask_penalty > 0

    def candidate_scores(self, items: Sequence[tuple[Sequence[str], str | None] | None]) -> list[tuple[float, float] | None]:
        """``(score(ops, domain).score, .learnt)`` of each item (None stays None), every distinct
        sequence of them worked out at once as the channel ranks the namespace's
        (:meth:`table_scores`, equal to :meth:`score` within 1e-12): a search scores ~70 candidates,
        ~10 distinct sequences, each ~0.1 ms of small products one by one. The asks each sequence
        answers are only for an explanation: :meth:`asks_of`, asked for the hits alone."""
        wanted = {(tuple(item[0]), item[1]) for item in items if item is not None}
        missing = sorted((key for key in wanted if key not in self._ranked), key=lambda key: (key[0], key[1] or ""))
        if missing:
            matches, learnt = self._table_parts(SequenceTable(missing, self._vectors))
            totals = (matches + learnt).tolist() if learnt is not None else matches.tolist()
            shares = learnt.tolist() if learnt is not None else [0.0] * len(missing)
            self._ranked.update(zip(missing, zip(totals, shares, strict=True), strict=True))
        return [None if item is None else self._ranked[(tuple(item[0]), item[1])] for item in items]

    def asks_of(self, operations: Sequence[str], domain: str | None = None) -> list[AskMatch]:
        """The ask each of ``operations`` answers best, as :meth:`score` explains it."""
        return list(self.score(operations, domain).asks)

    def ranking_scores(self, sequences: Sequence[tuple[tuple[str, ...], str | None]]) -> list[float]:
        """``score(operations, domain).score`` of many sequences at once, without their explanations."""
        return [float(score) for score in self.table_scores(SequenceTable(sequences, self._vectors))]

    def table_scores(self, table: SequenceTable) -> npt.NDArray[np.float64]:
        """:meth:`ranking_scores` of a table's sequences: the channel ranks every workflow of the
        namespace (thousands of sequences at 10,000 experiences), so their vectors, kept with the
        table, are multiplied once for all of them."""
        if not table.sequences:
            return np.zeros(0)
        self._vectors_of = table.vectors_of
        matches, learnt = self._table_parts(table)
        return matches if learnt is None else matches + learnt

    def _table_parts(self, table: SequenceTable) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
        """:meth:`table_scores` in its two parts: the match of each sequence, and what the history
        adds to it (None when the history takes no part)."""
        # np.einsum, not BLAS: products of this size (thousands of rows) make OpenBLAS start its
        # threads, which then spin after it (~20 ms of CPU a search on 2 cores, the cores Neo4j needs;
        # docs/performance.md). One thread is what a product this small needs.
        wholes: npt.NDArray[np.float64] = np.einsum("ij,j->i", table.texts(), self._whole)
        shifts = self._reading.shifts(table.column_operations()) if self._reading.moves else None
        if shifts is not None and len(self.asks) < 2:
            # A request of one ask: the whole match moves by the mean shift of the sequence's operations.
            wholes = wholes + table.sequence_means(shifts[0])
        matches = np.clip(wholes, 0.0, 1.0)
        handoff_columns, hands_off = table.handoffs() if self._reading.human.any() else (None, None)
        if hands_off is not None and self._reading.one_human:
            matches = np.where(hands_off, 1.0, matches)
        if len(self.asks) >= 2:
            operations, columns = table.operations()
            by_pair = (np.einsum("aj,oj->ao", self._ask_vectors, operations) if len(operations)
                       else np.zeros((len(self.asks), 0)))
            if shifts is not None:
                by_pair = by_pair + shifts
            if handoff_columns is not None:
                by_pair = self._reading.answer_human(by_pair, handoff_columns)
            matches = intent_matches(matches, by_pair, columns, self._best_by_ask, self._penalty, self._order_penalty)
        elif self._one_ask_counts():
            operations, columns = table.operations()
            by_operation = np.einsum("j,oj->o", self._whole, operations) if len(operations) else np.zeros(0)
            if shifts is not None:
                by_operation = by_operation + shifts[0]
            if handoff_columns is not None:
                by_operation = self._reading.answer_human(by_operation[None, :], handoff_columns)[0]
            matches = one_ask_matches(matches, by_operation, columns, float(self._best_by_ask[0]), self._one_ask_penalty)
        if self._repeat_penalty > 0:
            matches = matches * repeat_factors([len(ops) for ops, _ in table.sequences],
                                               [len(distinct) for distinct in table.distinct], self._repeat_penalty)
        if self._history is None or self._history_weight <= 0:
            return matches, None
        # What the history adds is a sequence's own (its distinct operations').
        # Sequences of several domains may make the same operations: each set is worked out once.
        _, of_sequence = table.distinct_sets()
        return matches, self.table_learnt(table)[of_sequence]


def intent_channel(ctx: SearchContext, run: Run, matcher: IntentMatcher,
                   version: Future[NamespaceVersions] | None = None) -> list[ChannelHit]:
    """The ``intent_candidates`` experiences whose workflows do best what the request asks (all the
    experiences standing for one sequence of operations come in together), best first, each a
    :class:`ChannelHit`. Another domain than the query's is discounted as the other channels do.
    ``version``, when given, is set to the namespace's versions the request read (or to its
    failure) as soon as it answers: the search waits for it instead of asking for the version."""
    params, w = run.params, run.weights
    # One request: the workflows and, when the history takes part, the history of requests.
    try:
        workflows, history = ctx.intent_rows(params, history=w.intent.history_weight > 0,
                                             on_version=version.set_result if version is not None else None)
    except BaseException as error:
        if version is not None and not version.done():
            version.set_exception(error)
        raise
    domain, other = params["domain"], float(params["other_domain"])
    matcher.know(workflows.known_operations(domain), home=workflows.holds(domain))
    if history is not None:
        matcher.learn(history.counts(matcher.history_words, run.excluded))
    scores = matcher.table_scores(workflows.table)
    if domain is not None:
        scores = scores * np.where(workflows.of_domain(domain), 1.0, other)
    # Best first; equal scores in (domain, operations) order. Only the best and those tied with the
    # last of them are sorted (13,303 sequences at 100,000 experiences).
    out: list[ChannelHit] = []
    ties = workflows.tie_order
    for i in best_positions(scores, np.arange(scores.size), w.intent.candidates, ties.__getitem__):
        out += [ChannelHit(exp_id, float(scores[i])) for exp_id in workflows.members[workflows.keys[i]]]
    return out


def _ask_matches(asks: list[str], operations: list[str], matrix: np.ndarray, whole: float) -> tuple[AskMatch, ...]:
    """For each ask, the operation that answers it best and how well (cosine); a request of one ask
    is matched as a whole with the operations read together."""
    if not operations:
        return ()
    if len(asks) < 2:
        return (AskMatch(ask=asks[0] if asks else "", operation=", ".join(operations),
                         similarity=round(max(0.0, whole), 6)),)
    return tuple(
        AskMatch(ask=ask, operation=operations[int(np.argmax(row))], similarity=round(max(0.0, float(row.max())), 6))
        for ask, row in zip(asks, matrix, strict=True)
    )
