"""The driver's connection pool on a busy server (issue 55): a call that holds a connection is never
abandoned because the others are held too, and a call that finds none free fails in kbgraph's one
line after the configured wait, never with the driver's ConnectionAcquisitionTimeoutError (real
Neo4j; the pool is made tiny so that a few concurrent holders fill it)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import neo4j
import pytest

from kbgraph.core.errors import Neo4jUnavailableError
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.store.gateway import Neo4jGateway
from tests.conftest import Neo4jTarget

pytestmark = pytest.mark.neo4j


def tiny_pool(target: Neo4jTarget, size: int, acquisition_timeout_s: float) -> neo4j.Driver:
    return neo4j.GraphDatabase.driver(target.uri, auth=(target.username, target.password),
                                      max_connection_pool_size=size, connection_acquisition_timeout=acquisition_timeout_s,
                                      notifications_disabled_classifications=["UNRECOGNIZED"])


@pytest.fixture
def node(driver: neo4j.Driver, neo4j_target: Neo4jTarget) -> Iterator[str]:
    """A node of its own, for a transaction to lock."""
    key = f"pool-{uuid.uuid4().hex[:8]}"
    driver.execute_query("CREATE (:PoolTest {key: $key, n: 0})", key=key, database_=neo4j_target.database)
    yield key
    driver.execute_query("MATCH (p:PoolTest {key: $key}) DELETE p", key=key, database_=neo4j_target.database)


def holding(driver: neo4j.Driver, database: str, seconds: float, key: str | None = None) -> tuple[threading.Thread, threading.Event]:
    """A thread holding one of ``driver``'s connections in an open transaction for ``seconds``
    (with a write lock on node ``key``, if given); the event is set once it holds it."""
    held = threading.Event()

    def hold() -> None:
        with driver.session(database=database) as session, session.begin_transaction() as tx:
            if key is not None:
                tx.run("MATCH (p:PoolTest {key: $key}) SET p.n = p.n + 1", key=key).consume()
            else:
                tx.run("RETURN 1").consume()
            held.set()
            time.sleep(seconds)
            tx.commit()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert held.wait(30), "the holder never got its connection"
    return thread, held


def test_a_write_waiting_for_a_lock_while_every_connection_is_held_is_awaited_not_abandoned(
    neo4j_target: Neo4jTarget, node: str
) -> None:
    # Two connections: the holder's (with the lock) and the write's. Past the write's 1-s bound the
    # server is asked whether it still answers; a ping through the pool waited for a third
    # connection and read the busy server as a frozen one ("did not answer within 1 s").
    driver = tiny_pool(neo4j_target, size=2, acquisition_timeout_s=30)
    try:
        holder, _ = holding(driver, neo4j_target.database, 4.0, node)
        gateway = Neo4jGateway(driver, neo4j_target.database, timeout_s=1.0, retry_time_s=0)
        started = time.monotonic()
        result = gateway.bounded("a write behind a lock", lambda: _locked_write(driver, neo4j_target.database, node))
        assert result == 2 and time.monotonic() - started >= 2.0  # it waited for the holder's commit
        holder.join(30)
    finally:
        driver.close()


def _locked_write(driver: neo4j.Driver, database: str, key: str) -> int:
    with driver.session(database=database) as session:
        record = session.run("MATCH (p:PoolTest {key: $key}) SET p.n = p.n + 1 RETURN p.n AS n", key=key).single()
        assert record is not None
        return int(record["n"])


def test_maintain_that_finds_no_free_connection_fails_in_kbgraphs_one_line_after_the_configured_wait(
    neo4j_target: Neo4jTarget, embedder: CachedEmbedder
) -> None:
    driver = tiny_pool(neo4j_target, size=1, acquisition_timeout_s=1.0)
    kb = KnowledgeBase(driver, embedder, namespace=f"t-{uuid.uuid4().hex[:8]}", database=neo4j_target.database)
    try:
        holder, _ = holding(driver, neo4j_target.database, 6.0)
        started = time.monotonic()
        with pytest.raises(Neo4jUnavailableError) as raised:
            kb.maintain()
        message = str(raised.value)
        assert 1.0 <= time.monotonic() - started < 6.0
        assert "\n" not in message and "no connection of this process's pool came free within 1 s" in message, message
        assert "every one of its 1 connections was in use by other calls" in message, message
        assert "KBGRAPH_CONNECT_TIMEOUT_S" in message and "maintenance_candidates" in message, message
        holder.join(30)
        assert kb.maintain().merged == 0  # with the connection free again, it runs
    finally:
        kb.clear()
        driver.close()


def test_a_wait_spent_opening_a_connection_is_not_blamed_on_calls_holding_the_pool(
    neo4j_target: Neo4jTarget,
) -> None:
    """A connection being opened holds its place in the pool: on a CPU-starved machine opening one
    can take the whole wait, and a second call then finds no room though no call holds a
    connection. Its one line says so, not that every connection was in use. (A listener that
    accepts and never answers stands for a server too slow to open a connection with.)"""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    driver = neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{port}", auth=("neo4j", "x"), max_connection_pool_size=1,
                                        connection_acquisition_timeout=1.5, connection_timeout=30)
    gateway = Neo4jGateway(driver, neo4j_target.database, timeout_s=30.0, retry_time_s=0)
    try:
        opener = threading.Thread(target=lambda: pytest.raises(Neo4jUnavailableError, gateway.read, "ping"),
                                  daemon=True)
        opener.start()
        time.sleep(0.5)  # the first call is opening the pool's one connection
        with pytest.raises(Neo4jUnavailableError) as raised:
            gateway.read("ping")
        message = str(raised.value)
        assert "\n" not in message and "came free within 1.5 s" in message, message
        assert "in use by other calls" not in message and "0 of its 1 connections were in use" in message, message
        opener.join(30)
    finally:
        driver.close()
        listener.close()


def test_the_pool_kbgraph_reads_its_words_from_is_the_installed_drivers(neo4j_target: Neo4jTarget) -> None:
    """kbgraph.store.pool reads the driver's pool internals (no public view): they are there."""
    from kbgraph.store.pool import pool_occupancy

    driver = tiny_pool(neo4j_target, size=3, acquisition_timeout_s=5)
    try:
        assert pool_occupancy(driver) == pool_occupancy(driver) and pool_occupancy(driver) is not None
        with driver.session(database=neo4j_target.database) as session, session.begin_transaction() as tx:
            tx.run("RETURN 1").consume()
            occupancy = pool_occupancy(driver)
            assert occupancy is not None and (occupancy.in_use, occupancy.limit) == (1, 3)
    finally:
        driver.close()
    assert pool_occupancy(object()) is None


def test_the_async_gateway_says_what_took_the_wait_as_the_sync_one_does(neo4j_target: Neo4jTarget) -> None:
    """AsyncKnowledgeBase's gateway words a call that found no free connection from its pool too
    (it said "the pool's state is unknown": it never handed its driver to the wording)."""
    import asyncio

    from kbgraph.store.aio import AsyncGateway, run_bridged

    async def scenario() -> str:
        driver = neo4j.AsyncGraphDatabase.driver(neo4j_target.uri, auth=(neo4j_target.username, neo4j_target.password),
                                                 max_connection_pool_size=1, connection_acquisition_timeout=1.0,
                                                 notifications_disabled_classifications=["UNRECOGNIZED"])
        try:
            gateway = AsyncGateway(driver, asyncio.get_running_loop(), neo4j_target.database, timeout_s=30.0)
            async with driver.session(database=neo4j_target.database) as session:
                tx = await session.begin_transaction()  # holds the pool's one connection
                await (await tx.run("RETURN 1")).consume()
                with pytest.raises(Neo4jUnavailableError) as raised:
                    await run_bridged(gateway.read, "ping")
                await tx.rollback()
            return str(raised.value)
        finally:
            await driver.close()

    message = asyncio.run(scenario())
    assert "\n" not in message and "no connection of this process's pool came free within 1 s" in message, message
    assert "every one of its 1 connections was in use by other calls" in message, message
