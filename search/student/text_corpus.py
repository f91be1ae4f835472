"""The full-text channel's own index of a namespace: the texts of its experiences that pass a set of
filters (problem, goal, domain) as an in-memory BM25 corpus (:class:`~kbgraph.search.lexical.LexicalCorpus`),
kept with the namespace's search version (:mod:`kbgraph.search.student.versioned`).

Ranked with the namespace's own statistics, the channel's answer is the same whatever else the
database holds, where the shared full-text index's top hits and term statistics are the whole
database's (a namespace among others asks it for growing pages until enough of its own come back).

- **Up to ``exact_scan_max`` experiences** a search reads the texts itself when the version changed
  (``search_experience_texts``, which reads nothing while it is unchanged), as before.
- **Above it** reading and indexing every text takes long (~0.3 s at 10,000, ~5 s at 100,000), too
  long for a search to wait on: the corpus is kept current in the background
  (:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`) and a search ranks in the process
  only when the corpus kept for its filters was read, and confirmed, at the version the search
  read (``search_version_of``, one index seek); otherwise it asks the full-text index, as every
  search did before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.lexical import LexicalCorpus
from kbgraph.search.student.change_feed import first_id, rows_of
from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.versioned import VersionedRead

__all__ = ["NamespaceTexts", "patched_texts", "text_rows"]

#: A patched corpus is built anew once this share of its positions hold nothing (texts taken out).
_EMPTY_SHARE = 0.25

@dataclass
class NamespaceTexts:
    """The texts of a namespace's experiences that pass one set of filters: their ids and domains in
    id order, and their BM25 corpus (fields problem, goal, domain). Patched by the change feed
    (:func:`patched_texts`), the texts changed are at the end and the positions of the texts
    taken out hold nothing (no term: no search finds them)."""

    ids: list[str]
    domains: npt.NDArray[Any]
    corpus: LexicalCorpus
    _weights: dict[tuple[str, float], npt.NDArray[np.float64]] = field(default_factory=dict)
    #: How many positions hold nothing (texts taken out by a patch).
    empty: int = 0
    #: Each id's position (its last: a patched text is added again at the end), made when a patch
    #: first asks and carried by the patches.
    _positions: dict[str, int] | None = None

    def positions(self) -> dict[str, int]:
        """Each id's position in ``ids`` (the last one), for :func:`patched_texts` (not to be changed)."""
        if self._positions is None:
            self._positions = {exp_id: n for n, exp_id in enumerate(self.ids)}
        return self._positions

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


def patched_texts(before: NamespaceTexts, rows: list[tuple[str, ...]], changed: list[str]) -> NamespaceTexts:
    """The texts of ``rows`` made from ``before`` and the ids whose rows ``changed`` (a
    :data:`~kbgraph.search.student.versioned.Patch`, for the change feed): the changed texts are
    taken out of its corpus and added again as they are now (:meth:`LexicalCorpus.patched`); the
    positions of the others stay. It ranks as :meth:`NamespaceTexts.of` of ``rows`` does: every
    text's BM25 is the same, and ties go to the smaller id either way."""
    if not changed:  # no row changed (a write read again as it was): the texts before, with their caches
        return before
    gone = set(changed)
    # By the positions kept, not a pass over every text: a follow brings a write's few ids.
    positions = before.positions()
    held = sorted(at for exp_id in gone if (at := positions.get(exp_id)) is not None
                  and before.corpus.documents[at] is not None)
    fresh = rows_of(rows, gone, first_id)
    empty = before.empty + len(held)
    if before.corpus.size == 0 or empty > _EMPTY_SHARE * (before.corpus.size + len(fresh)):
        return NamespaceTexts.of(rows)
    corpus = before.corpus.patched(held, [(p, g, d) for _, d, p, g in fresh])
    domains = np.empty(len(before.ids) + len(fresh), dtype=object)
    domains[: len(before.ids)] = before.domains
    domains[len(before.ids):] = [row[1] for row in fresh]
    moved = dict(positions)
    moved.update((row[0], len(before.ids) + n) for n, row in enumerate(fresh))
    # The domains' weights by position: the ones kept, and the fresh texts' after them.
    weights = {(domain, other): np.concatenate([kept, np.where(domains[len(before.ids):] == domain, 1.0, other)])
               for (domain, other), kept in list(before._weights.items())}  # pylint: disable=protected-access
    return NamespaceTexts([*before.ids, *(row[0] for row in fresh)], domains, corpus, weights, empty, moved)


def text_rows(answer: Mapping[str, Any]) -> VersionedRead[list[tuple[str, ...]]]:
    """An answer of ``search_experience_texts`` as a versioned read."""
    rows = [tuple(str(value) for value in row) for row in answer["rows"]]
    return VersionedRead(answer["version"], bool(answer["unchanged"]), rows)
