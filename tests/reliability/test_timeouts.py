"""Failing fast: when Neo4j dies or freezes in the middle of work, every call fails within its
documented bound (KBGRAPH_RETRY_TIME_S for a dead server, KBGRAPH_QUERY_TIMEOUT_S and
KBGRAPH_CONNECT_TIMEOUT_S for one that stopped answering), in one line, from the API, the CLI, the
MCP server and the inspection runner alike. Bounds are set small here so the suite stays fast; the
assertions allow generous slack over them (the requirement is the bound, not a speed).

The tests share one throw-away server and run in the order written: those that freeze it (and
resume it) first, then those that kill it, each killed server started again by the next test that
needs one, so that it starts as few times as it can (each start recovers the killed store)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import neo4j
import pytest

from kbgraph.store.deadline import Neo4jTimeoutError
from kbgraph.store.connection import open_driver
from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import ManagedServerError, Neo4jUnavailableError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.settings import Settings
from kbgraph.inspect import InspectionLibrary, InspectionRunner
from kbgraph.store.gateway import Neo4jGateway
from tests.reliability.test_fuzz_mcp import StdioPeer
from tests.reliability.throwaway import ThrowawayNeo4j

pytestmark = [pytest.mark.timeout(900)]

BOUND_S = 3.0
SLACK_S = 12.0  # process start, model loading on a busy 2-core machine
SAMPLES = Path(__file__).resolve().parents[2] / "kbgraph" / "samples" / "experiences.jsonl"


@pytest.fixture
def running(throwaway_neo4j: ThrowawayNeo4j) -> ThrowawayNeo4j:
    throwaway_neo4j.start()  # after a kill in an earlier test
    return throwaway_neo4j


@pytest.fixture
def dead(throwaway_neo4j: ThrowawayNeo4j) -> ThrowawayNeo4j:
    """The server killed (kill -9): here, unless the test before left it so. Each kill costs the
    next test a server start (recovery included), so the tests that freeze come first and the one
    that wants a dead server follows one that killed it."""
    if throwaway_neo4j.server.status().running:
        throwaway_neo4j.kill()
    return throwaway_neo4j


def open_kb(server: ThrowawayNeo4j, embedder: CachedEmbedder) -> KnowledgeBase:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    settings = Settings(namespace=namespace, query_timeout_s=BOUND_S, retry_time_s=BOUND_S, connect_timeout_s=BOUND_S)
    driver = open_driver(server.uri, server.auth, "neo4j", BOUND_S, BOUND_S)
    kb = KnowledgeBase(driver, embedder, namespace=namespace, settings=settings, owns_driver=True)
    kb.ingest([SAMPLES])
    return kb


def timed_failure(call: object) -> tuple[float, BaseException]:
    started = time.monotonic()
    try:
        call()  # type: ignore[operator]
    except BaseException as exc:  # noqa: BLE001 — the failure is what is measured
        return time.monotonic() - started, exc
    raise AssertionError("the call succeeded against a dead or frozen server")


def kbgraph_cli(server: ThrowawayNeo4j, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = server.env("timeouts", KBGRAPH_CONNECT_TIMEOUT_S=str(BOUND_S), KBGRAPH_QUERY_TIMEOUT_S=str(BOUND_S),
                     KBGRAPH_RETRY_TIME_S=str(BOUND_S))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "kbgraph.cli", *args], env=env, capture_output=True, text=True,
                            timeout=300)
    return time.monotonic() - started, result


def test_a_frozen_server_fails_each_call_within_the_query_timeout(running: ThrowawayNeo4j, embedder: CachedEmbedder) -> None:
    kb = open_kb(running, embedder)
    pid = running.freeze()
    try:
        seconds, error = timed_failure(lambda: kb.stats())
        assert isinstance(error, Neo4jTimeoutError) and "KBGRAPH_QUERY_TIMEOUT_S" in str(error)
        assert seconds < BOUND_S + SLACK_S, seconds
    finally:
        running.thaw(pid)
    assert kb.stats().experiences == 30  # the server answers again once resumed
    kb.close()


def test_the_cli_against_a_frozen_server_fails_in_one_line_within_the_connect_timeout(running: ThrowawayNeo4j) -> None:
    pid = running.freeze()
    try:
        seconds, result = kbgraph_cli(running, "stats")
    finally:
        running.thaw(pid)
    assert result.returncode == 1 and seconds < BOUND_S + SLACK_S, (seconds, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "did not answer within" in lines[0] and "Traceback" not in result.stderr, lines


def test_a_frozen_managed_server_is_named_at_once_with_the_way_to_resume_it(running: ThrowawayNeo4j) -> None:
    pid = running.freeze()
    try:
        started = time.monotonic()
        with pytest.raises(ManagedServerError, match=f"kill -CONT {pid}"):
            running.server.start()
        assert time.monotonic() - started < SLACK_S
    finally:
        running.thaw(pid)


def test_too_many_failed_logins_are_explained_as_a_rate_limit_not_a_database_problem(running: ThrowawayNeo4j) -> None:
    """On a user of its own, so that the lock it brings about (dbms.security.auth_lock_time, 5 s)
    keeps no later test from logging in as neo4j (and none has to wait it out)."""
    user = "rate_limited"
    with neo4j.GraphDatabase.driver(running.uri, auth=running.auth) as admin:
        admin.execute_query(f"CREATE OR REPLACE USER {user} SET PLAINTEXT PASSWORD $password CHANGE NOT REQUIRED",
                            password=uuid.uuid4().hex, database_="system")
    messages = []
    for _ in range(6):  # Neo4j locks the user after 3 failed attempts (dbms.security.auth_max_failed_attempts)
        with pytest.raises(Neo4jUnavailableError) as raised:
            open_driver(running.uri, (user, "wrong-password"), "neo4j", BOUND_S, 0)
        messages.append(str(raised.value))
    assert any("too many failed attempts" in m for m in messages), messages
    assert not any("NEO4J_DATABASE" in m for m in messages), messages


def test_a_server_killed_mid_session_fails_the_next_call_within_the_retry_bound(
    running: ThrowawayNeo4j, embedder: CachedEmbedder
) -> None:
    kb = open_kb(running, embedder)
    running.kill()
    for call in (lambda: kb.search("cancel a pending order", k=3), lambda: kb.record_feedback(retrieved=["x"])):
        seconds, error = timed_failure(call)
        assert seconds < BOUND_S + SLACK_S, seconds
        assert isinstance(error, neo4j.exceptions.ServiceUnavailable | neo4j.exceptions.SessionExpired
                          | Neo4jUnavailableError), repr(error)
    kb.driver.close()


def test_an_inspection_query_on_a_killed_server_fails_in_kbgraphs_one_line_within_the_retry_bound(
    running: ThrowawayNeo4j,
) -> None:
    query, namespace = InspectionLibrary().get("top_by_utility"), f"t-{uuid.uuid4().hex[:8]}"
    with open_driver(running.uri, running.auth, "neo4j", BOUND_S, BOUND_S) as driver:
        runner = InspectionRunner(driver)
        assert runner.run(query, {}, namespace).rows == [], "the server answers before it is killed"
        running.kill()
        seconds, error = timed_failure(lambda: runner.run(query, {}, namespace))
    assert seconds < BOUND_S + SLACK_S, seconds
    assert isinstance(error, Neo4jUnavailableError), repr(error)
    message = str(error)
    assert message.startswith("lost Neo4j during inspection query top_by_utility (") and "\n" not in message, message


def test_the_cli_against_a_dead_server_fails_in_one_line(dead: ThrowawayNeo4j) -> None:
    seconds, result = kbgraph_cli(dead, "stats")
    assert result.returncode == 1 and seconds < BOUND_S + SLACK_S, (seconds, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach Neo4j" in lines[0], lines


def test_the_mcp_server_answers_a_tool_call_with_an_error_within_the_bound_when_neo4j_dies(
    running: ThrowawayNeo4j, tmp_path: Path
) -> None:
    env = running.env(f"t-{uuid.uuid4().hex[:8]}", KBGRAPH_CONNECT_TIMEOUT_S=str(BOUND_S),
                      KBGRAPH_QUERY_TIMEOUT_S=str(BOUND_S), KBGRAPH_RETRY_TIME_S=str(BOUND_S))
    peer = StdioPeer(env)
    try:
        peer.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "timeouts", "version": "0"}})
        peer.send_text(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        first = peer.request("tools/call", {"name": "search_experiences", "arguments": {"task": "cancel an order"}})
        assert "result" in first and not first["result"].get("isError"), first  # Neo4j opened, model loaded
        for break_it in ("freeze", "kill"):
            if break_it == "freeze":
                frozen = running.freeze()
            else:
                running.thaw(frozen)
                running.kill()
            started = time.monotonic()
            answer = peer.request("tools/call", {"name": "search_experiences", "arguments": {"task": "cancel an order"}})
            seconds = time.monotonic() - started
            assert seconds < BOUND_S + SLACK_S, (break_it, seconds)
            assert answer["result"]["isError"], answer
            text = answer["result"]["content"][0]["text"]
            assert "Neo4j" in text and "Traceback" not in text, text
    finally:
        peer.close()


# -- a server killed in the middle of an ingest (issue 35 item 9) ------------------------------

RUNS = Path(__file__).resolve().parents[2] / "kbgraph" / "samples" / "trajectories.jsonl"


def kill_once_records_are_marked(server: ThrowawayNeo4j, namespace: str, still_running: Callable[[], bool],
                                 killing: threading.Event | None = None) -> None:
    """kill -9 once the ingest of ``namespace`` committed 3 records (it writes 3 a transaction);
    ``killing`` is set just before."""
    cypher = "MATCH (r:IngestedRecord {kb: $kb}) RETURN count(r) AS n"
    with neo4j.GraphDatabase.driver(server.uri, auth=server.auth,
                                    notifications_disabled_classifications=["UNRECOGNIZED"]) as observer:
        while still_running():
            if observer.execute_query(cypher, kb=namespace).records[0]["n"] >= 3:
                if killing is not None:
                    killing.set()
                server.kill()
                return
            time.sleep(0.02)
    raise AssertionError("the ingest ended before the fault")


def test_an_ingest_whose_server_is_killed_mid_way_waits_at_most_the_retry_time_in_all(
    running: ThrowawayNeo4j, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The waits between attempts after the kill — ours and any of the driver's own retries —
    add up to at most retry_time_s: no second round for giving the lease back, no driver schedule
    that sleeps past it. Waits are recorded, not slept (the clock the retries read moves by them),
    so this holds however slow the machine; the lease's heartbeat is set not to beat meanwhile."""
    from neo4j._sync.work import session as driver_session

    waits: list[float] = []  # every wait, for the clock the retries read
    after_kill: list[float] = []
    killing = threading.Event()

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if killing.is_set():
            after_kill.append(seconds)

    monkeypatch.setattr(driver_session, "sleep", wait)
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    settings = Settings(namespace=namespace, write_batch_size=3, retry_time_s=BOUND_S, ingest_lease_s=3600.0)
    driver = open_driver(running.uri, running.auth, "neo4j", BOUND_S, BOUND_S)
    gateway = Neo4jGateway(driver, "neo4j", retry_time_s=BOUND_S, sleep=wait,
                           clock=lambda: time.monotonic() + sum(waits))
    kb = KnowledgeBase(driver, embedder, namespace=namespace, settings=settings, owns_driver=True, gateway=gateway)
    failures: list[BaseException] = []

    def ingest() -> None:
        try:
            kb.ingest([RUNS])
        except BaseException as exc:  # inspected below
            failures.append(exc)

    work = threading.Thread(target=ingest, daemon=True)
    work.start()
    kill_once_records_are_marked(running, namespace, work.is_alive, killing)
    work.join(300)
    assert not work.is_alive()
    assert failures and isinstance(failures[0], Neo4jUnavailableError), failures
    # A kill during a commit leaves its outcome unknown (IncompleteCommit): that one is not tried
    # again, so nothing waits; any other loss is retried, and waits.
    unknown_commit = isinstance(failures[0].__cause__, neo4j.exceptions.IncompleteCommit)
    assert (after_kill or unknown_commit) and sum(after_kill) <= BOUND_S + 1e-9, (after_kill, failures[0])
    kb.close()


def test_a_cli_ingest_whose_server_is_killed_mid_way_fails_in_one_line(running: ThrowawayNeo4j) -> None:
    """No driver log line ("Failed to read from defunct connection") beside kbgraph's error."""
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    env = running.env(namespace, KBGRAPH_RETRY_TIME_S=str(BOUND_S), KBGRAPH_WRITE_BATCH_SIZE="3")
    process = subprocess.Popen([sys.executable, "-m", "kbgraph.cli", "ingest", str(RUNS)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        kill_once_records_are_marked(running, namespace, lambda: process.poll() is None)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    lines = stderr.strip().splitlines()
    assert process.returncode == 1, stderr
    assert len(lines) == 1 and lines[0].startswith("kbgraph: error: lost Neo4j during "), lines
