"""The concurrent benchmark: client threads mixing searches and runs added through one
KnowledgeBase (real Neo4j, real MiniLM). Behaviour only: no speed thresholds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import SecretStr

from kbgraph.bench.concurrent import load_runs, run_concurrent_benchmark
from kbgraph.bench.concurrent_processes import clients_per_process
from kbgraph.core.settings import Settings
from kbgraph.kb import KnowledgeBase
from tests.conftest import SHARED_DATA, Neo4jTarget
from tests.kbgraph.cli.test_cli import kbgraph

EVAL = SHARED_DATA / "eval"


def _runs(tmp_path: Path) -> Path:
    runs = [{"id": f"conc-{i}", "domain": "airline",
             "task": f"You want to cancel reservation {i} and get a refund to the original card.",
             "steps": [{"action": "get_reservation_details", "arguments": {"reservation_id": f"R{i:05d}"}},
                       {"action": "cancel_reservation", "arguments": {"reservation_id": f"R{i:05d}"}}],
             "outcome": {"success": i % 3 != 0}} for i in range(6)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return path


def test_clients_search_and_add_runs_at_once_and_each_run_added_is_stored(kb: KnowledgeBase, tmp_path: Path) -> None:
    path = _runs(tmp_path)
    kb.ingest([path])
    settled: list[float] = []

    def settle() -> float:  # called once, after the setup add and before any round
        settled.append(0.5)
        return 0.5

    report = run_concurrent_benchmark(kb, load_runs([path]), clients=(1, 3), seconds=3.0, write_share=0.3,
                                      queries=20, eval_dir=EVAL, settle=settle, warmup_seconds=2.0)
    assert settled == [0.5] and report["settled_before_rounds_s"] == 0.5
    assert [r["clients"] for r in report["rounds"]] == [1, 3], "the warm-up round is not among the rounds"
    warmup = report["warmup_round"]  # the most clients asked for, reported apart
    assert warmup["clients"] == 3 and warmup["operations"] > 0 and warmup["errors"] == {}
    for r in report["rounds"]:
        assert r["errors"] == {}, r["errors"]
        assert r["search"]["count"] > 0 and r["add_run"]["count"] > 0
        assert r["operations"] == r["search"]["count"] + r["add_run"]["count"]
        assert r["qps"] > 0 and r["search"]["p95"] >= r["search"]["p50"] > 0
        cpu = r["cpu_per_operation_ms"]  # the whole process's CPU over the round, per operation
        assert cpu["n"] == r["operations"] and cpu["client_ms"] > 0 and cpu["server_ms"] is None  # no pid given
    # Every run added under a fresh id (the warm-up round's too) is now in some experience's
    # provenance, and only those.
    added = sum(r["add_run"]["count"] for r in [*report["rounds"], warmup])
    sources = {s for row in kb.gateway.read("experiences_for_linking", kb=kb.namespace) for s in row["source_ids"]}
    assert len([s for s in sources if s.startswith("bench.")]) == added


def test_the_command_checks_its_arguments_before_connecting(neo4j_target: Neo4jTarget, tmp_path: Path) -> None:
    done = kbgraph(neo4j_target, "bench-args", "bench", "concurrent", "-c", "0", "--seconds", "0.5",
                   "--write-share", "2", "--corpus", str(tmp_path))
    assert done.returncode == 2, done.stderr
    for named in ("--clients 0", "--seconds 0.5", "--write-share 2.0", f"--corpus {tmp_path}"):
        assert named in done.stderr
    assert "Traceback" not in done.stderr


def test_clients_are_spread_over_processes_as_evenly_as_can_be() -> None:
    assert clients_per_process(8, 2) == [4, 4]
    assert clients_per_process(7, 3) == [3, 2, 2]
    assert clients_per_process(2, 4) == [1, 1]  # no process without a client
    with pytest.raises(ValueError):
        clients_per_process(0, 2)


def test_a_round_over_worker_processes_reports_what_every_process_did(
        kb: KnowledgeBase, neo4j_target: Neo4jTarget, tmp_path: Path) -> None:
    path = _runs(tmp_path)
    kb.ingest([path])
    # The workers connect as the settings say: to the test's server, whichever it is.
    settings = Settings(neo4j_uri=neo4j_target.uri, neo4j_username=neo4j_target.username,
                        neo4j_password=SecretStr(neo4j_target.password), neo4j_database=neo4j_target.database,
                        namespace=kb.namespace)
    spread = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, database=kb.gateway.database,
                           settings=settings, ensure_schema=False)
    try:
        report = run_concurrent_benchmark(spread, load_runs([path]), clients=(1, 3), seconds=3.0, write_share=0.3,
                                          queries=20, eval_dir=EVAL, processes=2)
    finally:
        spread.close()
    one, spread_round = report["rounds"]
    assert (one["clients"], one["processes"]) == (1, 1)
    assert (spread_round["clients"], spread_round["processes"]) == (3, 2)
    assert spread_round["errors"] == {}, spread_round["errors"]
    assert spread_round["search"]["count"] > 0 and spread_round["add_run"]["count"] > 0
    cpu = spread_round["cpu_per_operation_ms"]  # the workers' own CPU, not this process's
    assert cpu["n"] == spread_round["operations"] and cpu["client_ms"] > 0
    # Every run the workers added is stored (and their warm-up adds, one a worker).
    added = sum(r["add_run"]["count"] for r in report["rounds"])
    sources = {s for row in kb.gateway.read("experiences_for_linking", kb=kb.namespace) for s in row["source_ids"]}
    assert len([s for s in sources if s.startswith("bench.")]) == added
    assert len([s for s in sources if s.startswith("bench-warm.")]) == 2
