"""``AsyncKnowledgeBase``: kbgraph for asyncio agents, on the official driver's ``AsyncDriver``.

    async with await AsyncKnowledgeBase.from_settings(namespace="my-agent") as kb:
        results = await kb.search("refund a damaged item", domain="retail")
        await kb.record_feedback(retrieved=results.ids(), used=results.ids()[:1], outcome=True)

Every method is :class:`~kbgraph.kb.KnowledgeBase`'s, with the same signature, awaited: each runs
the one implementation of the pipeline (see :mod:`kbgraph.store.aio` for how) and its queries go through
the AsyncDriver, so many searches from one event loop share the loop and the driver's connection
pool instead of a thread each. What reads Neo4j page by page through a synchronous session (export,
import, py2neo) stays on ``KnowledgeBase``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import neo4j

from kbgraph.store.aio import AsyncGateway, OffloadedEmbedder, run_bridged
from kbgraph.store.connection import connect
from kbgraph.embedders import Embedder, embedder_from_settings
from kbgraph.kb import KnowledgeBase
from kbgraph.store.step_texts import open_namespace
from kbgraph.core.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")

__all__ = ["AsyncKnowledgeBase"]


def _awaited(method: Callable[Concatenate[KnowledgeBase, P], R]) -> Callable[Concatenate[AsyncKnowledgeBase, P], Coroutine[Any, Any, R]]:
    """``KnowledgeBase.<method>`` as a coroutine method of AsyncKnowledgeBase (same parameters,
    same docstring, the one implementation)."""
    async def call(self: AsyncKnowledgeBase, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await self._run(method, *args, **kwargs)

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class AsyncKnowledgeBase:
    """One namespace of kbgraph for asyncio code (see the module docstring). Open it with
    :meth:`from_settings` or :meth:`connect`; close it with ``await kb.close()`` or ``async with``."""

    def __init__(self, kb: KnowledgeBase, driver: neo4j.AsyncDriver, *, owns_driver: bool = False):
        self._kb = kb
        self.driver = driver
        self._owns_driver = owns_driver
        # Ingests of one namespace take turns in this process (as KnowledgeBase's do, with a lock
        # that would stall the loop if two tasks contended for it).
        self._ingesting = asyncio.Lock()

    @property
    def namespace(self) -> str:
        return self._kb.namespace

    @property
    def settings(self) -> Settings:
        return self._kb.settings

    @property
    def embedder(self) -> Embedder:
        return self._kb.embedder

    @classmethod
    async def connect(
        cls, driver: neo4j.AsyncDriver, embedder: Embedder, *, namespace: str = "default", database: str = "neo4j",
        settings: Settings | None = None, ensure_schema: bool = True, owns_driver: bool = False,
    ) -> AsyncKnowledgeBase:
        """Over an AsyncDriver you opened (dependency injection, e.g. in tests)."""
        loop = asyncio.get_running_loop()
        settings = settings or Settings(namespace=namespace, neo4j_database=database)
        gateway = AsyncGateway(driver, loop, database, timeout_s=settings.query_timeout_s,
                               bulk_timeout_s=settings.bulk_query_timeout_s)
        offloaded = OffloadedEmbedder(embedder, loop)
        kb = KnowledgeBase(driver, offloaded, namespace=namespace, database=database,  # type: ignore[arg-type]
                           settings=settings, ensure_schema=False, gateway=gateway)
        if ensure_schema:  # the schema applied, the namespace's steps converted to one vector per text
            await run_bridged(open_namespace, gateway, embedder.dimension, namespace)
        return cls(kb, driver, owns_driver=owns_driver)

    @classmethod
    async def from_settings(cls, settings: Settings | None = None, *, quiet: bool = False,
                            **overrides: Any) -> AsyncKnowledgeBase:
        """Connects as configured (NEO4J_URI, or the managed server, started when needed): the
        connection is checked as KnowledgeBase.from_settings checks it, then an AsyncDriver opens
        with the same address and credentials."""
        settings = settings or Settings(**overrides)
        checked = await asyncio.to_thread(connect, settings, quiet)
        checked.driver.close()
        driver = neo4j.AsyncGraphDatabase.driver(
            checked.uri, auth=checked.auth, connection_timeout=settings.connect_timeout_s,
            connection_acquisition_timeout=settings.connect_timeout_s, max_transaction_retry_time=settings.retry_time_s,
            notifications_disabled_classifications=["UNRECOGNIZED"])
        try:
            embedder = await asyncio.to_thread(embedder_from_settings, settings)
            return await cls.connect(driver, embedder, namespace=settings.namespace, database=checked.database,
                                     settings=settings, owns_driver=True)
        except BaseException:
            await driver.close()
            raise

    async def _run(self, method: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        if method.__name__ in _INGESTING:
            async with self._ingesting:
                return await run_bridged(method, self._kb, *args, **kwargs)
        return await run_bridged(method, self._kb, *args, **kwargs)

    # -- writing ---------------------------------------------------------------------------------
    add_experiences = _awaited(KnowledgeBase.add_experiences)
    ingest = _awaited(KnowledgeBase.ingest)
    add_trajectories = _awaited(KnowledgeBase.add_trajectories)
    recluster = _awaited(KnowledgeBase.recluster)
    add_verified = _awaited(KnowledgeBase.add_verified)
    delete = _awaited(KnowledgeBase.delete)
    clear = _awaited(KnowledgeBase.clear)
    # -- reading ---------------------------------------------------------------------------------
    get = _awaited(KnowledgeBase.get)
    get_many = _awaited(KnowledgeBase.get_many)
    count = _awaited(KnowledgeBase.count)
    stats = _awaited(KnowledgeBase.stats)
    index_status = _awaited(KnowledgeBase.index_status)
    # -- searching -------------------------------------------------------------------------------
    search = _awaited(KnowledgeBase.search)
    refine = _awaited(KnowledgeBase.refine)
    search_steps = _awaited(KnowledgeBase.search_steps)
    search_query = _awaited(KnowledgeBase.search_query)
    # -- learning --------------------------------------------------------------------------------
    record_feedback = _awaited(KnowledgeBase.record_feedback)
    maintain = _awaited(KnowledgeBase.maintain)
    restore = _awaited(KnowledgeBase.restore)
    ability_matrix = _awaited(KnowledgeBase.ability_matrix)
    best_agents = _awaited(KnowledgeBase.best_agents)
    learning_state = _awaited(KnowledgeBase.learning_state)

    # -- code written against KnowledgeBase ------------------------------------------------------

    async def run(self, fn: Callable[Concatenate[KnowledgeBase, P], R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """``fn(kb, *args, **kwargs)`` for a function written against :class:`KnowledgeBase` (kbgraph's
        agent tools, its LangGraph store), run as the methods here run: on the loop, its queries
        through the AsyncDriver. ``fn`` must not ingest: see :meth:`run_ingesting`."""
        return await run_bridged(fn, self._kb, *args, **kwargs)

    async def run_ingesting(self, fn: Callable[Concatenate[KnowledgeBase, P], R], /, *args: P.args,
                            **kwargs: P.kwargs) -> R:
        """:meth:`run` for a function that may ingest: it waits for the namespace's ingest turn in
        this process, as :meth:`add_trajectories` does (two ingests on one loop would otherwise
        wait for each other on the loop's own thread)."""
        async with self._ingesting:
            return await run_bridged(fn, self._kb, *args, **kwargs)

    # -- lifecycle -------------------------------------------------------------------------------

    async def close(self) -> None:
        self._kb._owns_driver = False  # the async driver is closed here, not by KnowledgeBase
        self._kb.close()
        if self._owns_driver:
            await self.driver.close()

    async def __aenter__(self) -> AsyncKnowledgeBase:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.close()


# The methods that take the namespace's ingest lease: they take turns within this process.
_INGESTING = frozenset({"add_experiences", "ingest", "add_trajectories", "recluster", "add_verified"})
