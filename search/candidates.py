"""The candidate seam: "the nearest ``k`` nodes of this namespace (and these filters) for this vector
or these words", decided in one place for the student channels, the teacher, the step search and
the LangGraph store.

**Neo4j 5.26.** Its vector and full-text indexes are shared by every namespace of the database and
cannot filter: the vector index (HNSW) is approximate and returns the database's nearest nodes,
and the full-text index scores with term statistics of the whole database. What they return for
one namespace therefore depends on what the others hold. The policy:

* **Exact scan** for a namespace holding at most ``exact_scan_max`` nodes of the kind searched
  (experiences, steps, meta-concepts, store items): the caller's scan query scores every node of
  the namespace that passes the filters (cosine, or BM25 over the namespace's own texts: see
  :class:`kbgraph.search.lexical.LexicalCorpus`). The answer is a function of the namespace's
  contents and the query alone, and costs about 7 µs a node on 2 cores.
* **Over-fetch** above it (:func:`kbgraph.search.overfetch.overfetch`): the shared index is asked
  for ``first`` nodes, then :data:`GROWTH` times as many, up to ``overfetch_limit``, and filtered.
  When even that cannot fill the list, a caller that can afford it scans the namespace after all
  (``fall_back``). Above the limit, what other namespaces hold can still change an answer: which
  nodes HNSW visits, which filtered hits fill the list first, and (for the full-text index) the
  term statistics that order its hits.

**Neo4j 2026.** Its vector indexes declare the namespace as a filter property
(``cypher/schema/03_vector_indexes_2026.cypher``: ``WITH [n.kb]``, and ``n.status`` for
experiences), and Cypher 25's ``SEARCH n IN (VECTOR INDEX … WHERE n.kb = $kb …)`` returns the
namespace's nearest nodes from inside the index: :func:`index_query` picks the ``*_2026`` query of
each index query there. The same :func:`nearest` runs: the exact scan at or under
``exact_scan_max`` (exact, and cheap), the index above it, where no other namespace takes a place
any more — ``first`` now only leaves room for the filters the index cannot apply (domains, kinds,
scope, expiry, excluded runs) and for steps grouping into experiences, so the first request
fills the list unless those filters drop many, and the growth rarely runs. The line is read from
the server's indexes (:func:`kbgraph.store.schema.filtering_indexes`), not from the setting: a
user's own server may be of either line, and a 2026 store whose indexes predate their filter
properties over-fetches as 5.26 does until its schema is applied again. The full-text index
cannot filter on 2026.09 (``SEARCH`` over it takes no ``WHERE``, and a full-text index declares
no filter properties), and its BM25 statistics stay database-wide: the lexical channel keeps the
5.26 policy on both lines.

Every caller reads ``exact_scan_max`` and ``overfetch_limit`` from its settings (:class:`ScanPolicy`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from threading import Lock
from typing import Final, Generic, TypeVar

from kbgraph.core.weights import ScanLimits
from kbgraph.search.overfetch import FetchPage, overfetch
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.schema import filtering_indexes

__all__ = ["FIRST_FACTOR", "GROWTH", "INDEX_QUERIES", "MAX_FIRST_FACTOR", "Nearest", "PassRates", "ScanPolicy",
           "index_query", "nearest"]

#: Each over-fetch request asks for this many times the last.
GROWTH = 4
#: The first request of an index whose pass rate is not known yet: this many times ``k``.
FIRST_FACTOR = 4
#: The first request never asks for more than this many times ``k``, whatever the pass rate.
MAX_FIRST_FACTOR = 8

Row = TypeVar("Row")


#: When a namespace is scanned exactly, and how far a shared index is asked above that: the search
#: settings' scan limits (``SearchWeights.scan``), defined once in kbgraph.core.weights.
ScanPolicy = ScanLimits


@dataclass(frozen=True)
class Nearest(Generic[Row]):
    rows: list[Row]
    #: The namespace was scanned: the rows are exact and depend on nothing outside it.
    exact: bool
    #: The index was asked, could not fill ``k`` and the namespace was scanned instead.
    fell_back: bool = False
    #: The size of the last index request (0 when scanned).
    fetched: int = 0
    #: The index returned every node it holds (the rows are all the filters let through).
    exhausted: bool = False
    #: The index was asked for the limit and still could not fill ``k`` (no scan followed).
    limit_hit: bool = False


#: The index queries (cypher/queries/NAME.cypher) by the query of 5.26 and the vector index it asks,
#: each with its Neo4j 2026 twin, which asks the index for the namespace's nodes (``SEARCH … WHERE
#: n.kb = $kb``) and takes the same parameters and returns the same columns.
INDEX_QUERIES: Final[dict[tuple[str, str], str]] = {
    ("search_experience_vectors", "experience_pg_embedding"): "search_experience_pg_vectors_2026",
    ("search_experience_vectors", "experience_structure_embedding"): "search_experience_structure_vectors_2026",
    ("search_step_vectors", "step_text_embedding"): "search_step_vectors_2026",
    ("search_meta_concepts", "meta_concept_embedding"): "search_meta_concepts_2026",
    ("steps_search", "step_text_embedding"): "steps_search_2026",
    ("refine_step_vectors", "step_text_embedding"): "refine_step_vectors_2026",
    ("refine_failure_vectors", "failure_mode_embedding"): "refine_failure_vectors_2026",
    ("store_search_vectors", "store_vector_embedding"): "store_search_vectors_2026",
}


def index_query(gateway: Neo4jGateway, query: str, index: str) -> str:
    """The query that asks vector ``index`` for a namespace's nearest nodes on the server behind
    ``gateway``: ``query`` (5.26's, over-fetching the shared index), or its 2026 twin when the
    index declares the namespace (:data:`INDEX_QUERIES`)."""
    twin = INDEX_QUERIES[(query, index)]  # a KeyError here is a caller's typo, never input
    return twin if index in filtering_indexes(gateway) else query


def nearest(
    policy: ScanPolicy, count: int, k: int, *, scan: Callable[[], Sequence[Row]], fetch: FetchPage[Row],
    first: int, limit: int | None = None, fall_back: bool = False,
) -> Nearest[Row]:
    """Up to ``k`` rows, best first: ``scan()`` when the namespace holds at most ``exact_scan_max``
    nodes (``count``) of the kind searched; otherwise ``fetch(n)`` (see
    :data:`~kbgraph.search.overfetch.FetchPage`) from ``first`` nodes up to ``limit`` (at most the
    policy's ``overfetch_limit``), then, with ``fall_back``, ``scan()`` when that left fewer than
    ``k``."""
    if policy.scans(count):
        return Nearest(list(scan()), exact=True)
    cap = policy.overfetch_limit if limit is None else min(limit, policy.overfetch_limit)
    result = overfetch(fetch, k, first=min(first, cap), limit=cap, growth=GROWTH)
    if fall_back and len(result.rows) < k:
        return Nearest(list(scan()), exact=True, fell_back=True, fetched=result.fetched)
    return Nearest(result.rows, exact=False, fetched=result.fetched, exhausted=result.exhausted,
                   limit_hit=result.limit_hit)


class PassRates:
    """The share of an index's hits that passed a namespace's filters (and were in the query's
    domain, when it names one), learnt from the previous searches, by index and filters: the first
    request asks for enough to fill ``k`` in one round trip (a namespace that is most of the
    database asks for little more than it needs; a small domain among many asks for more), where a
    fixed factor would either waste or come up short. It only sizes requests above
    ``exact_scan_max``. Thread-safe."""

    def __init__(self) -> None:
        self._rates: dict[Hashable, float] = {}
        self._lock = Lock()

    def learn(self, key: Hashable, fetched: int, passed: int) -> None:
        if fetched > 0:
            with self._lock:
                self._rates[key] = passed / fetched

    def first(self, key: Hashable, k: int, limit: int) -> int:
        """The size of the first request for ``k`` rows (at most ``limit``)."""
        with self._lock:
            rate = self._rates.get(key)
        if rate is None:
            return min(limit, k * FIRST_FACTOR)
        # The domain preference is best effort: beyond MAX_FIRST_FACTOR × k, a larger HNSW search
        # costs more latency than the few extra same-domain rows are worth (a namespace that is a
        # sliver of the index still grows its request until enough rows pass).
        return min(limit, k * MAX_FIRST_FACTOR, max(k, math.ceil(k * 1.5 / max(rate, 1 / limit))))
