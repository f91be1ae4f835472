"""The gateway's rows are what ``record.data()`` gives, for plain values and for graph values alike
(real Neo4j: the driver's own records). Reads are single auto-commit queries, retried as the
driver retries a managed transaction."""

from __future__ import annotations

import asyncio
import time

import neo4j
import pytest

from kbgraph.store.gateway import Neo4jGateway, quiet, row_of
from kbgraph.store.reachability import driver_retry_time_s
from kbgraph.store.retry import retried, retried_async

QUERIES = [
    "RETURN [x IN range(1, 384) | x / 384.0] AS vector, 'a' AS text, null AS nothing, 3 AS n, true AS flag",
    "RETURN {a: [1, 2.5, 'x'], b: {c: [[1.0, 2.0], []]}} AS nested, [] AS empty",
    "CREATE (a:GatewayProbe {name: 'a', v: [0.5, 0.25]})-[r:PROBES {w: 1}]->(b:GatewayProbe {name: 'b'}) "
    "RETURN a, r, b, [a, b] AS both, {node: a} AS holder",
    "CREATE p = (:GatewayProbe {name: 'a'})-[:PROBES]->(:GatewayProbe {name: 'b'}) RETURN p, [1.5, p] AS mixed",
]


@pytest.fixture
def session(driver: neo4j.Driver, neo4j_target) -> neo4j.Session:  # type: ignore[no-untyped-def]
    with driver.session(database=neo4j_target.database) as opened:
        yield opened
        opened.run("MATCH (n:GatewayProbe) DETACH DELETE n").consume()


@pytest.mark.parametrize("cypher", QUERIES)
def test_a_row_is_what_record_data_gives(session: neo4j.Session, cypher: str) -> None:
    records = list(session.run(cypher))
    assert len(records) == 1
    assert row_of(records[0]) == records[0].data()


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _failing(times: int, error: Exception) -> tuple[list[int], object]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise error
        return "rows"

    return calls, call


def test_a_read_that_meets_a_retryable_error_is_run_again_with_the_drivers_backoff() -> None:
    clock = _Clock()
    calls, call = _failing(2, neo4j.exceptions.ServiceUnavailable("connection lost"))
    assert retried(call, 10.0, sleep=clock.sleep, clock=lambda: clock.now) == "rows"  # type: ignore[arg-type]
    assert len(calls) == 3
    assert 0.8 <= clock.slept[0] <= 1.2 and 1.6 <= clock.slept[1] <= 2.4


def test_a_read_still_failing_after_the_retry_time_raises_that_error() -> None:
    clock = _Clock()
    calls, call = _failing(1000, neo4j.exceptions.SessionExpired("gone"))
    with pytest.raises(neo4j.exceptions.SessionExpired):
        retried(call, 5.0, sleep=clock.sleep, clock=lambda: clock.now)  # type: ignore[arg-type]
    assert sum(clock.slept) <= 5.0 + 1e-9  # never waits past the retry time
    assert 3 <= len(calls) <= 5


def test_an_error_that_is_not_retryable_is_raised_at_once() -> None:
    clock = _Clock()
    calls, call = _failing(1, ValueError("a bug, not the connection"))
    with pytest.raises(ValueError):
        retried(call, 10.0, sleep=clock.sleep, clock=lambda: clock.now)  # type: ignore[arg-type]
    assert len(calls) == 1 and clock.slept == []


def test_an_async_read_is_retried_on_the_same_schedule_and_a_bug_is_raised_at_once() -> None:
    clock = _Clock()

    async def asleep(seconds: float) -> None:
        clock.sleep(seconds)

    for error, attempts, result in [(neo4j.exceptions.ServiceUnavailable("connection lost"), 3, "rows"),
                                    (ValueError("a bug, not the connection"), 1, None)]:
        clock.slept.clear()
        calls, call = _failing(2, error)

        async def acall() -> object:
            return call()  # type: ignore[operator]

        async def scenario() -> object:
            try:
                return await retried_async(acall, 10.0, sleep=asleep, clock=lambda: clock.now)
            except ValueError:
                return None

        assert asyncio.run(scenario()) == result
        assert len(calls) == attempts
        assert clock.slept == [] if attempts == 1 else 0.8 <= clock.slept[0] <= 1.2 and 1.6 <= clock.slept[1] <= 2.4


def nonsense(driver: neo4j.Driver, database: str) -> list[neo4j.Record]:
    with driver.session(database=database) as session:
        return list(session.run("RETURN nonsense("))


def test_a_read_sees_the_write_before_it_and_a_query_error_is_not_retried(
    driver: neo4j.Driver, neo4j_target  # type: ignore[no-untyped-def]
) -> None:
    gateway = Neo4jGateway(driver, neo4j_target.database, retry_time_s=30.0)
    try:
        with gateway.session() as session:
            session.run("CREATE (:GatewayProbe {name: 'written'})").consume()
        assert gateway.read("ping")  # a named read, one auto-commit query
        with gateway.session(default_access_mode=neo4j.READ_ACCESS) as session:
            assert session.run("MATCH (p:GatewayProbe {name: 'written'}) RETURN count(p) AS n").single()["n"] == 1
        started = time.monotonic()
        with pytest.raises(neo4j.exceptions.CypherSyntaxError):
            retried(lambda: nonsense(driver, neo4j_target.database), 30.0)
        assert time.monotonic() - started < 5.0
    finally:
        with driver.session(database=neo4j_target.database) as session:
            session.run("MATCH (n:GatewayProbe) DETACH DELETE n").consume()


def test_quiet_parameters_print_short_and_reach_neo4j_unchanged(session: neo4j.Session) -> None:
    vector = [i / 384.0 for i in range(384)]
    params = {"rows": [{"id": "a", "embedding": vector, "tags": ["x"]}], "props": {"n": 1, "v": vector},
              "vector": vector, "kb": "ns", "k": 3}
    sent = quiet(params)
    # What the driver formats for its debug line is a few characters, not thousands of floats.
    assert len(repr(sent)) < 200
    assert sent == params and params["rows"][0]["embedding"] is vector  # nothing copied deep, nothing changed
    row = session.run("RETURN $rows AS rows, $props AS props, $vector AS vector, $kb AS kb, $k AS k", sent).single()
    assert row is not None and row_of(row) == params


def test_reads_are_retried_as_long_as_the_driver_retries_its_transactions() -> None:
    for configured, expected in (({"max_transaction_retry_time": 0}, 0.0), ({"max_transaction_retry_time": 4}, 4.0),
                                 ({}, 30.0)):
        driver = neo4j.GraphDatabase.driver("bolt://127.0.0.1:1", auth=("neo4j", "x"), **configured)
        try:
            assert driver_retry_time_s(driver) == expected
            assert Neo4jGateway(driver).retry_time_s == expected
            assert Neo4jGateway(driver, retry_time_s=1.5).retry_time_s == 1.5
        finally:
            driver.close()


@pytest.fixture
def driver_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits of the driver's own retries (managed transactions), recorded instead of slept."""
    from neo4j._sync.work import session as driver_session

    slept: list[float] = []
    monkeypatch.setattr(driver_session, "sleep", slept.append)
    return slept


def test_a_write_to_a_lost_server_is_retried_by_us_within_the_retry_time_not_by_the_driver(
    driver_sleeps: list[float],
) -> None:
    """The driver's schedule may sleep past its max_transaction_retry_time (it checks the time
    before sleeping 1, 2, 4, 8 s: up to ~18 s for 10 s); the gateway's waits add up to at most
    retry_time_s, and the failure is kbgraph's error."""
    from kbgraph.core.errors import Neo4jUnavailableError
    from kbgraph.core.processes import free_port

    clock = _Clock()
    with neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}", auth=("neo4j", "x"),
                                    max_transaction_retry_time=1) as dead:
        gateway = Neo4jGateway(dead, retry_time_s=10.0, sleep=clock.sleep, clock=lambda: clock.now)
        with pytest.raises(Neo4jUnavailableError, match=r"^lost Neo4j during ping \(ServiceUnavailable"):
            gateway.write_all([("ping", {})])
        assert driver_sleeps == []
        assert 3 <= len(clock.slept) and sum(clock.slept) <= 10.0 + 1e-9
        clock.slept.clear()
        with pytest.raises(Neo4jUnavailableError):
            gateway.write_once("ping")
        assert clock.slept == [] and driver_sleeps == []  # one attempt, no schedule
