"""Runs kbgraph's named Cypher queries against one database. Knows nothing about experiences."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, TypeVar

import neo4j

from kbgraph.store.queries import query
from kbgraph.store.deadline import within

T = TypeVar("T")
# A live server answers a ping at once, even while busy with a long transaction.
PING_TIMEOUT_S = 10.0

Row = dict[str, Any]
_SCALAR_TYPES = frozenset({float, int, str, bool, type(None)})
_GRAPH_TYPES = (neo4j.graph.Node, neo4j.graph.Relationship, neo4j.graph.Path)


def _holds_graph_values(value: Any) -> bool:
    if type(value) in _SCALAR_TYPES:
        return False
    if isinstance(value, list | dict):
        items = value.values() if isinstance(value, dict) else value
        # The plain values (all 384 floats of a vector, most fields of a row) are passed over in
        # one pass in C; only containers and other types are looked into.
        if _SCALAR_TYPES.issuperset(map(type, items)):
            return False
        return any(_holds_graph_values(item) for item in items if type(item) not in _SCALAR_TYPES)
    return isinstance(value, _GRAPH_TYPES)


def row_of(record: neo4j.Record) -> Row:
    """The record as a plain dict, as ``record.data()`` gives it. ``data()`` walks every value
    through isinstance checks against abstract collections: ~0.5 ms for one 384-float vector, 10 s
    to read the problem+goal vectors of 20,000 experiences. Only values holding nodes,
    relationships or paths need that walk."""
    row = dict(record)
    if any(_holds_graph_values(value) for value in row.values()):
        return record.data()
    return row


class _QuietList(list[Any]):
    """A list parameter whose repr is one short line (see :func:`quiet`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<list of {len(self)}>"


class _QuietDict(dict[str, Any]):
    """A map parameter whose repr is one short line (see :func:`quiet`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<map of {len(self)}>"


def quiet(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with each list or map value in a subclass whose repr is short; what is sent is
    the same. The driver formats every query's parameters with repr() for a debug log line
    whether or not debug logging is on: ~170 µs a 384-float vector, so ~1 ms a search and about
    a quarter of the time of writing steps with their vectors (2,000 vectors: 387 ms to send
    as plain lists, 42 ms like this)."""
    return {key: _QuietList(value) if type(value) is list else _QuietDict(value) if type(value) is dict else value
            for key, value in params.items()}


def run_named(runner: neo4j.Session | neo4j.ManagedTransaction, name: str, params: dict[str, Any]) -> list[Row]:
    """The rows of named query ``name`` run in ``runner`` (a session: one auto-commit query; a
    transaction: one statement of it), its parameters sent :func:`quiet`."""
    return [row_of(record) for record in runner.run(query(name), quiet(params))]


class RetryBackoff:
    """The driver's retry schedule for one call: after an error the driver calls retryable
    (``is_retryable()``: transient errors, a lost or expired connection), wait 1 s, 2 s, 4 s …
    (±20 %) and run it again, until ``retry_time_s`` have passed since its first failure."""

    def __init__(self, retry_time_s: float, clock: Callable[[], float] = time.monotonic):
        self.retry_time_s = retry_time_s
        self.clock = clock
        self.first_failure: float | None = None
        self.delay = 1.0

    def wait_after(self, error: Exception) -> float | None:
        """Seconds to wait before the next attempt, or None: raise ``error`` now."""
        if not isinstance(error, neo4j.exceptions.Neo4jError | neo4j.exceptions.DriverError) or not error.is_retryable():
            return None
        now = self.clock()
        self.first_failure = now if self.first_failure is None else self.first_failure
        spent = now - self.first_failure
        if spent >= self.retry_time_s:
            return None
        wait = min(self.delay * random.uniform(0.8, 1.2), max(self.retry_time_s - spent, 0.0))
        self.delay *= 2
        return wait


def retried(
    call: Callable[[], T], retry_time_s: float, sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()``, run again on the schedule of :class:`RetryBackoff` as the driver's managed
    transactions are; then the last error is raised. Other errors are raised at once."""
    backoff = RetryBackoff(retry_time_s, clock)
    while True:
        try:
            return call()
        except Exception as exc:
            wait = backoff.wait_after(exc)
            if wait is None:
                raise
            sleep(wait)


async def retried_async(
    call: Callable[[], Awaitable[T]], retry_time_s: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, clock: Callable[[], float] = time.monotonic,
) -> T:
    """:func:`retried` for a coroutine function (the AsyncGateway's reads)."""
    backoff = RetryBackoff(retry_time_s, clock)
    while True:
        try:
            return await call()
        except Exception as exc:
            wait = backoff.wait_after(exc)
            if wait is None:
                raise
            await sleep(wait)


def driver_retry_time_s(driver: neo4j.Driver, default: float = 30.0) -> float:
    """The ``max_transaction_retry_time`` ``driver`` was made with. The driver keeps it in a
    private attribute; a driver without it (another version, a wrapper) gets the driver's
    documented default, 30 s."""
    config = getattr(driver, "_default_workspace_config", None)
    value = getattr(config, "max_transaction_retry_time", None)
    return float(value) if isinstance(value, int | float) else default


class Neo4jGateway:
    """Every ``timeout_s`` a read or write transaction is still running (``bulk_timeout_s`` for
    statements that batch themselves, ``CALL … IN TRANSACTIONS``), the server is pinged: a call on
    a server that answers is awaited, one on a server that stopped answering fails (see
    kbgraph.store.deadline for why this is kept on our side of the connection)."""

    def __init__(self, driver: neo4j.Driver, database: str = "neo4j", *, timeout_s: float | None = 20.0,
                 bulk_timeout_s: float | None = 600.0, retry_time_s: float | None = None):
        self.driver = driver
        self.database = database
        self.timeout_s = timeout_s
        self.bulk_timeout_s = bulk_timeout_s
        #: How long reads are retried (see :func:`retried`): by default the driver's own
        #: ``max_transaction_retry_time``, so a read gives up when a managed transaction would.
        self.retry_time_s = retry_time_s if retry_time_s is not None else driver_retry_time_s(driver)

    def session(self, **config: Any) -> neo4j.Session:
        """A session that shares the driver's bookmark manager with every other session here and
        with ``execute_query``: on a cluster (``neo4j://``), a read routed to another member after a
        write of ours waits until that member has the write — read-your-writes across sessions,
        threads and calls, not only within one session."""
        return self.driver.session(database=self.database,
                                   bookmark_manager=self.driver.execute_query_bookmark_manager, **config)

    def bounded(self, what: str, call: Callable[[], T]) -> T:
        """``call()`` (driver work of its own, e.g. a paged export) under this gateway's bound."""
        return within(self.timeout_s, what, call, self.answers)

    def answers(self) -> bool:
        """Whether the server still answers a trivial query (within PING_TIMEOUT_S): tells a long
        call on a live server from a frozen or lost one."""
        def ping() -> None:
            with self.driver.session(database=self.database) as session:
                session.run(query("ping")).consume()

        try:
            within(min(self.timeout_s or PING_TIMEOUT_S, PING_TIMEOUT_S), "ping", ping)
        except Exception:  # frozen (timeout), gone (driver error), refusing: not answering
            return False
        return True

    def read(self, name: str, **params: Any) -> list[Row]:
        """Runs a named query as one auto-commit query in READ access mode.

        A read needs no transaction of its own: a managed one (``execute_query``) adds BEGIN and
        COMMIT, a second round trip that cost ~0.35 ms a read and ~2.5 ms a search at 10k. What a
        managed transaction gave is kept: the session shares the driver's bookmark manager
        (read-your-writes on a cluster, see :meth:`session`), and errors the driver would retry
        (a transient error, a connection lost or rerouted) are retried for ``retry_time_s``
        with the driver's backoff (:func:`retried`); a read is safe to run again."""
        def once() -> list[Row]:
            with self.session(default_access_mode=neo4j.READ_ACCESS) as session:
                return run_named(session, name, params)

        return within(self.timeout_s, name, lambda: retried(once, self.retry_time_s), self.answers)

    def write(self, name: str, **params: Any) -> list[Row]:
        """Runs a named query in its own write transaction."""
        return self.write_all([(name, params)])[-1]

    def write_all(
        self, calls: Sequence[tuple[str, dict[str, Any]]],
        verify: Callable[[list[list[Row]]], None] | None = None,
    ) -> list[list[Row]]:
        """Runs several named queries in ONE write transaction: all of them land, or none.
        ``verify`` sees the results before the commit; whatever it raises rolls everything back."""

        def work(tx: neo4j.ManagedTransaction) -> list[list[Row]]:
            results = [run_named(tx, name, params) for name, params in calls]
            if verify is not None:
                verify(results)
            return results

        def transaction() -> list[list[Row]]:
            with self.session() as session:
                return session.execute_write(work)

        return within(self.timeout_s, calls[0][0] if calls else "write", transaction, self.answers)

    def auto_commit(self, name: str, **params: Any) -> list[Row]:
        """For queries that manage their own transactions (``CALL … IN TRANSACTIONS``)."""
        def statement() -> list[Row]:
            with self.session() as session:
                return run_named(session, name, params)

        return within(self.bulk_timeout_s, name, statement, self.answers)

    def run_statement(self, statement: str, params: dict[str, Any]) -> None:
        """One statement that is not a named query (the schema files'), in an auto-commit
        transaction, unbounded (creating an index waits for nothing else)."""
        with self.session() as session:
            session.run(statement, quiet(params)).consume()

    # How shared code waits and runs things side by side: threads here, the event loop's tasks in
    # kbgraph.store.aio.AsyncGateway (so the same code serves KnowledgeBase and AsyncKnowledgeBase).

    def pause(self, seconds: float) -> None:
        time.sleep(seconds)

    def every(self, seconds: float, call: Callable[[], Any]) -> Callable[[], None]:
        """Calls ``call()`` every ``seconds`` in the background until the returned stop() (which
        waits for a call under way); an exception ends the repetition quietly (the caller's own
        work notices what caused it)."""
        stopped = threading.Event()

        def repeat() -> None:
            while not stopped.wait(seconds):
                try:
                    call()
                except Exception:
                    return

        thread = threading.Thread(target=repeat, name="kbgraph-every", daemon=True)
        thread.start()

        def stop() -> None:
            stopped.set()
            thread.join()

        return stop

    def spawn_pool(self, workers: int, name: str) -> Executor:
        """An executor for independent queries run side by side (the driver's pool gives each
        thread its own connection)."""
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
