"""The lexical channel: the Lucene query string built from a free-text query, and the BM25 score
of the candidates.

Users type stories, ids, punctuation and Lucene operators without meaning them as syntax; one
stray ``(`` or ``:`` would make the full-text index fail. So the query string is built only from
word tokens: lower-cased, English stop words dropped (a customer's story is mostly stop words,
which would otherwise swamp the short task texts), each term escaped and OR-ed.

The full-text index finds candidates; it does not score them. Its BM25 takes term statistics from
the whole database — every namespace, and deleted nodes until Lucene merges its segments — so the
same namespace and query ranked differently as other tenants came and went (0.39 to 0.47 nDCG@10
on the real runs after another namespace was ingested). :func:`bm25_scores` scores the candidates
of one search with statistics from those candidates alone: a term shared by most of them weighs
little, one that singles a few out weighs much, and nothing outside the namespace takes part.

Finding the candidates has the same trouble: the index's top hits are the database's, crowded by
other namespaces' texts. For a namespace small enough to scan, :class:`LexicalCorpus` is the
index, made of the namespace's own texts: the channel then takes the namespace's best texts by
BM25 with the namespace's own statistics, as Lucene scores a multi-field index (each field scored
on its own, the fields summed), and the answer is the same whatever else the database holds.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from kbgraph.core.generalise import PLACEHOLDER
from kbgraph.search.ranked import best_positions
from kbgraph.search.stop_words import ENGLISH_STOP_WORDS

__all__ = ["ADDENDS_HELD", "CHAT_WORDS", "MAX_TERMS", "LexicalCorpus", "bm25_ceiling", "bm25_scores", "bm25_with_ceiling", "is_verbose", "lucene_query",
           "query_terms"]

#: Lucene refuses boolean queries of more than 1,024 clauses; the first 64 distinct terms of a
#: query carry its meaning (and keep the index lookup fast).
MAX_TERMS = 64

_TOKEN = re.compile(r"[0-9A-Za-z\u00C0-\uFFFF]+")
#: Placeholders generalisation put in the text ({id}, {email}, …; kbgraph.core.generalise.PLACEHOLDER,
#: beside what writes them): not words anybody said, and every stored problem has them. Search has
#: the stored string alone, so it leaves them out of it.
#: Words of a request that are not about its task: greetings, courtesy and "I need / would like /
#: am looking to" (an agent's first message from a user is full of them, and on real runs they
#: matched incidental words of unrelated tasks). Always dropped, like the placeholders.
CHAT_WORDS = frozenset({
    "hi", "hello", "hey", "thanks", "thank", "please", "like", "need", "needs", "want", "wants", "help",
    "hoping", "looking", "trying", "assistance", "assist", "able", "ll", "ve", "im", "id", "don", "isn",
})
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def query_terms(text: str, limit: int = MAX_TERMS, stop_words: bool = True) -> list[str]:
    """Distinct lower-cased word tokens of ``text`` (2+ characters; without placeholders and
    :data:`CHAT_WORDS`, and without English stop words unless ``stop_words`` is False), in order."""
    seen: dict[str, None] = {}
    if limit <= 0:
        return []
    for match in _TOKEN.finditer(PLACEHOLDER.sub(" ", text).lower()):
        token = match.group(0)
        if len(token) < 2 or token in CHAT_WORDS or (stop_words and token in ENGLISH_STOP_WORDS) or token in seen:
            continue
        seen[token] = None
        if len(seen) >= limit:
            break
    return list(seen)


def is_verbose(text: str, threshold: int) -> bool:
    """A verbose query — a story of ``threshold`` or more distinct words rather than a request.
    Its function words would dominate BM25, so they are dropped (verbose-query reduction)."""
    return len(query_terms(text, threshold, stop_words=False)) >= threshold


def lucene_query(text: str, limit: int = MAX_TERMS, stop_words: bool = True) -> str | None:
    """An OR query of the escaped terms of ``text``; None when there is no term to search for.
    ``stop_words=True`` drops English stop words."""
    terms = [_LUCENE_SPECIAL.sub(r"\\\1", term) for term in query_terms(text, limit, stop_words)]
    return " OR ".join(terms) if terms else None


#: BM25's term-frequency saturation and length normalisation (Lucene's defaults).
BM25_K1 = 1.2
BM25_B = 0.75
#: The term addends a corpus keeps (:meth:`LexicalCorpus.score_array`), in values: 32 MB.
ADDENDS_HELD = 4_000_000


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if len(t) >= 2]


@lru_cache(maxsize=65_536)
def _bag(text: str) -> Counter[str]:
    # The candidates of one search are mostly those of the last ones: their texts are tokenised
    # once (read-only afterwards), not on every search (BM25 over 300 candidates: 1.9 → 0.8 ms).
    return Counter(_tokens(text))


def _statistics(terms: Sequence[str], documents: Sequence[str]) -> tuple[list[Counter[str]], dict[str, float]]:
    """The documents' bags of words and each distinct query term's idf among them, Lucene's
    ``ln(1 + (N − df + 0.5)/(df + 0.5))``: what :func:`bm25_scores` and :func:`bm25_ceiling` share."""
    bags = [_bag(text) for text in documents]
    count = len(documents)
    idf = {t: math.log(1.0 + (count - df + 0.5) / (df + 0.5))
           for t in dict.fromkeys(terms) for df in [sum(1 for bag in bags if t in bag)]}
    return bags, idf


def _bm25(bags: Sequence[Counter[str]], idf: dict[str, float], k1: float, b: float) -> list[float]:
    lengths = [sum(bag.values()) for bag in bags]
    average = sum(lengths) / len(lengths) or 1.0
    scores = []
    for bag, length in zip(bags, lengths, strict=True):
        norm = k1 * (1.0 - b + b * length / average)
        scores.append(sum(weight * bag[t] * (k1 + 1.0) / (bag[t] + norm) for t, weight in idf.items() if t in bag))
    return scores


def bm25_scores(terms: Sequence[str], documents: Sequence[str], k1: float = BM25_K1, b: float = BM25_B) -> list[float]:
    """BM25 of each document for the query ``terms`` (from :func:`query_terms`), with document
    frequencies and average length taken from ``documents`` themselves (the candidates of one
    search): ``Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen))``, with Lucene's
    ``idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5))``. Tokens as in :func:`query_terms` (lower-cased
    words of 2+ characters). 0 for a document with none of the terms; [] for no documents."""
    return bm25_with_ceiling(terms, documents, k1, b)[0]


def bm25_ceiling(terms: Sequence[str], documents: Sequence[str]) -> float:
    """The BM25 a document of average length holding each query term once would get among
    ``documents`` (:func:`bm25_scores`' statistics): ``Σ_t idf(t)``. A document's score over it is
    the share of the query its words cover, weighted by how rare each word is: a request whose
    words the memory does not use ("swap an item that arrived") covers little, however its best
    candidate ranks among the others. Terms that no document holds count at their full idf."""
    return sum(_statistics(terms, documents)[1].values()) if documents else 0.0


def bm25_with_ceiling(
    terms: Sequence[str], documents: Sequence[str], k1: float = BM25_K1, b: float = BM25_B,
) -> tuple[list[float], float]:
    """:func:`bm25_scores` and :func:`bm25_ceiling` from one pass over the documents' statistics
    (a search needs both for its candidates)."""
    if not documents:
        return [], 0.0
    bags, idf = _statistics(terms, documents)
    return _bm25(bags, idf, k1, b), sum(idf.values())


class LexicalCorpus:
    """An in-memory BM25 index of documents made of fields (an experience's problem, goal and
    domain): per field, an inverted index ``term → (documents, term frequencies)`` as arrays and
    the field's per-document norms. :meth:`scores` is Lucene's multi-field BM25 with statistics
    from these documents alone: ``Σ_field Σ_t idf_field(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen_field))``,
    where a field's document count is the documents that have the field. The sums run field by
    field and term by term in the query's order: the same floating-point operations as a loop over
    the postings, in numpy (at 100,000 texts, p50 · p95 3.1 · 9.7 ms a query against 16.1 · 66.5 ms
    for the loop). Each term's addends are kept once computed (:data:`ADDENDS_HELD`); otherwise
    read-only once built (thread-safe)."""

    def __init__(self, documents: Sequence[Sequence[str]], k1: float = BM25_K1, b: float = BM25_B):
        self.size = len(documents)
        self.k1, self.b = k1, b
        #: The documents by position (a patched corpus: None where one was taken out).
        self.documents: list[Sequence[str] | None] = list(documents)
        fields = max((len(d) for d in documents), default=0)
        self._postings: list[dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]]] = []
        self._norms: list[npt.NDArray[np.float64]] = []
        self._lengths: list[npt.NDArray[np.float64]] = []
        self._counts: list[int] = []
        for f in range(fields):
            lengths = []
            postings: dict[str, tuple[list[int], list[int]]] = {}
            for i, document in enumerate(documents):
                bag = _bag(document[f]) if f < len(document) else Counter()
                lengths.append(sum(bag.values()))
                for term, tf in bag.items():
                    found = postings.get(term)
                    if found is None:
                        postings[term] = found = ([], [])
                    found[0].append(i)
                    found[1].append(tf)
            self._postings.append({term: (np.asarray(docs, dtype=np.intp), np.asarray(tfs, dtype=np.float64))
                                   for term, (docs, tfs) in postings.items()})
            counted = [n for n in lengths if n > 0]
            average = sum(counted) / len(counted) if counted else 1.0
            # The per-document part of the denominator, computed once for every query.
            self._norms.append(np.asarray([k1 * (1.0 - b + b * n / average) for n in lengths], dtype=np.float64))
            self._lengths.append(np.asarray(lengths, dtype=np.float64))
            self._counts.append(len(counted))
        # Each (field, term)'s addends, as a query first computes them: they depend on the corpus
        # alone (at 100,000 texts a query's common terms each have tens of thousands of postings).
        self._addends: dict[tuple[int, str], npt.NDArray[np.float64]] = {}
        self._addends_held = 0

    def patched(self, removed: Sequence[int], added: Sequence[Sequence[str]]) -> LexicalCorpus:
        """This corpus without the documents at positions ``removed`` (their positions stay, holding
        nothing) and with ``added`` at the positions after its own: what a corpus built of the
        documents left would score, document by document, with the same floating-point operations
        (the change feed: a write changes a few texts, and building 10,000 again takes ~0.2 s).
        This corpus is left as it was."""
        fields = len(self._postings)
        if any(len(d) != fields for d in added):
            raise ValueError("a patched corpus keeps its fields")
        out = LexicalCorpus([], self.k1, self.b)
        out.size = self.size + len(added)
        out.documents = [*self.documents, *added]
        for position in removed:
            out.documents[position] = None
        gone = {p: self.documents[p] for p in removed if self.documents[p] is not None}
        for f in range(fields):
            postings = dict(self._postings[f])
            taken: dict[str, list[int]] = {}
            for position, document in gone.items():
                for term in _bag(document[f]):  # type: ignore[index]
                    taken.setdefault(term, []).append(position)
            for term, positions in taken.items():
                docs, tfs = postings[term]
                keep = ~np.isin(docs, positions)
                if keep.any():
                    postings[term] = (docs[keep], tfs[keep])
                else:
                    del postings[term]
            grown: dict[str, tuple[list[int], list[int]]] = {}
            lengths = [0] * len(added)
            for j, document in enumerate(added):
                bag = _bag(document[f])
                lengths[j] = sum(bag.values())
                for term, tf in bag.items():
                    found = grown.setdefault(term, ([], []))
                    found[0].append(self.size + j)
                    found[1].append(tf)
            for term, (docs_added, tfs_added) in grown.items():
                new_docs, new_tfs = np.asarray(docs_added, dtype=np.intp), np.asarray(tfs_added, dtype=np.float64)
                old = postings.get(term)
                postings[term] = (new_docs, new_tfs) if old is None else (np.concatenate([old[0], new_docs]),
                                                                         np.concatenate([old[1], new_tfs]))
            all_lengths = np.concatenate([self._lengths[f], np.asarray(lengths, dtype=np.float64)])
            all_lengths[list(gone)] = 0.0
            counted = all_lengths[all_lengths > 0]
            # The integer total, then one division: the whole build's sum(counted) / len(counted).
            average = int(counted.sum()) / counted.size if counted.size else 1.0
            out._postings.append(postings)
            out._lengths.append(all_lengths)
            out._norms.append(self.k1 * (1.0 - self.b + self.b * all_lengths / average))
            out._counts.append(int(counted.size))
        return out

    def score_array(self, terms: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 of every document for ``terms``, by position (0 for a document with none of them;
        every document holding one scores above 0)."""
        out = np.zeros(self.size, dtype=np.float64)
        for f, postings in enumerate(self._postings):
            for term in dict.fromkeys(terms):
                found = postings.get(term)
                if found is None:
                    continue
                out[found[0]] += self._addend(f, term, found)
        return out

    def _addend(self, f: int, term: str, found: tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]) -> npt.NDArray[np.float64]:
        """What ``term`` adds to each of its documents' score in field ``f``, computed the first
        time (the same operations, so the same floats) and then kept, up to ADDENDS_HELD values."""
        kept = self._addends.get((f, term))
        if kept is not None:
            return kept
        docs, tf = found
        count = self._counts[f]
        idf = math.log(1.0 + (count - len(docs) + 0.5) / (len(docs) + 0.5))
        addend: npt.NDArray[np.float64] = idf * tf * (self.k1 + 1.0) / (tf + self._norms[f][docs])
        if self._addends_held + addend.size <= ADDENDS_HELD:  # two searches at once may both compute it
            self._addends[(f, term)] = addend
            self._addends_held += addend.size
        return addend

    def scores(self, terms: Sequence[str]) -> dict[int, float]:
        """BM25 of every document holding at least one of ``terms``, by its position."""
        out = self.score_array(terms)
        return {int(i): float(out[i]) for i in np.flatnonzero(out > 0)}

    def best(self, terms: Sequence[str], k: int, weights: npt.NDArray[np.float64] | None = None,
             ids: Sequence[str] | None = None) -> list[tuple[int, float]]:
        """The ``k`` best documents for ``terms`` as ``(position, BM25)``, ranked by BM25 times
        their ``weights`` (1 each when None), best first, ties to the smaller of ``ids`` (else
        the smaller position). Documents with none of the terms are left out."""
        raw = self.score_array(terms)
        rank = raw if weights is None else raw * weights
        order = best_positions(rank, np.flatnonzero(raw > 0), k, (lambda i: i) if ids is None else ids.__getitem__)
        return [(i, float(raw[i])) for i in order]
