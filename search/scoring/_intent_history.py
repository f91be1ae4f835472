"""What the memory's own runs say a request's words ask for (issue 51, "learned from the memory's
own history").

A zero-shot match of a request with an operation's words ("update reservation flights") misses
what a domain's customers call it ("move me to the flight the day after"). The namespace's own
runs pair a request (the run's task text) with the operations it made. From those pairs, counted
once per stored run that worked, each word of a new request says how much more often than chance
a run whose request held it made operation *o*: the smoothed lift

    P(o | w) = (n(w, o) + a · P(o)) / (n(w) + a)        P(o) = n(o) / N
    lift(w, o) = log(P(o | w) / P(o))

and the request's association with *o* is the idf-weighted mean of its words' lifts (a word every
run holds says nothing; a word no run holds is left out), counted only when positive: the words
are evidence *for* an operation, and a word that never went with an operation in a history of a
few hundred runs is no evidence against it (signed lifts cost short_retail −0.036 held out on the
development suite, positive ones −0.008 with short_banking +0.023). A run that changed nothing counts under
:data:`NO_CHANGE`. Smoothing ``a`` pulls a word seen in few runs towards no association, so one
run's words cannot decide. Pure: the counts are built from pairs given, nothing is read.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

__all__ = ["NO_CHANGE", "WordOperationCounts", "ask_history_association", "asks_association", "history_association",
           "operations_association"]

#: The operation a run that changed nothing is counted under.
NO_CHANGE = "<no change>"

#: Pseudo-count ``a`` of the smoothing: a word held by a runs moves P(o | w) half way from P(o).
SMOOTHING = 1.0


@dataclass
class WordOperationCounts:
    """How often request words and operations met in the runs counted: ``runs`` (N), ``by_word``
    (n(w)), ``by_operation`` (n(o)), ``together`` (n(w, o)). Each run counts each distinct word
    and each distinct operation once."""

    runs: int = 0
    by_word: Counter[str] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    together: Counter[tuple[str, str]] = field(default_factory=Counter)

    @classmethod
    def of(cls, pairs: Iterable[tuple[Iterable[str], Sequence[str]]]) -> WordOperationCounts:
        """The counts of ``(words of a run's request, operations it made)`` pairs."""
        counts = cls()
        for words, operations in pairs:
            counts.add(words, operations)
        return counts

    def add(self, words: Iterable[str], operations: Sequence[str]) -> None:
        distinct_words = set(words)
        distinct_operations = set(operations) or {NO_CHANGE}
        self.runs += 1
        self.by_word.update(distinct_words)
        self.by_operation.update(distinct_operations)
        self.together.update((w, o) for w in distinct_words for o in distinct_operations)


def history_association(words: Iterable[str], operations: Sequence[str], counts: WordOperationCounts,
                        smoothing: float = SMOOTHING) -> float | None:
    """How much more than chance the counted runs whose requests held ``words`` made
    ``operations``: the mean over the distinct operations (:data:`NO_CHANGE` for none) of the
    idf-weighted mean lift of the words, or 0 where it is negative (module docstring). None when nothing can be said: no run
    counted, or none of the words in any counted request."""
    n = counts.runs
    known = [w for w in dict.fromkeys(words) if counts.by_word[w] > 0]
    if n == 0 or not known:
        return None
    idf = [math.log((n + 1) / (counts.by_word[w] + 0.5)) for w in known]
    weight = sum(idf)
    if weight <= 0:
        return None
    lifts = []
    for operation in dict.fromkeys(operations or (NO_CHANGE,)):
        prior = counts.by_operation[operation] / n
        if prior == 0:
            # An operation none of the counted runs made: nothing learnt about it, no lift either way.
            lifts.append(0.0)
            continue
        total = 0.0
        for w, w_idf in zip(known, idf, strict=True):
            given = (counts.together[(w, operation)] + smoothing * prior) / (counts.by_word[w] + smoothing)
            total += w_idf * math.log(given / prior)
        lifts.append(max(0.0, total / weight))
    return operations_association(lifts)


def ask_history_association(asks_words: Sequence[Iterable[str]], operations: Sequence[str],
                            counts: WordOperationCounts, smoothing: float = SMOOTHING,
                            said: Callable[[int, str], float | None] | None = None) -> float | None:
    """A request of several asks, ask by ask: the mean over its asks of the best
    :func:`history_association` of the ask's own words with one of ``operations`` (an ask nothing
    can be said of counts 0). A workflow is credited for each ask some operation of it answers in
    the history, not for the whole request's words spread over all its operations. None when
    nothing can be said of any ask. ``said(ask, operation)``, when given, is that association
    worked out by the caller (once per request and operation, for the many workflows a search
    scores), in place of computing it here."""
    distinct = list(dict.fromkeys(operations or (NO_CHANGE,)))
    by_ask = []
    for i, words in enumerate(asks_words):
        if said is not None:
            by_ask.append([said(i, o) for o in distinct])
            continue
        ask_words = list(words)  # read once per operation
        by_ask.append([history_association(ask_words, [o], counts, smoothing) for o in distinct])
    return asks_association(by_ask)


def operations_association(by_operation: Sequence[float | None]) -> float | None:
    """:func:`history_association` from each distinct operation's own association with the words
    (``history_association(words, [o])``, in the workflow's order): their mean, None when nothing
    can be said (then nothing can be said of any operation: it depends on the words alone). For a
    caller that works each operation's association out once for many workflows."""
    if not by_operation or all(value is None for value in by_operation):
        return None
    return sum(value or 0.0 for value in by_operation) / len(by_operation)


def asks_association(by_ask: Sequence[Sequence[float | None]]) -> float | None:
    """:func:`ask_history_association` from each ask's association with each distinct operation
    alone (rows: asks, in order; columns: operations): the mean over the asks of the best of the
    ask's row (an ask nothing can be said of counts 0), None when nothing can be said of any ask."""
    per_ask = [max(said) if (said := [v for v in row if v is not None]) else None for row in by_ask]
    if all(value is None for value in per_ask):
        return None
    return sum(value or 0.0 for value in per_ask) / len(per_ask)
