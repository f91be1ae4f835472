"""AsyncKnowledgeBase: the same answers as KnowledgeBase, through the AsyncDriver, many calls at
once from one event loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import neo4j
import pytest

from kbgraph import AsyncKnowledgeBase
from kbgraph.store.aio import AsyncGateway, await_only, in_bridge, run_bridged
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.store.managed.server import free_port
from kbgraph.core.settings import Settings
from tests.conftest import Neo4jTarget
from tests.one_utc_day import on_one_utc_day

pytestmark = pytest.mark.neo4j

SAMPLES = Path(__file__).resolve().parents[2] / "kbgraph" / "samples" / "trajectories.jsonl"
T = TypeVar("T")


def _tasks() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(work, 300))


async def _open(target: Neo4jTarget, embedder: CachedEmbedder, namespace: str) -> AsyncKnowledgeBase:
    driver = neo4j.AsyncGraphDatabase.driver(target.uri, auth=(target.username, target.password),
                                             notifications_disabled_classifications=["UNRECOGNIZED"])
    return await AsyncKnowledgeBase.connect(driver, embedder, namespace=namespace, database=target.database,
                                            owns_driver=True)


def _queries() -> list[dict[str, Any]]:
    """50 searches: every sample task, task-only and with the first steps it took, and k varied."""
    queries: list[dict[str, Any]] = []
    tasks = _tasks()
    while len(queries) < 50:
        trajectory = tasks[len(queries) % len(tasks)]
        n = len(queries)
        steps = [{"action": s["action"], "arguments": s.get("arguments", {})} for s in trajectory["steps"][: n % 3]]
        queries.append({"task": trajectory["task"], "domain": trajectory.get("domain"), "steps_so_far": steps,
                        "k": 3 + n % 4})
    return queries


def test_fifty_concurrent_searches_from_one_loop_answer_as_the_sync_api(
    kb: KnowledgeBase, neo4j_target: Neo4jTarget, embedder: CachedEmbedder, namespace: str,
) -> None:
    kb.ingest([SAMPLES])
    queries = _queries()

    async def scenario() -> list[Any]:
        akb = await _open(neo4j_target, embedder, namespace)
        async with akb:
            return list(await asyncio.gather(*(akb.search(**q) for q in queries)))

    # Exactly: utility decays by calendar day, so searches a moment apart on one day weigh it the same.
    expected, answered = on_one_utc_day(lambda: ([kb.search(**q) for q in queries], _run(scenario())))
    assert [r.ids() for r in answered] == [r.ids() for r in expected]
    assert [[h.score for h in r.hits] for r in answered] == [[h.score for h in r.hits] for r in expected]
    assert all(r.hits for r in answered)


def test_writes_feedback_and_reads_through_the_async_api(
    kb: KnowledgeBase, neo4j_target: Neo4jTarget, embedder: CachedEmbedder, namespace: str,
) -> None:
    tasks = _tasks()

    async def scenario() -> tuple[Any, ...]:
        async with await _open(neo4j_target, embedder, namespace) as akb:
            # Two ingests and searches at once: the ingests take turns, the searches do not wait for them.
            first, second, _ = await asyncio.gather(
                akb.add_trajectories(tasks[:3]), akb.add_trajectories(tasks[3:]), akb.search(tasks[0]["task"]))
            results = await akb.search(tasks[0]["task"], domain=tasks[0].get("domain"), k=3)
            feedback = await akb.record_feedback(retrieved=results.ids(), used=results.ids()[:1], outcome=True,
                                                 task=tasks[0]["task"])
            return first, second, results, feedback, await akb.stats(), await akb.get(results.ids()[0]), await akb.count()

    first, second, results, feedback, stats, got, count = _run(scenario())
    assert first.records_read + second.records_read == len(tasks)
    assert stats.experiences == count == kb.count() > 0
    assert got is not None and got.id == results.ids()[0]
    assert kb.learning_state(results.ids()[:1])[0].used == 1
    assert feedback is not None
    assert kb.search(tasks[0]["task"], domain=tasks[0].get("domain"), k=3).ids() == results.ids()


def test_an_unreachable_server_fails_as_it_does_for_the_sync_api(embedder: CachedEmbedder, namespace: str) -> None:
    port = free_port()
    with neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{port}", auth=("neo4j", "x"),
                                    max_transaction_retry_time=0) as sync_driver:
        sync_kb = KnowledgeBase(sync_driver, embedder, namespace=namespace, ensure_schema=False)
        with pytest.raises(Exception) as sync_error:
            sync_kb.search("anything")

    async def scenario() -> None:
        driver = neo4j.AsyncGraphDatabase.driver(f"bolt://127.0.0.1:{port}", auth=("neo4j", "x"),
                                                 max_transaction_retry_time=0)
        akb = await AsyncKnowledgeBase.connect(driver, embedder, namespace=namespace, ensure_schema=False, owns_driver=True)
        async with akb:
            await akb.search("anything")

    with pytest.raises(type(sync_error.value)):
        _run(scenario())


def test_from_settings_connects_like_the_sync_api(neo4j_target: Neo4jTarget, namespace: str) -> None:
    settings = Settings(neo4j_uri=neo4j_target.uri, neo4j_username=neo4j_target.username,
                        neo4j_password=neo4j_target.password, neo4j_database=neo4j_target.database, namespace=namespace)

    async def scenario() -> tuple[str, int]:
        async with await AsyncKnowledgeBase.from_settings(settings, quiet=True) as akb:
            return akb.namespace, await akb.count()

    assert _run(scenario()) == (namespace, 0)


def test_the_bridge_awaits_inside_shared_code_and_refuses_outside_it() -> None:
    def shared(x: int) -> int:
        assert in_bridge()
        return await_only(asyncio.sleep(0, result=x)) + 1

    assert asyncio.run(run_bridged(shared, 41)) == 42
    with pytest.raises(RuntimeError, match="outside run_bridged"):
        await_only(asyncio.sleep(0))

    def failing() -> None:
        await_only(asyncio.sleep(0))
        raise ValueError("from shared code")

    with pytest.raises(ValueError, match="from shared code"):
        asyncio.run(run_bridged(failing))


def test_the_async_gateway_is_the_one_the_pipelines_use(neo4j_target: Neo4jTarget, embedder: CachedEmbedder,
                                                        namespace: str) -> None:
    async def scenario() -> bool:
        async with await _open(neo4j_target, embedder, namespace) as akb:
            return isinstance(akb._kb.gateway, AsyncGateway) and isinstance(akb._kb.store.gateway, AsyncGateway)

    assert _run(scenario())


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "async.md"


def test_the_example_of_the_async_page_runs(neo4j_target: Neo4jTarget, namespace: str, kb: KnowledgeBase,
                                            capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    (block,) = re.findall(r"```python\n(.*?)```", DOCS_PAGE.read_text(encoding="utf-8"), flags=re.S)
    # The page configures itself as a reader's program would: from the environment.
    for name, value in neo4j_target.env(namespace).items():
        monkeypatch.setenv(name, value)
    exec(compile(block, str(DOCS_PAGE), "exec"), {})  # noqa: S102 - the page's own example
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 4 and all("→ ['exp_" in line for line in printed[:3]) and printed[3] == "1"
    assert kb.learning_state(kb.search("cancel a pending order", domain="retail", k=1).ids())[0].used == 1
