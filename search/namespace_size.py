"""How many experiences, steps and meta-concepts a namespace holds, to choose between an exact scan and the
shared vector indexes.

A vector index is approximate (HNSW), and on Neo4j 5.26 it is shared by every namespace of the
database, so what it returns for a small namespace depends on what the others hold. Below a few
thousand nodes an exact scan of the namespace's own nodes costs a few milliseconds (about 7 µs a
node on 2 cores) and answers the same whatever else is stored; every search scans when the
namespace is at most its ``exact_scan_max`` (:mod:`kbgraph.search.candidates`). The size is
cached: a stale one only picks the scan or the index for a namespace that just crossed the limit,
and either answers correctly.
"""

from __future__ import annotations

import time
from threading import Lock
from typing import NamedTuple

from kbgraph.store.gateway import Neo4jGateway
from kbgraph.core.weights import DEFAULT_EXACT_SCAN_MAX

__all__ = ["NamespaceSize", "Sizes"]


class Sizes(NamedTuple):
    experiences: int
    steps: int
    meta_concepts: int = 0


class NamespaceSize:
    """The (experiences, steps, meta-concepts) of one namespace, each counted only up to just above the largest
    limit asked for so far (the count stops there: above it the exact number is moot), and trusted
    for ``ttl`` seconds. Thread-safe."""

    def __init__(self, gateway: Neo4jGateway, namespace: str, ttl: float = 30.0):
        self.gateway = gateway
        self.namespace = namespace
        self.ttl = ttl
        self._cap = DEFAULT_EXACT_SCAN_MAX
        self._sizes: Sizes | None = None
        self._read_at = 0.0
        self._lock = Lock()

    def get(self, limit: int) -> Sizes:
        # The read happens outside the lock (never hold a lock across a gateway call: see
        # kbgraph.store.aio); two callers may then both read, and the later answer stays.
        with self._lock:
            now = time.monotonic()
            if limit > self._cap:
                self._cap, self._sizes = limit, None
            if self._sizes is not None and now - self._read_at <= self.ttl:
                return self._sizes
            cap = self._cap
        row = self.gateway.read("search_namespace_size", kb=self.namespace, cap=cap + 1)[0]
        sizes = Sizes(int(row["experiences"]), int(row["steps"]), int(row["meta_concepts"]))
        with self._lock:
            if cap == self._cap:
                self._sizes, self._read_at = sizes, now
        return sizes
