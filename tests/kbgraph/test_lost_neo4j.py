"""Every public method of KnowledgeBase and AsyncKnowledgeBase that talks to Neo4j raises kbgraph's
Neo4jUnavailableError, never the driver's ServiceUnavailable, when the server is gone (issue 35
item 9). The server here is a port nobody listens on: what a server killed with -9 looks like to
the driver (connection refused). Retries are off (retry_time_s 0) so each call fails on its first
attempt."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.async_kb import AsyncKnowledgeBase
from kbgraph.core.errors import Neo4jUnavailableError
from kbgraph.core.processes import free_port
from kbgraph.core.settings import Settings
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase

SAMPLES = Path(__file__).resolve().parents[2] / "kbgraph" / "samples"
STEP = {"action": "cancel_pending_order", "arguments": {"order_id": "#W1"}}
RUN = {"id": "lost-1", "domain": "retail", "task": "Cancel order #W1 please", "steps": [STEP],
       "outcome": {"success": True}}
EXPERIENCE = {"problem": "a customer wants an order cancelled", "goal": "the order is cancelled",
              "steps": [{"action": "cancel_pending_order", "text": "cancel it"}]}

#: Each public method that reaches Neo4j, with arguments it accepts (checked before any query).
CALLS: dict[str, Callable[[Path], tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "ability_matrix": lambda _: ((), {}),
    "add_experiences": lambda _: (([EXPERIENCE],), {}),
    "add_trajectories": lambda _: (([RUN],), {}),
    "add_verified": lambda _: (([EXPERIENCE], {"agent-a": True}), {}),
    "best_agents": lambda _: ((), {"domain": "retail"}),
    "clear": lambda _: ((), {}),
    "count": lambda _: ((), {}),
    "delete": lambda _: ((["some-id"],), {}),
    "export": lambda tmp: ((tmp / "out.jsonl",), {}),
    "export_skills": lambda tmp: ((tmp / "skills",), {}),
    "get": lambda _: (("some-id",), {}),
    "get_many": lambda _: ((["some-id"],), {}),
    "import_file": lambda tmp: ((export_file(tmp),), {}),
    "index_status": lambda _: ((), {}),
    "ingest": lambda _: (([SAMPLES / "trajectories.jsonl"],), {}),
    "learning_state": lambda _: ((["some-id"],), {}),
    "maintain": lambda _: ((), {}),
    "recluster": lambda _: ((), {}),
    "record_feedback": lambda _: ((), {"retrieved": ["some-id"], "used": ["some-id"], "outcome": True}),
    "refine": lambda _: (([{"action": "cancel_pending_order", "arguments": {}, "error": "not found"}],), {}),
    "restore": lambda _: ((), {}),
    "search": lambda _: (("cancel a pending order",), {}),
    "search_query": lambda _: (({"task": "cancel a pending order"},), {}),
    "search_steps": lambda _: (("cancel_pending_order",), {}),
    "stats": lambda _: ((), {}),
    "warm_plans": lambda _: ((), {}),
}
#: Public methods that need no server: building, closing, validating, embedding, a py2neo handle.
OFFLINE = {"close", "connect", "embed_missing", "from_settings", "py2neo_graph", "validate", "run", "run_ingesting"}


def export_file(folder: Path) -> Path:
    """The smallest export: a header and one experience node."""
    path = folder / "in.jsonl"
    header = {"record": "header", "format": "kbgraph-export", "version": 1, "namespace": "elsewhere",
              "embedding_dimension": 384, "counts": {"nodes": {"KbState": 1}, "relationships": {}}}
    node = {"record": "node", "label": "KbState", "key": None, "properties": {"added_total": 1}}
    path.write_text(json.dumps(header) + "\n" + json.dumps(node) + "\n", encoding="utf-8")
    return path


def public_methods(cls: type) -> set[str]:
    return {name for name, member in inspect.getmembers(cls)
            if not name.startswith("_") and callable(member) and not isinstance(inspect.getattr_static(cls, name), property)}


def dead_settings() -> Settings:
    return Settings(namespace="lost", retry_time_s=0, connect_timeout_s=5, query_timeout_s=30)


def test_the_table_names_every_public_method() -> None:
    for cls in (KnowledgeBase, AsyncKnowledgeBase):
        assert public_methods(cls) - OFFLINE <= set(CALLS), public_methods(cls) - OFFLINE - set(CALLS)


@pytest.mark.parametrize("method", sorted(CALLS))
def test_a_knowledge_base_whose_server_is_gone_raises_kbgraphs_error(
    method: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    with neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}", auth=("neo4j", "x"),
                                    max_transaction_retry_time=0, connection_timeout=5) as dead:
        kb = KnowledgeBase(dead, embedder, namespace="lost", settings=dead_settings(), ensure_schema=False)
        args, kwargs = CALLS[method](tmp_path)
        with pytest.raises(Neo4jUnavailableError, match=r"^lost Neo4j during .+ \(ServiceUnavailable: "):
            getattr(kb, method)(*args, **kwargs)


@pytest.mark.parametrize("method", sorted(public_methods(AsyncKnowledgeBase) - OFFLINE))
def test_an_async_knowledge_base_whose_server_is_gone_raises_kbgraphs_error(
    method: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    async def scenario() -> None:
        dead = neo4j.AsyncGraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}", auth=("neo4j", "x"),
                                               max_transaction_retry_time=0, connection_timeout=5)
        try:
            kb = await AsyncKnowledgeBase.connect(dead, embedder, namespace="lost", settings=dead_settings(),
                                                  ensure_schema=False)
            args, kwargs = CALLS[method](tmp_path)
            with pytest.raises(Neo4jUnavailableError, match=r"^lost Neo4j during .+ \(ServiceUnavailable: "):
                await getattr(kb, method)(*args, **kwargs)
        finally:
            await dead.close()

    asyncio.run(scenario())
