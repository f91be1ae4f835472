"""Requests per operation: how many named reads a benchmark's operations send the server, by query
name. Like CPU time (:mod:`kbgraph.bench.cpu`) it does not move with a shared machine's load, and
each request is a round trip a search waits for or overlaps."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from threading import Lock
from typing import Any

from kbgraph.store.gateway import Neo4jGateway, Row

__all__ = ["counting_reads", "per_operation"]


@contextmanager
def counting_reads(gateway: Neo4jGateway) -> Iterator[Counter[str]]:
    """Counts the named reads (``gateway.read``) sent while the block runs, from every thread, by
    query name: the gateway's own method is wrapped on this instance and given back afterwards."""
    counts: Counter[str] = Counter()
    lock = Lock()
    read = gateway.read

    def counted(name: str, **params: Any) -> list[Row]:
        with lock:
            counts[name] += 1
        return read(name, **params)

    setattr(gateway, "read", counted)
    try:
        yield counts
    finally:
        delattr(gateway, "read")


def per_operation(counts: Counter[str], operations: int) -> dict[str, Any]:
    """``total`` requests per operation and ``by_query`` (most sent first), to two decimals."""
    n = max(operations, 1)
    return {"total": round(sum(counts.values()) / n, 2),
            "by_query": {name: round(count / n, 2) for name, count in counts.most_common()}}
