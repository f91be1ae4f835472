"""The add-one-run benchmark: incremental adds next to adds from scratch, in one process (real
Neo4j, real MiniLM, the real runs). Behaviour only: no speed thresholds."""

from __future__ import annotations

import json
from pathlib import Path

from kbgraph.bench.add import bench_one_namespace
from kbgraph.bench.concurrent import load_runs
from kbgraph.kb import KnowledgeBase
from tests.conftest import REAL_RUNS, Neo4jTarget
from tests.kbgraph.cli.test_cli import kbgraph


def test_each_path_adds_its_runs_the_way_it_says(real_kb: KnowledgeBase) -> None:
    before = real_kb.count()
    result = bench_one_namespace(real_kb, load_runs([REAL_RUNS / "airline_gpt4o.jsonl"]), count=2)
    assert result["experiences"] == before
    for path in ("incremental", "from_scratch"):  # an add that also ran maintenance is listed on its own
        assert result[path]["n"] + len(result[path]["with_maintenance_ms"]) == 2
        samples = result[path]["samples_ms"]  # every add's time, in order, maintenance or not
        assert len(samples) == 2 and all(ms > 0 for ms in samples)
    assert result["incremental"]["consolidated"] == ["incremental"]
    assert result["from_scratch"]["consolidated"] == ["from scratch"]
    for path in ("incremental", "from_scratch"):
        summary = result[path]
        assert summary["p95"] >= summary["p50"] > 0
        assert {"write", "merge", "link"} <= set(summary["stages_p50_ms"])
    # Five runs under fresh ids: each is in some experience's provenance now.
    sources = {s for row in real_kb.gateway.read("experiences_link_facts", kb=real_kb.namespace) for s in row["source_ids"]}
    assert sum(1 for s in sources if "-bench-add-" in s) == 5


def test_the_command_prints_both_paths_as_json(neo4j_target: Neo4jTarget, namespace: str) -> None:
    done = kbgraph(neo4j_target, namespace, "bench", "add", "--runs", "1", "--corpus", str(REAL_RUNS), "--json")
    try:
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        (only,) = report["namespaces"]
        assert only["namespace"] == namespace
        assert only["incremental"]["consolidated"] == ["incremental"]
        assert only["from_scratch"]["consolidated"] == ["from scratch"]
    finally:
        kbgraph(neo4j_target, namespace, "delete", "--all", "--yes")


def test_the_command_checks_its_arguments_before_connecting(neo4j_target: Neo4jTarget, tmp_path: Path) -> None:
    done = kbgraph(neo4j_target, "bench-args", "bench", "add", "--runs", "0", "--corpus", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    for named in ("--runs 0", f"--corpus {tmp_path}"):
        assert named in done.stderr, done.stderr
