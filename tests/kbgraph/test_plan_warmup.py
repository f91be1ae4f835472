"""The plan warm-up runs kbgraph's statements in a namespace of its own and leaves nothing behind:
no node of its namespace, nothing changed in any other; it runs every statement an agent loop's
adds and searches of a large namespace run (so Neo4j has planned them); it deletes what a killed
warm-up left; a bulk ingest of ``warm_plans_after`` experiences or more ends with one; and a
warm-up that fails half-way still deletes its namespace."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import neo4j
import pytest

import kbgraph.store.gateway as gateway_module
import kbgraph.store.transaction as transaction_module
from kbgraph import AsyncKnowledgeBase
from kbgraph.core.models import Experience, Step
from kbgraph.core.settings import Settings
from kbgraph.embedders import CachedEmbedder, Embedder, WrappingEmbedder
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.plan_warmup import LEFTOVER_AFTER, PREFIX, leftover_namespaces, warm_plans, warmup_runs
from tests.conftest import REAL_RUNS, Neo4jTarget

STAMP = "%Y%m%dT%H%M%S"


def nodes_of(driver: neo4j.Driver, namespace_prefix: str) -> int:
    with driver.session() as session:
        return int(session.run("MATCH (n) WHERE n.kb STARTS WITH $p RETURN count(n) AS c", p=namespace_prefix).single()["c"])


def fingerprint(driver: neo4j.Driver, namespace: str) -> list[Any]:
    """Every node of ``namespace`` with its properties (vectors left out), in a fixed order."""
    with driver.session() as session:
        rows = session.run("MATCH (n) WHERE n.kb = $kb RETURN labels(n) AS l, properties(n) AS p", kb=namespace)
        return sorted(json.dumps([r["l"], {k: v for k, v in r["p"].items() if not k.endswith(("embedding", "_bytes"))}],
                                 sort_keys=True, default=str) for r in rows)


@contextmanager
def statements_run() -> Iterator[set[str]]:
    """The names of the statements run while the block runs (every thread, sessions and
    transactions alike): kbgraph's own ``run_named`` wrapped, the driver untouched."""
    names: set[str] = set()
    original = gateway_module.run_named

    def spied(runner: Any, name: str, params: dict[str, Any]) -> Any:
        names.add(name)
        return original(runner, name, params)

    gateway_module.run_named = spied  # type: ignore[assignment]
    transaction_module.run_named = spied  # type: ignore[assignment]
    try:
        yield names
    finally:
        gateway_module.run_named = original
        transaction_module.run_named = original


def test_leftovers_are_warm_ups_started_over_an_hour_ago() -> None:
    now = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
    old = f"{PREFIX}{(now - LEFTOVER_AFTER - timedelta(minutes=1)).strftime(STAMP)}-0a1b2c3d"
    recent = f"{PREFIX}{(now - timedelta(minutes=5)).strftime(STAMP)}-0a1b2c3d"
    names = [old, recent, "default", f"{PREFIX}not-a-date", "kbgraph-warmup"]
    assert leftover_namespaces(names, now) == [old]


def test_the_sample_runs_repeat_tasks_and_fail_some() -> None:
    runs = warmup_runs()
    tasks = [r["task"] for r in runs]
    assert len(set(tasks)) < len(tasks), "no task repeats: nothing would merge"
    assert any(not r["outcome"]["success"] for r in runs), "no failed run: no failure records"


@pytest.mark.neo4j
def test_a_warm_up_leaves_nothing_and_changes_no_other_namespace(kb: KnowledgeBase, driver: neo4j.Driver) -> None:
    kb.add_experiences([Experience(problem="Cancel a pending order.", goal="Get done: cancel", domain="retail",
                                   steps=[Step(action="cancel_pending_order", text="cancel the order")])])
    before = fingerprint(driver, kb.namespace)
    report = kb.warm_plans()
    assert report.namespace.startswith(PREFIX)
    assert report.added == len(warmup_runs()) + 1 and report.searches == 16
    assert nodes_of(driver, report.namespace) == 0
    assert fingerprint(driver, kb.namespace) == before


@pytest.mark.neo4j
def test_it_runs_every_statement_an_agent_loop_runs_in_a_large_namespace(
        driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str, neo4j_target: Neo4jTarget) -> None:
    """Neo4j plans a statement when it first runs it: a warm-up must run those of the adds and
    searches to come (the namespace searched as a large one is, through its indexes and then from
    what the process keeps)."""
    runs = [json.loads(line) for path in sorted(REAL_RUNS.glob("*.jsonl")) for line in path.read_text().splitlines()
            if line.strip()]
    knowledge_base = KnowledgeBase(driver, embedder, namespace=namespace, database=neo4j_target.database)
    large = knowledge_base.settings.model_copy(update={
        "search": knowledge_base.settings.search.merged({"scan.exact_scan_max": 0})})
    knowledge_base.settings = large
    try:
        for run in runs[:6]:  # the first add consolidates from scratch, the next ones incrementally
            knowledge_base.add_trajectories([run])
        failed = next(r for r in runs if not r["outcome"]["success"])
        steps = [{"action": s["action"], "arguments": s.get("arguments") or {}} for s in failed["steps"][:2]]
        with statements_run() as used:
            for run in runs[6:9]:
                knowledge_base.add_trajectories([run])
            for _ in range(2):
                knowledge_base.search(failed["task"], domain=failed["domain"])
                knowledge_base.search(failed["task"], domain=failed["domain"], steps_so_far=steps)
                knowledge_base.student.warm()
        with statements_run() as warmed:  # as a process of its own (kbgraph server start) warms
            warm_plans(Neo4jGateway(driver, neo4j_target.database), embedder, knowledge_base.settings)
        assert used - warmed == set()
    finally:
        knowledge_base.close()
        knowledge_base.clear()


@pytest.mark.neo4j
def test_it_deletes_what_a_killed_warm_up_left_and_no_recent_one(
        driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> None:
    now = datetime.now(UTC)
    old = f"{PREFIX}{(now - LEFTOVER_AFTER - timedelta(minutes=5)).strftime(STAMP)}-deadbeef"
    recent = f"{PREFIX}{now.strftime(STAMP)}-cafef00d"
    for name in (old, recent):
        with KnowledgeBase(driver, embedder, namespace=name, database=neo4j_target.database) as left:
            left.add_trajectories([warmup_runs()[0]])
    try:
        warming = KnowledgeBase(driver, embedder, database=neo4j_target.database, ensure_schema=False)
        report = warm_plans(warming.gateway, embedder, warming.settings)
        assert old in report.leftovers_deleted and recent not in report.leftovers_deleted
        assert nodes_of(driver, old) == 0 and nodes_of(driver, recent) > 0
    finally:
        for name in (old, recent):
            KnowledgeBase(driver, embedder, namespace=name, database=neo4j_target.database, ensure_schema=False).clear()


@pytest.mark.neo4j
def test_a_bulk_ingest_of_warm_plans_after_experiences_ends_with_a_warm_up(kb: KnowledgeBase, tmp_path: Path) -> None:
    runs = warmup_runs()
    file = tmp_path / "runs.jsonl"
    file.write_text("\n".join(json.dumps({**r, "id": f"{r['id']}-{n}"}) for n, r in enumerate(runs)) + "\n")
    kb.settings = kb.settings.model_copy(update={"warm_plans_after": 1, "write_batch_size": 2})
    report = kb.ingest([file])
    assert report.experiences_new >= 1 and report.plans_warmed_s is not None and report.plans_warmed_s > 0
    kb.settings = kb.settings.model_copy(update={"warm_plans_after": 0})
    file.write_text("\n".join(json.dumps({**r, "id": f"{r['id']}-again"}) for r in runs) + "\n")
    assert kb.ingest([file]).plans_warmed_s is None


class FailingAfter(WrappingEmbedder):
    """The real embedder until ``calls`` calls have been made; then every call fails."""

    def __init__(self, inner: Embedder, calls: int):
        super().__init__(inner)
        self.calls = calls

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls -= 1
        if self.calls < 0:
            raise RuntimeError("the embedder failed")
        return self.inner.embed(texts)


@pytest.mark.neo4j
def test_a_warm_up_that_fails_half_way_still_deletes_its_namespace(
        driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> None:
    warming = KnowledgeBase(driver, embedder, database=neo4j_target.database, ensure_schema=False)
    namespace = f"{PREFIX}{datetime.now(UTC).strftime(STAMP)}-{uuid.uuid4().hex[:8]}"
    with pytest.raises(RuntimeError, match="the embedder failed"):
        warm_plans(warming.gateway, FailingAfter(embedder, 6), warming.settings, namespace=namespace)
    assert nodes_of(driver, namespace) == 0


@pytest.mark.neo4j
def test_an_asyncio_bulk_ingest_warms_through_its_own_gateway(
        neo4j_target: Neo4jTarget, embedder: CachedEmbedder, namespace: str, driver: neo4j.Driver, tmp_path: Path) -> None:
    """AsyncKnowledgeBase runs the façade's ingest over the AsyncDriver: the warm-up goes through
    that knowledge base's gateway, not a synchronous one of its own."""
    file = tmp_path / "runs.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in warmup_runs()))

    async def ingest() -> IngestReport:
        async_driver = neo4j.AsyncGraphDatabase.driver(neo4j_target.uri, auth=(neo4j_target.username, neo4j_target.password),
                                                       notifications_disabled_classifications=["UNRECOGNIZED"])
        settings = Settings(namespace=namespace, neo4j_database=neo4j_target.database, warm_plans_after=1, write_batch_size=2)
        kb = await AsyncKnowledgeBase.connect(async_driver, embedder, namespace=namespace, database=neo4j_target.database,
                                              settings=settings, owns_driver=True)
        try:
            return await kb.ingest([file])
        finally:
            await kb.clear()
            await kb.close()

    report = asyncio.run(asyncio.wait_for(ingest(), 300))
    assert report.plans_warmed_s is not None and report.plans_warmed_s > 0
    assert nodes_of(driver, namespace) == 0
