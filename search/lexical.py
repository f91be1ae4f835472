"""The lexical channel's Lucene query string, built from a free-text query.

Users type stories, ids, punctuation and Lucene operators without meaning them as syntax; one
stray ``(`` or ``:`` would make the full-text index fail. So the query string is built only from
word tokens: lower-cased, English stop words dropped (a customer's story is mostly stop words,
which would otherwise swamp the short task texts), each term escaped and OR-ed. Lucene's default
BM25 then scores the hits; the retrieval normalises the scores per query.
"""

from __future__ import annotations

import re

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

__all__ = ["MAX_TERMS", "is_verbose", "lucene_query", "query_terms"]

#: Lucene refuses boolean queries of more than 1,024 clauses; the first 64 distinct terms of a
#: query carry its meaning (and keep the index lookup fast).
MAX_TERMS = 64

_TOKEN = re.compile(r"[0-9A-Za-z\u00C0-\uFFFF]+")
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/])')


def query_terms(text: str, limit: int = MAX_TERMS, stop_words: bool = True) -> list[str]:
    """Distinct lower-cased word tokens of ``text`` (2+ characters; without English stop words
    unless ``stop_words`` is False), in order."""
    seen: dict[str, None] = {}
    if limit <= 0:
        return []
    for match in _TOKEN.finditer(text.lower()):
        token = match.group(0)
        if len(token) < 2 or (stop_words and token in ENGLISH_STOP_WORDS) or token in seen:
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
