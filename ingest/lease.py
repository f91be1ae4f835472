"""One ingest per namespace at a time.

An ingest is many transactions (a batch each, then merging, concepts and links over the whole
namespace); two at once in one namespace interleave them — one merges away a node the other is
writing steps to. So an ingest holds the namespace's lease (properties of its KbState node, kept
in Neo4j so it holds across processes and machines) and a second ingest waits for it, then finds
the records already ingested. The lease has a time-to-live renewed by a heartbeat: an ingest
killed with -9 blocks the next one for at most ``ttl_s``.

An ingest of one write batch (adding a run) takes no lease: it is one write transaction
(ingest/one_transaction.py) whose first statement locks the state node until its commit
(:func:`check_lease_free`), so it takes turns with the others on that lock, and waits while an
ingest of many transactions holds the lease.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import TracebackType

from kbgraph.store.gateway import Neo4jGateway

#: How often an ingest waiting for another process asks for the lease, plus up to as much again
#: at random (so waiters do not ask in step): the time the lease lies free between two holders is
#: lost to every waiter. Ingests of one process wait on a local lock instead, woken at once and
#: asking nothing of Neo4j meanwhile (8 agent threads adding runs: with every one of them asking
#: every 0.5 s an add waited up to 9 s; asking every 0.05 s took CPU from their searches).
POLL_S = 0.1

_LOCAL: dict[tuple[int, str, str], threading.Lock] = {}
_LOCAL_GUARD = threading.Lock()


def _local_lock(gateway: Neo4jGateway, namespace: str) -> threading.Lock:
    """The lock ingests of this process take before asking Neo4j for the namespace's lease."""
    key = (id(gateway.driver), gateway.database, namespace)
    with _LOCAL_GUARD:
        return _LOCAL.setdefault(key, threading.Lock())


@contextmanager
def process_turn(gateway: Neo4jGateway, namespace: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """This process's turn at writing ``namespace``: its ingests and adds take it one at a time
    (a local lock, woken at once), before asking Neo4j for anything."""
    local = _take_local_turn(gateway, namespace, on_wait)
    try:
        yield
    finally:
        local.release()


def _take_local_turn(gateway: Neo4jGateway, namespace: str, on_wait: Callable[[str], None] | None) -> threading.Lock:
    """This process's lock of ``namespace``, taken (saying so through ``on_wait`` when it waits)."""
    local = _local_lock(gateway, namespace)
    if not local.acquire(blocking=False):
        if on_wait is not None:
            on_wait(f"another ingest of this process is writing namespace {namespace!r}; waiting for it")
        local.acquire()
    return local


def _lease_held(holder: object, namespace: str, until: object) -> str:
    return (f"another ingest ({holder}) is writing namespace {namespace!r}; waiting for it "
            f"(its lease runs until {until} unless renewed)")


class LeaseHeld(Exception):
    """Another ingest holds the namespace's lease: an add's one transaction rolls back and waits."""


def check_lease_free(gateway: Neo4jGateway, namespace: str) -> None:
    """In an add's one write transaction (``gateway`` runs in it), its first statement: locks the
    namespace's state node until the commit, so adds and ingests of any process take turns, and
    raises LeaseHeld when an ingest of many transactions holds the lease. The lease itself is not
    written: the lock held to the commit is the add's lease, and nobody sees it taken or given
    back (see docs/architecture.md)."""
    row = gateway.write("ingest_lease_check", kb=namespace, now=datetime.now(UTC))[0]
    if not row["free"]:
        raise LeaseHeld(_lease_held(row["holder"], namespace, row["until"]))


def wait_for_lease(gateway: Neo4jGateway) -> None:
    """The pause between two asks for a lease another process holds (see POLL_S)."""
    gateway.pause(POLL_S * (1.0 + random.random()))


class IngestLease:
    def __init__(self, gateway: Neo4jGateway, namespace: str, ttl_s: float = 60.0,
                 on_wait: Callable[[str], None] | None = None):
        self.gateway = gateway
        self.namespace = namespace
        self.ttl_s = ttl_s
        self.on_wait = on_wait
        self.owner = f"ingest-{uuid.uuid4().hex[:12]}"
        self._stop_heartbeat: Callable[[], None] | None = None
        self._local: threading.Lock | None = None

    def _until(self) -> tuple[datetime, datetime]:
        now = datetime.now(UTC)
        return now, now + timedelta(seconds=self.ttl_s)

    def acquire(self) -> None:
        local = _take_local_turn(self.gateway, self.namespace, self.on_wait)
        self._local = local
        try:
            self._acquire_lease()
        except BaseException:
            self._local = None
            local.release()
            raise

    def _acquire_lease(self) -> None:
        told = False
        while True:
            now, until = self._until()
            row = self.gateway.write("ingest_lease_acquire", kb=self.namespace, owner=self.owner, now=now,
                                     until=until)[0]
            if row["acquired"]:
                break
            if not told and self.on_wait is not None:
                self.on_wait(_lease_held(row["holder"], self.namespace, row["until"]))
                told = True
            wait_for_lease(self.gateway)
        self._stop_heartbeat = self.gateway.every(self.ttl_s / 3, self._renew)

    def _renew(self) -> None:
        # Neo4j unreachable: the exception ends the heartbeat; the ingest itself fails and the
        # lease lapses.
        self.gateway.write("ingest_lease_renew", kb=self.namespace, owner=self.owner, until=self._until()[1])

    def release(self, retry: bool = True) -> None:
        """Gives the lease back; ``retry=False`` (after a failure) tries once: when the failure
        was Neo4j lost, another round of retries would only delay its report by ``retry_time_s``."""
        if self._stop_heartbeat is not None:
            self._stop_heartbeat()
            self._stop_heartbeat = None
        try:
            if retry:
                self.gateway.write("ingest_lease_release", kb=self.namespace, owner=self.owner)
            else:
                self.gateway.write_once("ingest_lease_release", kb=self.namespace, owner=self.owner)
        except Exception:  # Neo4j gone: the lease lapses after ttl_s by itself
            pass
        finally:
            local, self._local = self._local, None
            if local is not None:
                local.release()

    def __enter__(self) -> IngestLease:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.release(retry=error is None)
