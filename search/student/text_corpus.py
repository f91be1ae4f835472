"""The full-text channel's own index of a namespace: the texts of its experiences that pass a set of
filters (problem, goal, domain) as an in-memory BM25 corpus (:class:`~kbgraph.search.lexical.LexicalCorpus`),
kept with the namespace's search version (:mod:`kbgraph.search.student.versioned`).

Ranked with the namespace's own statistics, the channel's answer is the same whatever else the
database holds, where the shared full-text index's top hits and term statistics are the whole
database's (a namespace among others asks it for growing pages until enough of its own come back).

- **Up to ``exact_scan_max`` experiences** a search reads the texts itself when the version changed
  (``search_experience_texts``, which reads nothing while it is unchanged), as before.
- **Above it** reading and indexing every text takes long (~0.6 s at 10,000, ~7 s at 100,000), too
  long for a search to wait on. A search asks for the namespace's version (``search_version_of``,
  one index seek) and ranks in the process when the corpus kept for its filters was read, and
  confirmed by a second read, at that version. Otherwise it asks the full-text index, as every
  search did before, and the corpus is read again in the background: once a version has been the
  one searches see for ``settle_seconds`` (while writes keep coming, no read is wasted on a version
  about to change), one read per set of filters at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.lexical import LexicalCorpus
from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.versioned import KeptByVersion, VersionedRead, sent

__all__ = ["NamespaceTexts", "TextCorpusRefresh", "text_rows"]

#: Seconds a version must have been the one searches see before its corpus is read in the background.
SETTLE_SECONDS = 1.0


@dataclass
class NamespaceTexts:
    """The texts of a namespace's experiences that pass one set of filters: their ids and domains in
    id order, and their BM25 corpus (fields problem, goal, domain)."""

    ids: list[str]
    domains: npt.NDArray[Any]
    corpus: LexicalCorpus
    _weights: dict[tuple[str, float], npt.NDArray[np.float64]] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Sequence[tuple[str, ...]], corpus: LexicalCorpus | None = None) -> NamespaceTexts:
        """From rows ``(id, domain, problem, goal)`` as ``search_experience_texts`` reads them."""
        domains = np.empty(len(rows), dtype=object)
        domains[:] = [row[1] for row in rows]
        return cls([row[0] for row in rows], domains,
                   corpus if corpus is not None else LexicalCorpus([(p, g, d) for _, d, p, g in rows]))

    def rank(self, terms: Sequence[str], k: int, domain: str | None, other_domain: float) -> list[ChannelHit]:
        """The ``k`` best texts for ``terms`` as the full-text index query ranks them: BM25, another
        domain than the query's discounted by ``other_domain``, ties to the smaller id; each hit
        with its BM25."""
        weights = None if domain is None else self._domain_weights(domain, other_domain)
        return [ChannelHit(self.ids[i], score) for i, score in self.corpus.best(terms, k, weights, self.ids)]

    def _domain_weights(self, domain: str, other: float) -> npt.NDArray[np.float64]:
        key = (domain, other)
        kept = self._weights.get(key)
        if kept is None:  # a namespace's searches name a few domains
            kept = np.where(self.domains == domain, 1.0, other)
            if len(self._weights) < 64:
                self._weights[key] = kept
        return kept


def text_rows(answer: Mapping[str, Any]) -> VersionedRead[list[tuple[str, ...]]]:
    """An answer of ``search_experience_texts`` as a versioned read."""
    rows = [tuple(str(value) for value in row) for row in answer["rows"]]
    return VersionedRead(answer["version"], bool(answer["unchanged"]), rows)


class TextCorpusRefresh:
    """Keeps the corpora of a large namespace's texts current in the background (see the module
    docstring). Thread-safe."""

    def __init__(self, kept: KeptByVersion[Hashable, NamespaceTexts],
                 read: Callable[[Mapping[str, Any], str | None], VersionedRead[list[tuple[str, ...]]]],
                 submit: Callable[[Callable[[], None]], Future[None]], settle_seconds: float = SETTLE_SECONDS):
        self._kept = kept
        self._read = read
        self._submit = submit
        self.settle_seconds = settle_seconds
        self._lock = Lock()
        self._seen: dict[Hashable, tuple[str, float]] = {}
        self._running: dict[Hashable, Future[None]] = {}

    def current(self, key: Hashable | None, version: str | None, params: Mapping[str, Any]) -> NamespaceTexts | None:
        """The corpus kept for ``key`` when it was read and confirmed at ``version``, the version a
        search just read; else None, and a background read is started once ``version`` has been
        seen for ``settle_seconds``. A ``key`` of None (filters the version does not apply to) or
        a namespace without a version keeps nothing."""
        if key is None or version is None:
            return None
        kept = self._kept.kept(key)
        if kept is not None and kept[2] and kept[0] == version:
            return kept[1]
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or seen[0] != version:
                self._seen[key] = (version, now)
                if self.settle_seconds > 0:
                    return None
            elif now - seen[1] < self.settle_seconds:
                return None
            if key in self._running:
                return None
            done: Future[None] = Future()  # set when the read is over, whatever its end
            self._running[key] = done
        try:
            self._submit(lambda: self._refresh(key, params, done))
        except RuntimeError:  # the retriever was closed: nothing is kept any more
            self._finish(key, done)
        return None

    def settle(self) -> None:
        """Waits for the background reads under way (tests, benchmarks)."""
        with self._lock:
            running = list(self._running.values())
        for job in running:
            job.result()

    def _refresh(self, key: Hashable, params: Mapping[str, Any], done: Future[None]) -> None:
        try:
            for _ in range(2):  # the second read at a version confirms the first
                kept = self._kept.kept(key)
                self._kept.take(key, kept, self._read(params, sent(kept)), NamespaceTexts.of)
                held = self._kept.kept(key)
                if held is not None and held[2]:
                    break
        finally:
            self._finish(key, done)

    def _finish(self, key: Hashable, done: Future[None]) -> None:
        with self._lock:
            self._running.pop(key, None)
        done.set_result(None)
