"""The namespace's history of requests and what they changed, as the intent channel counts it
(``search_intent_history``; :func:`kbgraph.search.scoring.history_association`), read once per
search version and domain.

The stored runs of the query's domain that worked are the same rows for every query of that domain;
only the query's own runs (its ``exclude``: a leave-one-out query's record) are left out of the
counts. So the rows are read without the exclusion, kept with the namespace's search version
(:mod:`kbgraph.search.student.versioned`), counted once (:class:`IntentHistory`), and each search
takes from them the counts of its own words with its own runs left out (:meth:`IntentHistory.counts`):
the counts of every run, less those of the runs it excludes. Counts are whole numbers, so the
difference is exactly the count over the runs left, and the association of every word the search
asks about is what counting the rows that remain would give.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from functools import lru_cache
from typing import Any

from kbgraph.search.lexical import query_terms
from kbgraph.search.scoring import WordOperationCounts

__all__ = ["HISTORY_TERMS", "HistoryRow", "IntentHistory", "is_left_out", "stored_request_words"]

#: Words of a request (and of each stored request) the history counts: the first ones say what it
#: asks; a pasted story is not counted word for word.
HISTORY_TERMS = 256

#: One stored run as ``search_intent_history`` reads it: (experience id, the runs it stands for,
#: its request's words, its operations).
HistoryRow = tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]


@lru_cache(maxsize=65_536)
def stored_request_words(problem: str) -> tuple[str, ...]:
    """The words of a stored request, tokenised once per process: every search of a domain reads
    the same stored requests again."""
    return tuple(query_terms(problem, HISTORY_TERMS))


def is_left_out(exp_id: str, sources: Sequence[str], excluded: Collection[str]) -> bool:
    """A query never learns from its own runs: an experience it excludes, or one that stands only for
    runs it excludes (the rule ``search_intent_history`` applied in Cypher before it was versioned)."""
    return exp_id in excluded or (len(sources) > 0 and all(s in excluded for s in sources))


class IntentHistory:
    """The rows of one ``search_intent_history`` read, counted once: every run's words and
    operations (:class:`~kbgraph.search.scoring.WordOperationCounts`), the pairs indexed by word so
    that a search copies only its own words' counts."""

    def __init__(self, rows: Sequence[HistoryRow]):
        self.rows = rows
        self._all = WordOperationCounts.of((words, operations) for _, _, words, operations in rows)
        self._together_by_word: dict[str, dict[str, int]] = {}
        for (word, operation), n in self._all.together.items():
            self._together_by_word.setdefault(word, {})[operation] = n
        self._by_key: dict[str, list[int]] = {}
        for i, (exp_id, sources, _, _) in enumerate(rows):
            for key in {exp_id, *sources}:
                self._by_key.setdefault(key, []).append(i)

    @classmethod
    def of_records(cls, records: Iterable[Sequence[Any]]) -> IntentHistory:
        """From the query's rows ``[id, source_ids, problem, operations]``."""
        return cls(rows_of(records))

    def __len__(self) -> int:
        return len(self.rows)

    def left_out(self, excluded: Collection[str]) -> list[HistoryRow]:
        """The rows a query excluding ``excluded`` does not count, in the rows' order."""
        found = sorted({i for key in excluded for i in self._by_key.get(key, ())})
        return [self.rows[i] for i in found if is_left_out(self.rows[i][0], self.rows[i][1], excluded)]

    def counts(self, words: Iterable[str], excluded: Collection[str] = ()) -> WordOperationCounts:
        """The counts over the rows a query excluding ``excluded`` counts, for ``words``: the runs
        and every operation's count in full, the counts of a word and of its pairs only for
        ``words`` (every other word counts 0, so only words among them may be asked about)."""
        wanted = set(words)
        by_word = Counter({w: self._all.by_word[w] for w in wanted if w in self._all.by_word})
        together = Counter({(w, o): n for w in wanted for o, n in self._together_by_word.get(w, {}).items()})
        counts = WordOperationCounts(self._all.runs, by_word, Counter(self._all.by_operation), together)
        left_out = self.left_out(excluded) if excluded else []
        if left_out:
            less = WordOperationCounts.of((wanted.intersection(row_words), operations)
                                          for _, _, row_words, operations in left_out)
            counts.runs -= less.runs
            counts.by_word.subtract(less.by_word)
            counts.by_operation.subtract(less.by_operation)
            counts.together.subtract(less.together)
        return counts


def rows_of(records: Iterable[Sequence[Any]]) -> tuple[HistoryRow, ...]:
    """The query's rows ``[id, source_ids, problem, operations]`` as :data:`HistoryRow`, hashable
    (the key the counts are kept by)."""
    return tuple((str(exp_id), tuple(str(s) for s in sources or ()), stored_request_words(str(problem)),
                  tuple(operations or ()))
                 for exp_id, sources, problem, operations in records)
