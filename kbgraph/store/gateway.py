"""Runs kbgraph's named Cypher queries against one database. Knows nothing about experiences."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from itertools import chain
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import neo4j

from kbgraph.store.queries import empty_list_answer, nothing_to_unwind, query
from kbgraph.store.change_feed import flush_notes, note_after, note_before
from kbgraph.store.search_version import bump_search_version
from kbgraph.store.deadline import within
from kbgraph.store.reachability import direct_address, driver_retry_time_s, handshake_answers
from kbgraph.store.retry import guarded, lost_neo4j, retried

if TYPE_CHECKING:
    from kbgraph.store.transaction import OpenTransaction

T = TypeVar("T")
# A live server answers a ping at once, even while busy with a long transaction.
PING_TIMEOUT_S = 10.0

Row = dict[str, Any]
_SCALAR_TYPES = frozenset({float, int, str, bool, type(None)})
_GRAPH_TYPES = (neo4j.graph.Node, neo4j.graph.Relationship, neo4j.graph.Path)
_LIST = frozenset({list})


def _holds_graph_values(value: Any) -> bool:
    """Whether ``value`` holds a node, relationship or path at any depth, walked a level at a time:
    plain values (a vector's 384 floats) pass in one C pass, rows of rows flatten in C."""
    level: list[Any] = [value]
    while level:
        kinds = set(map(type, level))
        if kinds <= _SCALAR_TYPES:
            return False
        if kinds == _LIST:  # rows of rows: flattened in C
            level = list(chain.from_iterable(level))
            continue
        inner: list[Any] = []
        for item in [item for item in level if type(item) not in _SCALAR_TYPES]:
            if isinstance(item, dict):
                inner += item.values()
            elif isinstance(item, list):
                inner += item
            elif isinstance(item, _GRAPH_TYPES):
                return True
        level = inner
    return False


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


def run_named(runner: neo4j.Session | neo4j.Transaction | neo4j.ManagedTransaction, name: str,
              params: dict[str, Any]) -> list[Row]:
    """The rows of named query ``name`` run in ``runner`` (a session: one auto-commit query; a
    transaction: one statement of it), its parameters sent :func:`quiet`; none when it would
    unwind an empty list (:func:`~kbgraph.store.queries.unwound_list`): its answer is known, and the
    version bumps it would come after are made all the same, so that a transaction locks what it
    did before, in the same order."""
    bump_search_version(runner, name, params)
    if nothing_to_unwind(name, params):
        return empty_list_answer(name)
    note_before(runner, name, params)  # the change feed (kbgraph.store.change_feed)
    rows = [row_of(record) for record in runner.run(query(name), quiet(params))]
    note_after(runner, name, params, rows)
    return rows


class Neo4jGateway:
    """Every ``timeout_s`` a read or write transaction is still running (``bulk_timeout_s`` for
    statements that batch themselves, ``CALL … IN TRANSACTIONS``), the server is pinged: a call on
    a server that answers is awaited, one on a server that stopped answering fails (see
    kbgraph.store.deadline for why this is kept on our side of the connection).

    Reads and write transactions are retried by :func:`retried`, not by the driver's managed
    transactions: the driver starts its clock at the first failure and may sleep past the end
    (1 + 2 + 4 + 8 s ±20 % for 10 s), ours stops at ``retry_time_s``. A server lost for good is
    kbgraph's :class:`~kbgraph.core.errors.Neo4jUnavailableError`
    (:func:`~kbgraph.store.retry.lost_neo4j`), from every call."""

    #: Whether a thread of the caller's may read through this gateway while others use it (search
    #: keeps a large namespace's texts current that way: kbgraph.search.student.text_corpus).
    background_reads: ClassVar[bool] = True

    def __init__(self, driver: neo4j.Driver, database: str = "neo4j", *, timeout_s: float | None = 20.0,
                 bulk_timeout_s: float | None = 600.0, retry_time_s: float | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic):
        self.driver = driver
        self.database = database
        self.timeout_s = timeout_s
        self.bulk_timeout_s = bulk_timeout_s
        #: How long reads and writes are retried (see :func:`retried`): by default the driver's own
        #: ``max_transaction_retry_time`` (KBGRAPH_RETRY_TIME_S when kbgraph opened the driver).
        self.retry_time_s = retry_time_s if retry_time_s is not None else driver_retry_time_s(driver)
        self.sleep, self.clock = sleep, clock  # the retries' (a test counts them instead of waiting)
        self._address = direct_address(driver)

    def session(self, **config: Any) -> neo4j.Session:
        """A session that shares the driver's bookmark manager with every other session here and
        with ``execute_query``: on a cluster (``neo4j://``), a read routed to another member after a
        write of ours waits until that member has the write — read-your-writes across sessions,
        threads and calls, not only within one session."""
        return self.driver.session(database=self.database,
                                   bookmark_manager=self.driver.execute_query_bookmark_manager, **config)

    def bounded(self, what: str, call: Callable[[], T]) -> T:
        """``call()`` (driver work of its own, e.g. a paged export) under this gateway's bound."""
        return guarded(what, lambda: within(self.timeout_s, what, call, self.still_there), self.driver)

    def still_there(self) -> bool:
        """Whether the server still answers, asked by a call that has run ``timeout_s``: the Bolt
        handshake on a connection of its own (within PING_TIMEOUT_S) when the driver talks to one
        plain ``bolt://`` server, else :meth:`answers`. Not a query through the pool: the call
        asking holds a connection of the pool, and when the others are held too (writers waiting
        for a lock the call holds, or for the server) a ping waiting for one of them read a busy
        server as a frozen one, and the call was abandoned with its connection still in use."""
        if self._address is None:
            return self.answers()
        return handshake_answers(self._address, min(self.timeout_s or PING_TIMEOUT_S, PING_TIMEOUT_S))

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

        return guarded(name, lambda: within(self.timeout_s, name, lambda: self._retried(once, self.retry_time_s),
                                            self.still_there), self.driver)

    def _retried(self, call: Callable[[], T], retry_time_s: float) -> T:
        return retried(call, retry_time_s, self.sleep, self.clock)

    def write(self, name: str, **params: Any) -> list[Row]:
        """Runs a named query in its own write transaction."""
        return self.write_all([(name, params)])[-1]

    def write_once(self, name: str, **params: Any) -> list[Row]:
        """:meth:`write` tried once, not retried: bookkeeping after a failure (giving a lease
        back), which would otherwise add a second ``retry_time_s`` to the failure's."""
        return self._write([(name, params)], None, 0.0)[-1]

    def write_all(
        self, calls: Sequence[tuple[str, dict[str, Any]]],
        verify: Callable[[list[list[Row]]], None] | None = None,
    ) -> list[list[Row]]:
        """Runs several named queries in ONE write transaction: all of them land, or none.
        ``verify`` sees the results before the commit; whatever it raises rolls everything back."""
        return self._write(calls, verify, self.retry_time_s)

    def _write(self, calls: Sequence[tuple[str, dict[str, Any]]], verify: Callable[[list[list[Row]]], None] | None,
               retry_time_s: float) -> list[list[Row]]:
        def transaction() -> list[list[Row]]:
            # An explicit transaction: the driver does not retry it (see the class's docstring).
            with self.session() as session, session.begin_transaction() as tx:
                results = [run_named(tx, name, params) for name, params in calls]
                if verify is not None:
                    verify(results)
                flush_notes(tx)
                tx.commit()
                return results

        what = calls[0][0] if calls else "write"
        return guarded(what, lambda: within(self.timeout_s, what, lambda: self._retried(transaction, retry_time_s),
                                            self.still_there), self.driver)

    def open_transaction(self) -> OpenTransaction:
        """One explicit write transaction, for work that commits once (kbgraph.store.transaction)."""
        from kbgraph.store.transaction import SyncTransaction  # it builds on this module

        return SyncTransaction(self)

    def auto_commit(self, name: str, **params: Any) -> list[Row]:
        """For queries that manage their own transactions (``CALL … IN TRANSACTIONS``)."""
        def statement() -> list[Row]:
            with self.session() as session:
                return run_named(session, name, params)

        return guarded(name, lambda: within(self.bulk_timeout_s, name, statement, self.still_there), self.driver)

    def run_statement(self, statement: str, params: dict[str, Any]) -> None:
        """One statement that is not a named query (the schema files'), in an auto-commit
        transaction, unbounded (creating an index waits for nothing else)."""
        def run() -> None:
            with self.session() as session:
                session.run(statement, quiet(params)).consume()

        guarded("a schema statement", run, self.driver)

    # How shared code waits and runs things side by side: threads here, the event loop's tasks in
    # kbgraph.store.aio.AsyncGateway (so the same code serves KnowledgeBase and AsyncKnowledgeBase).

    def pause(self, seconds: float) -> None:
        time.sleep(seconds)

    def every(self, seconds: float, call: Callable[[], Any]) -> Callable[[], None]:
        """Calls ``call()`` every ``seconds`` in the background until the returned stop(); an
        exception ends the repetition quietly (the caller's own work notices what caused it).
        stop() does not wait for a call under way: on a lost server that call may be retrying,
        and its caller's failure should not wait for it (it ends by itself)."""
        stopped = threading.Event()

        def repeat() -> None:
            while not stopped.wait(seconds):
                try:
                    call()
                except Exception:
                    return

        thread = threading.Thread(target=repeat, name="kbgraph-every", daemon=True)
        thread.start()
        return stopped.set

    def spawn_pool(self, workers: int, name: str) -> Executor:
        """An executor for independent queries run side by side (the driver's pool gives each
        thread its own connection)."""
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
