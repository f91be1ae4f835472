"""kill -9 of Neo4j in the middle of work, then a restart and the same work again, ends exactly as
doing it once without a fault: nothing lost, nothing doubled, nothing half-written. Faults hit a
throw-away managed Neo4j (never the shared test server) during an ingest, a feedback stream and a
maintenance run."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.connection import open_driver
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.settings import Settings
from tests.conftest import REAL_RUNS
from tests.reliability.snapshots import canonical
from tests.reliability.test_merge_race import near_duplicates, originals
from tests.reliability.throwaway import ThrowawayNeo4j

pytestmark = [pytest.mark.timeout(900)]
FAULTS: Counter[str] = Counter()


@pytest.fixture
def server(throwaway_neo4j: ThrowawayNeo4j) -> ThrowawayNeo4j:
    return throwaway_neo4j


def connect(server: ThrowawayNeo4j, embedder: CachedEmbedder, namespace: str) -> KnowledgeBase:
    # A killed ingest's lease lapses after ingest_lease_s: short here, so the re-run does not wait long.
    settings = Settings(namespace=namespace, write_batch_size=3, retry_time_s=2.0, query_timeout_s=60.0,
                        ingest_lease_s=3.0)
    driver = open_driver(server.uri, server.auth, "neo4j", 15.0, 2.0)
    return KnowledgeBase(driver, embedder, namespace=namespace, settings=settings, owns_driver=True)


def kill_when(server: ThrowawayNeo4j, ready: Callable[[], bool], work: threading.Thread, limit_s: float = 120.0) -> bool:
    """kill -9 as soon as ``ready()`` holds while ``work`` still runs; False if work ended first."""
    deadline = time.monotonic() + limit_s
    while work.is_alive() and time.monotonic() < deadline:
        try:
            if ready():
                server.kill()
                FAULTS["kill -9"] += 1
                return True
        except neo4j.exceptions.DriverError:
            pass
        time.sleep(0.02)
    return False


def in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[BaseException]]:
    failures: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # the fault's effect on the client, inspected by the test
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, failures


def marked(server: ThrowawayNeo4j, namespace: str) -> int:
    with neo4j.GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        records, _, _ = driver.execute_query("MATCH (r:IngestedRecord {kb: $kb}) RETURN count(r) AS n", kb=namespace)
    return int(records[0]["n"])


def test_an_ingest_killed_mid_way_then_run_again_equals_a_clean_ingest(
    server: ThrowawayNeo4j, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    runs = tmp_path / "runs.jsonl"
    with open(REAL_RUNS / "airline_gpt4o.jsonl", encoding="utf-8") as handle:
        runs.write_text("".join(handle.readline() for _ in range(24)))
    server.start()
    clean = connect(server, embedder, f"clean-{uuid.uuid4().hex[:6]}")
    clean.ingest([runs])
    expected = canonical(clean)

    faulted = f"fault-{uuid.uuid4().hex[:6]}"
    kb = connect(server, embedder, faulted)
    work, failures = in_thread(lambda: kb.ingest([runs]))
    assert kill_when(server, lambda: marked(server, faulted) >= 3, work), "the ingest ended before the fault"
    work.join(60)
    assert failures, "the ingest should have failed with the server gone"
    server.start()
    again = connect(server, embedder, faulted)
    report = again.ingest([runs])
    assert report.records_already_ingested >= 3  # what was committed before the kill is kept
    assert canonical(again) == expected
    for client in (clean, kb, again):
        client.close()


def test_every_confirmed_feedback_event_survives_a_kill(server: ThrowawayNeo4j, embedder: CachedEmbedder) -> None:
    server.start()
    namespace = f"feedback-{uuid.uuid4().hex[:6]}"
    kb = connect(server, embedder, namespace)
    items = originals(0)
    kb.add_experiences(items)
    ids = [e.key for e in items]
    confirmed: Counter[tuple[str, str]] = Counter()
    in_flight: list[dict[str, Any]] = []
    stop = threading.Event()
    rng = random.Random(9)

    def stream() -> None:
        while not stop.is_set():
            target = rng.choice(ids)
            event = {"retrieved": [target], "used": [target], "outcome": rng.random() < 0.5}
            try:
                kb.record_feedback(**event)
            except Exception:  # the server died: the agent keeps the event to send again
                in_flight.append(event)
                return
            confirmed.update({(target, "retrieved"): 1, (target, "used"): 1,
                              (target, "succeeded"): int(bool(event["outcome"]))})

    work, _ = in_thread(stream)
    assert kill_when(server, lambda: sum(confirmed.values()) >= 150, work)
    work.join(60)
    stop.set()
    server.start()
    again = connect(server, embedder, namespace)
    for event in in_flight:  # sent again after the restart, as an agent would
        again.record_feedback(**event)
        target = event["retrieved"][0]
        confirmed.update({(target, "retrieved"): 1, (target, "used"): 1, (target, "succeeded"): int(bool(event["outcome"]))})
    stored: Counter[tuple[str, str]] = Counter()
    for row in again.gateway.read("feedback_counters", kb=namespace, ids=ids):
        for counter in ("retrieved", "used", "succeeded"):
            stored[(row["id"], counter)] = row[counter]
    FAULTS["feedback events confirmed"] += sum(v for (_, counter), v in confirmed.items() if counter == "retrieved")
    # The event in flight when Neo4j died is the one ambiguity of any client/server store: it may
    # have committed just before the reply was lost, and then the resend counts it twice.
    doubled = {key: stored[key] - confirmed[key] for key in stored if stored[key] != confirmed[key]}
    resent = in_flight[0] if in_flight else None
    allowed = {} if resent is None else {(resent["retrieved"][0], "retrieved"): 1, (resent["retrieved"][0], "used"): 1,
                                         **({(resent["retrieved"][0], "succeeded"): 1} if resent["outcome"] else {})}
    assert doubled in ({}, allowed), (doubled, allowed)
    FAULTS["in-flight event counted twice"] += int(doubled != {})
    for client in (kb, again):
        client.close()


def grow_for_maintenance(kb: KnowledgeBase) -> None:
    for wave in range(4):
        kb.add_experiences(originals(wave))
        kb.add_experiences(near_duplicates(originals(wave)))
    ids = [row["id"] for row in kb.gateway.read("experience_ids_page", kb=kb.namespace, after="", limit=10**6)]
    rng = random.Random(3)
    for target in ids:
        kb.record_feedback(retrieved=[target], used=[target], outcome=rng.random() < 0.5)


def test_maintenance_killed_mid_run_then_run_again_equals_a_clean_run(
    server: ThrowawayNeo4j, embedder: CachedEmbedder
) -> None:
    server.start()
    clean = connect(server, embedder, f"clean-{uuid.uuid4().hex[:6]}")
    grow_for_maintenance(clean)
    clean_report = clean.maintain()
    assert clean_report.merged >= 12, "the fault needs merges to interrupt"
    expected = canonical(clean)

    namespace = f"fault-{uuid.uuid4().hex[:6]}"
    kb = connect(server, embedder, namespace)
    grow_for_maintenance(kb)
    before = kb.count()
    work, failures = in_thread(kb.maintain)

    def merged_some() -> bool:
        with neo4j.GraphDatabase.driver(server.uri, auth=server.auth) as driver:
            records, _, _ = driver.execute_query("MATCH (e:Experience {kb: $kb}) RETURN count(e) AS n", kb=namespace)
        return int(records[0]["n"]) < before

    killed = kill_when(server, merged_some, work)
    work.join(60)
    server.start()
    again = connect(server, embedder, namespace)
    again.maintain()
    assert canonical(again) == expected
    if not killed:
        pytest.xfail("maintenance ended before the fault could hit it (the state still matched a clean run)")
    assert failures
    for client in (clean, kb, again):
        client.close()


def test_zz_report_faults_injected() -> None:
    print(f"\nfaults injected: {dict(FAULTS)}")
