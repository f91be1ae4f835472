"""``kbgraph audit`` on real namespaces (real Neo4j, real MiniLM): nothing to find in what kbgraph
builds from the real agent runs, the shared gold trajectories and the demo's samples; a document
someone changed against its evidence is found, and the command's exit status says so."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from importlib import resources
from itertools import islice
from pathlib import Path

from kbgraph.audit import audit_namespace
from kbgraph.ingest.integrate_evidence import EvidencedDocument
from kbgraph.kb import KnowledgeBase
from tests.cli_in_process import run_kbgraph
from tests.conftest import REAL_RUNS, SHARED_DATA, Neo4jTarget

#: Gold trajectories per shared file: the first lines of each (all 1,459 take minutes to ingest on
#: a shared machine; every file's kind of run — gold steps, a webarena intent without steps — is in
#: its first lines).
GOLD_SLICE = 30


def kbgraph_cli(kb: KnowledgeBase, target: Neo4jTarget, *args: str) -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` on ``kb``'s namespace in this process (tests/cli_in_process.py), with its MiniLM."""
    return run_kbgraph(target.env(kb.namespace), *args, embedder=kb.embedder)


def audited(kb: KnowledgeBase) -> list[str]:
    report = audit_namespace(kb.gateway, kb.namespace, kb.embedder.embed)
    assert report.documents > 0
    return [f"{f.where} {f.check}: {f.statement} ({f.evidence})" for f in report.findings]


def test_the_real_runs_pass_the_audit_and_the_command_exits_0(kb: KnowledgeBase, neo4j_target: Neo4jTarget) -> None:
    kb.ingest(sorted(REAL_RUNS.glob("*.jsonl")))
    assert audited(kb) == []
    done = kbgraph_cli(kb, neo4j_target, "audit", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["findings"] == [] and report["skills"] >= 3 and report["namespace"] == kb.namespace

    # Someone moves a rule that only failed runs showed under How: the audit finds it.
    row = next(r for r in kb.gateway.read("meta_concepts_all", kb=kb.namespace) if r["name"] == "cancel reservation")
    document = EvidencedDocument.from_json(row["statements"])
    failed_only = next(s for s in document.statements if not s.evidence.succeeded)
    moved = EvidencedDocument(tuple(s if s is not failed_only else replace(s, section="how")
                                    for s in document.statements), document.domain_runs)
    kb.gateway.write_all([("meta_concept_upsert", {"kb": kb.namespace, "rows": [{
        **{k: row[k] for k in ("id", "name", "embedding", "version", "size")}, "document": moved.render(),
        "statements": moved.statements_json(), **moved.sections().model_dump()}]})])
    done = kbgraph_cli(kb, neo4j_target, "audit")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "document “cancel reservation” — how-from-failed-runs" in done.stdout
    assert f"statement: {failed_only.text}" in done.stdout and "evidence: 1 runs, 1 tasks, 0 succeeded" in done.stdout


def test_the_shared_gold_trajectories_pass_the_audit(kb: KnowledgeBase) -> None:
    files = sorted((SHARED_DATA / "trajectories").glob("*.jsonl"))
    assert len(files) >= 4
    for path in files:
        with path.open(encoding="utf-8") as lines:
            kb.add_trajectories([json.loads(line) for line in islice(lines, GOLD_SLICE)])
    assert audited(kb) == []


def test_the_demo_samples_pass_the_audit(kb: KnowledgeBase) -> None:
    samples = resources.files("kbgraph") / "samples"
    kb.ingest([Path(str(samples / name)) for name in ("trajectories.jsonl", "experiences.jsonl", "real_runs.jsonl")])
    assert audited(kb) == []
    send = next(r for r in kb.gateway.read("meta_concepts_all", kb=kb.namespace) if r["name"] == "send confirmation")
    assert "## In airline (" in send["document"] and "## In banking (" in send["document"]


def test_the_command_refuses_a_bad_threshold_in_one_line(kb: KnowledgeBase, neo4j_target: Neo4jTarget) -> None:
    done = kbgraph_cli(kb, neo4j_target, "audit", "--min-runs", "0")
    assert done.returncode == 2 and "min_runs" in done.stderr and "Traceback" not in done.stderr
