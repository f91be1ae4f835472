"""Adaptive over-fetching for index queries that cannot filter.

Neo4j 5.26's vector and full-text indexes return the nearest nodes of the whole database; the
namespace, status and the caller's filters are applied afterwards (docs/design.md §1). Asking for just
``k`` nodes would starve the result list whenever other namespaces or filtered-out nodes crowd
the top of the index. So a query asks for ``first`` nodes, and when fewer than ``k`` survive the
filters while the index still had more to give, asks again for ``growth`` times as many, up to
``limit``. The caller then knows whether the answer is complete or the limit was hit (and can
fall back to an exact scan of the namespace).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["FetchPage", "Overfetched", "overfetch"]

Row = TypeVar("Row")

#: ``fetch(n)`` asks the index for its ``n`` nearest nodes and returns ``(how many the index
#: returned before filtering, the rows that passed the filters, best first)``.
FetchPage = Callable[[int], tuple[int, Sequence[Row]]]


@dataclass(frozen=True)
class Overfetched(Generic[Row]):
    rows: list[Row]
    #: The size of the last request to the index.
    fetched: int
    #: True when the index ran out of nodes before ``k`` rows passed the filters (the rows are all
    #: there is); False when ``k`` rows were found. ``limit_hit`` means neither.
    exhausted: bool
    limit_hit: bool
    requests: int


def overfetch(fetch: FetchPage[Row], k: int, first: int, limit: int, growth: int = 4) -> Overfetched[Row]:
    """Up to ``k`` filtered rows, asking the index for ``first``, ``first·growth``, … nodes."""
    if k < 1 or first < 1 or limit < 1 or growth < 2:
        raise ValueError(f"overfetch needs k, first, limit >= 1 and growth >= 2 (got {k}, {first}, {limit}, {growth})")
    size = min(max(first, k), limit)
    requests = 0
    while True:
        requests += 1
        returned, rows = fetch(size)
        if len(rows) >= k:
            return Overfetched(list(rows[:k]), size, exhausted=False, limit_hit=False, requests=requests)
        if returned < size:  # the index gave everything it has
            return Overfetched(list(rows), size, exhausted=True, limit_hit=False, requests=requests)
        if size >= limit:
            return Overfetched(list(rows), size, exhausted=False, limit_hit=True, requests=requests)
        size = min(size * growth, limit)
