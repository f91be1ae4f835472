"""Two ingests of the same files at the same time, into the same namespace (two agents, two
processes or two threads), end exactly as one ingest does: the same experiences, provenance,
concepts and relations, nothing doubled."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from tests.conftest import REAL_RUNS, Neo4jTarget
from tests.reliability.snapshots import canonical


RUNS = 24


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Real runs (successes and failures with tool errors) of the airline agent."""
    path = tmp_path / "runs.jsonl"
    with open(REAL_RUNS / "airline_gpt4o.jsonl", encoding="utf-8") as handle:
        path.write_text("".join(handle.readline() for _ in range(RUNS)))
    return path


@pytest.fixture
def namespaces(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> Iterator[list[KnowledgeBase]]:
    made = [KnowledgeBase(driver, embedder, namespace=f"test-conc-{uuid.uuid4().hex[:8]}", database=neo4j_target.database)
            for _ in range(2)]
    yield made
    for kb in made:
        kb.clear()


def test_two_concurrent_ingests_of_the_same_files_equal_one_ingest(
    namespaces: list[KnowledgeBase], runs: Path, driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget
) -> None:
    once, twice = namespaces
    once.settings.write_batch_size = twice.settings.write_batch_size = 4  # several transactions each
    once.ingest([runs])

    # Two clients, each with its own KnowledgeBase object (as two agents or processes would be).
    clients = [KnowledgeBase(driver, embedder, namespace=twice.namespace, database=neo4j_target.database)
               for _ in range(2)]
    for client in clients:
        client.settings.write_batch_size = 4
    reports: list[IngestReport] = []
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def ingest(client: KnowledgeBase) -> None:
        start.wait()
        try:
            reports.append(client.ingest([runs]))
        except BaseException as exc:  # reported below with the state it left
            failures.append(exc)

    threads = [threading.Thread(target=ingest, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not failures, [f"{type(f).__name__}: {f}" for f in failures]
    assert canonical(twice) == canonical(once)


@pytest.mark.parametrize("batch", ["4", "500"], ids=["under the lease", "one transaction each"])
def test_two_processes_ingesting_the_same_files_at_once_equal_one_ingest(
    namespaces: list[KnowledgeBase], runs: Path, neo4j_target: Neo4jTarget, batch: str
) -> None:
    """As above across processes (each its own driver and connections), through the CLI: ingests
    of several batches under the lease, and ingests of one batch, each one write transaction
    that takes its turn on the namespace's state node (ingest/one_transaction.py)."""
    once, twice = namespaces
    once.ingest([runs])
    env = neo4j_target.env(twice.namespace) | {"KBGRAPH_WRITE_BATCH_SIZE": batch}
    processes = [subprocess.Popen([sys.executable, "-m", "kbgraph.cli", "ingest", str(runs), "--json"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], [err[-2000:] for _, err in outputs]
    reports = sorted((IngestReport.model_validate_json(out) for out, _ in outputs), key=lambda r: r.experiences_new)
    # One of them wrote everything; the other waited for its turn and found every record ingested.
    assert reports[0].records_already_ingested == RUNS and reports[0].experiences_new == 0
    assert reports[1].records_already_ingested == 0
    assert canonical(twice) == canonical(once)


def test_an_ingest_waits_for_a_live_lease_and_takes_over_one_whose_holder_died(
    namespaces: list[KnowledgeBase], runs: Path
) -> None:
    kb = namespaces[0]
    # Another ingest took the lease and was killed -9 at once: no heartbeat, no release.
    now = datetime.now(UTC)
    assert kb.gateway.write("ingest_lease_acquire", kb=kb.namespace, owner="ingest-killed", now=now,
                            until=now + timedelta(seconds=2))[0]["acquired"]
    messages: list[str] = []
    started = time.monotonic()
    report = kb.ingest([runs], on_progress=lambda stage, done, total: messages.append(stage))
    waited = time.monotonic() - started
    assert report.records_read == RUNS and kb.count() > 0
    assert any("another ingest" in m for m in messages), messages[:3]
    assert waited >= 1.0  # it waited for the lease to lapse, not for ever
