"""How :class:`~kbgraph.AsyncKnowledgeBase` runs kbgraph's one implementation of its pipelines
over the official driver's ``AsyncDriver``, without a second, async copy of them.

The pipelines (ingestion, search, feedback, maintenance) are written once, as plain functions
that call the gateway. ``run_bridged`` runs such a function in a greenlet on the event loop's
thread; when the function reaches the gateway, :class:`AsyncGateway` hands the driver's coroutine
to the loop (``await_only``) and the greenlet is suspended until it completes, so other tasks run
meanwhile — the same technique SQLAlchemy's asyncio support uses. No thread carries a query: the
I/O is the AsyncDriver's. The CPU-heavy embedding model runs in a worker thread
(:class:`OffloadedEmbedder`) so it does not stall the loop.

The rule this imposes on the shared code: never hold a lock across a gateway call, and wait
through the gateway (``pause``, ``every``, ``spawn_pool``), never with ``time.sleep``, threads
or thread pools of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, ClassVar, TypeVar

import greenlet
import neo4j

from kbgraph.store.queries import empty_list_answer, nothing_to_unwind, query
from kbgraph.store.change_feed import flush_notes_async, note_after, note_before_async
from kbgraph.store.search_version import bump_search_version_async
from kbgraph.store.deadline import timed_out
from kbgraph.embedders import Embedder, Vectors, WrappingEmbedder
from kbgraph.store.gateway import PING_TIMEOUT_S, Neo4jGateway, Row, quiet, row_of
from kbgraph.store.reachability import handshake_answers
from kbgraph.store.retry import guarded, retried_async

T = TypeVar("T")


class _Bridged(greenlet.greenlet):  # type: ignore[misc]
    """A greenlet running shared code for a coroutine; ``await_only`` switches back to it."""


def in_bridge() -> bool:
    """Whether the caller runs inside :func:`run_bridged` (and may use :func:`await_only`)."""
    return isinstance(greenlet.getcurrent(), _Bridged)


def await_only(awaitable: Awaitable[T]) -> T:
    """The result of ``awaitable``, awaited by the event loop while this greenlet is suspended."""
    current = greenlet.getcurrent()
    if not isinstance(current, _Bridged):
        if isinstance(awaitable, Coroutine):
            awaitable.close()  # never awaited: say so here rather than in a RuntimeWarning later
        raise RuntimeError("await_only() outside run_bridged(): this call needs AsyncKnowledgeBase's event loop")
    return current.parent.switch(awaitable)  # type: ignore[no-any-return]


async def run_bridged(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the loop's thread; each ``await_only`` inside it is awaited here."""
    child = _Bridged(fn, greenlet.getcurrent())
    result: Any = child.switch(*args, **kwargs)
    while not child.dead:
        try:
            value = await result
        except BaseException as exc:  # handed to the code that awaited, at its await_only
            result = child.throw(exc)
        else:
            result = child.switch(value)
    return result  # type: ignore[no-any-return]


class _TaskFuture(concurrent.futures.Future[Any]):
    """A future for a job the loop runs as a task: ``result()`` suspends the calling greenlet."""

    def __init__(self, task: asyncio.Task[Any]):
        super().__init__()
        self._task = task
        # A job whose caller failed first is never asked for its result: its exception is
        # retrieved here, so asyncio does not report it as lost.
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    def result(self, timeout: float | None = None) -> Any:
        return await_only(self._task) if not self._task.done() else self._task.result()


async def run_named_async(runner: neo4j.AsyncSession | neo4j.AsyncTransaction | neo4j.AsyncManagedTransaction,
                          name: str, params: dict[str, Any]) -> list[Row]:
    """:func:`kbgraph.store.gateway.run_named` on the async driver."""
    await bump_search_version_async(runner, name, params)
    if nothing_to_unwind(name, params):
        return empty_list_answer(name)
    await note_before_async(runner, name, params)
    rows = [row_of(record) async for record in await runner.run(query(name), quiet(params))]
    note_after(runner, name, params, rows)
    return rows


class GreenletExecutor(concurrent.futures.Executor):
    """The executor shared code asks the gateway for (``spawn_pool``): each job runs as a task of
    the loop, in its own greenlet, so jobs that wait on Neo4j overlap as threads would."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        return _TaskFuture(self.loop.create_task(run_bridged(fn, *args, **kwargs)))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


class AsyncGateway(Neo4jGateway):
    """The gateway on an ``AsyncDriver``: the same named queries, transactions and bounds as
    :class:`~kbgraph.store.gateway.Neo4jGateway`, awaited through the loop. Calls come from shared code
    running in :func:`run_bridged`; a call from another thread (none in kbgraph today) is run on
    the loop and waited for."""

    background_reads: ClassVar[bool] = False

    def __init__(self, driver: neo4j.AsyncDriver, loop: asyncio.AbstractEventLoop, database: str = "neo4j", *,
                 timeout_s: float | None = 20.0, bulk_timeout_s: float | None = 600.0):
        super().__init__(driver, database, timeout_s=timeout_s, bulk_timeout_s=bulk_timeout_s)  # type: ignore[arg-type]
        self.async_driver = driver
        self.loop = loop

    def _await(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if in_bridge():
            return await_only(coroutine)
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def _bounded(self, seconds: float | None, what: str, coroutine: Coroutine[Any, Any, T]) -> T:
        """As kbgraph.store.deadline.within: awaited while the server answers a ping, abandoned when not."""
        task = asyncio.ensure_future(coroutine)
        if seconds is None:
            return await task
        while True:
            done, _ = await asyncio.wait({task}, timeout=seconds)
            if done:
                return task.result()
            if not await self._still_there():
                task.cancel()
                raise timed_out(seconds, what)

    async def _still_there(self) -> bool:
        """As :meth:`Neo4jGateway.still_there`: the Bolt handshake on a connection of its own (in a
        thread) for a ``bolt://`` server, not a query through the pool the call holds a connection of."""
        if self._address is None:
            return await self._answers()
        return await asyncio.to_thread(handshake_answers, self._address,
                                       min(self.timeout_s or PING_TIMEOUT_S, PING_TIMEOUT_S))

    async def _answers(self) -> bool:
        async def ping() -> None:
            async with self.async_driver.session(database=self.database) as session:
                await (await session.run(query("ping"))).consume()

        try:
            await asyncio.wait_for(ping(), min(self.timeout_s or PING_TIMEOUT_S, PING_TIMEOUT_S))
        except Exception:  # frozen (timeout), gone (driver error), refusing: not answering
            return False
        return True

    def _session(self, **config: Any) -> neo4j.AsyncSession:
        return self.async_driver.session(database=self.database,
                                         bookmark_manager=self.async_driver.execute_query_bookmark_manager, **config)

    # -- the gateway's interface ------------------------------------------------------------------

    def answers(self) -> bool:
        return self._await(self._answers())

    def read(self, name: str, **params: Any) -> list[Row]:
        """As :meth:`Neo4jGateway.read`: one auto-commit query in READ mode, with the bookmarks of
        this gateway's writes, retried as the driver retries its transactions."""
        async def once() -> list[Row]:
            async with self._session(default_access_mode=neo4j.READ_ACCESS) as session:
                return await run_named_async(session, name, params)

        return guarded(name, lambda: self._await(self._bounded(self.timeout_s, name,
                                                                retried_async(once, self.retry_time_s))),
                       self.async_driver)

    def _write(self, calls: Sequence[tuple[str, dict[str, Any]]], verify: Callable[[list[list[Row]]], None] | None,
               retry_time_s: float) -> list[list[Row]]:
        """As :meth:`Neo4jGateway._write`: one explicit transaction, retried by us."""
        async def transaction() -> list[list[Row]]:
            async with self._session() as session, await session.begin_transaction() as tx:
                results = [await run_named_async(tx, name, params) for name, params in calls]
                if verify is not None:
                    verify(results)
                await flush_notes_async(tx)
                await tx.commit()
                return results

        what = calls[0][0] if calls else "write"
        return guarded(what, lambda: self._await(self._bounded(self.timeout_s, what,
                                                                retried_async(transaction, retry_time_s))),
                       self.async_driver)

    def open_transaction(self) -> AsyncOpenTransaction:
        return AsyncOpenTransaction(self)

    def auto_commit(self, name: str, **params: Any) -> list[Row]:
        async def statement() -> list[Row]:
            async with self._session() as session:
                return await run_named_async(session, name, params)

        return guarded(name, lambda: self._await(self._bounded(self.bulk_timeout_s, name, statement())),
                       self.async_driver)

    def run_statement(self, statement: str, params: dict[str, Any]) -> None:
        async def run() -> None:
            async with self._session() as session:
                await (await session.run(statement, quiet(params))).consume()

        guarded("a schema statement", lambda: self._await(run()), self.async_driver)

    def pause(self, seconds: float) -> None:
        self._await(asyncio.sleep(seconds))

    def every(self, seconds: float, call: Callable[[], Any]) -> Callable[[], None]:
        async def repeat() -> None:
            while True:
                await asyncio.sleep(seconds)
                try:
                    await run_bridged(call)
                except Exception:  # as Neo4jGateway.every: the repetition ends quietly
                    return

        task = self.loop.create_task(repeat())

        def stop() -> None:
            task.cancel()

        return stop

    def spawn_pool(self, workers: int, name: str) -> concurrent.futures.Executor:
        return GreenletExecutor(self.loop)

    def session(self, **config: Any) -> neo4j.Session:
        raise NotImplementedError("this operation reads Neo4j page by page through a synchronous session; "
                                  "use KnowledgeBase for it (export, import)")

    def bounded(self, what: str, call: Callable[[], T]) -> T:
        raise NotImplementedError(f"{what} needs the synchronous driver; use KnowledgeBase for it")


class AsyncOpenTransaction:
    """kbgraph.store.transaction's OpenTransaction on the AsyncDriver: each statement awaited
    through the loop and bounded as the gateway's calls are."""

    def __init__(self, gateway: AsyncGateway):
        self.gateway = gateway
        self.session = gateway._session()
        try:
            self.tx = gateway._await(gateway._bounded(gateway.timeout_s, "begin", self.session.begin_transaction()))
        except BaseException:
            gateway._await(self.session.close())
            raise

    def run(self, name: str, params: dict[str, Any]) -> list[Row]:
        return self.gateway._await(self.gateway._bounded(self.gateway.timeout_s, name,
                                                         run_named_async(self.tx, name, params)))

    def commit(self) -> None:
        async def flushed_commit() -> None:
            await flush_notes_async(self.tx)
            await self.tx.commit()

        self.gateway._await(self.gateway._bounded(self.gateway.timeout_s, "commit", flushed_commit()))

    def close(self) -> None:
        try:  # quiet: see kbgraph.store.transaction.OpenTransaction.close
            self.gateway._await(self.gateway._bounded(self.gateway.timeout_s, "rollback", self.tx.close()))
            self.gateway._await(self.gateway._bounded(self.gateway.timeout_s, "closing a session", self.session.close()))
        except Exception:
            pass


class OffloadedEmbedder(WrappingEmbedder):
    """An embedder whose model runs in a worker thread when called from the loop, so a batch of
    sentence embeddings (CPU-bound, tens of milliseconds) does not stall every other task."""

    def __init__(self, inner: Embedder, loop: asyncio.AbstractEventLoop):
        super().__init__(inner)
        self.loop = loop

    def embed(self, texts: Sequence[str]) -> Vectors:
        if in_bridge():
            return await_only(self.loop.run_in_executor(None, self.inner.embed, list(texts)))
        return self.inner.embed(texts)

    def __getattr__(self, attribute: str) -> Any:  # the cache's counters, the bare model, …
        return getattr(self.inner, attribute)
