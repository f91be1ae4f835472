"""kbgraph through the routing scheme (``neo4j://``), as on a cluster or Aura: the managed server
answers routing requests as a one-member cluster, so the suite's ingest, search, feedback and
maintenance paths run through the driver's routing here (real Neo4j, real MiniLM)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import neo4j
import pytest

from kbgraph.store.connection import open_driver
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from tests.conftest import Neo4jTarget


def routing_uri(uri: str) -> str:
    parts = urlsplit(uri)
    secure = parts.scheme.endswith("+s") or parts.scheme.endswith("+ssc")
    return f"neo4j{parts.scheme[parts.scheme.index('+'):] if secure else ''}://{parts.netloc}"


@pytest.fixture
def routed_kb(neo4j_target: Neo4jTarget, embedder: CachedEmbedder, namespace: str) -> Iterator[KnowledgeBase]:
    driver = open_driver(routing_uri(neo4j_target.uri), (neo4j_target.username, neo4j_target.password),
                         neo4j_target.database)
    with driver, KnowledgeBase(driver, embedder, namespace=namespace, database=neo4j_target.database) as kb:
        try:
            yield kb
        finally:
            kb.clear()


def test_the_routing_scheme_is_what_the_driver_uses(routed_kb: KnowledgeBase) -> None:
    assert isinstance(routed_kb.driver, neo4j.Neo4jDriver)  # routing driver, not a direct one (BoltDriver)


def test_ingest_search_feedback_and_maintenance_through_routing(routed_kb: KnowledgeBase, tmp_path: Path) -> None:
    runs = [{"id": f"route-{i}", "domain": "airline",
             "task": f"You want to cancel reservation {i} and get a refund to your card.",
             "steps": [{"action": "get_reservation_details", "arguments": {"reservation_id": f"R{i:05d}"}},
                       {"action": "cancel_reservation", "arguments": {"reservation_id": f"R{i:05d}"}}],
             "outcome": {"success": True}} for i in range(4)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs[:3]))
    report = routed_kb.ingest([path])
    assert report.records_read == 3
    routed_kb.add_trajectories([runs[3]])
    # Read right after the writes, through READ routing: every run is there.
    results = routed_kb.search("cancel my reservation and refund me", domain="airline", k=3)
    assert results.hits and results.hits[0].runs_succeeded >= 1
    sources = {s for row in routed_kb.gateway.read("experiences_for_linking", kb=routed_kb.namespace)
               for s in row["source_ids"]}
    assert {f"route-{i}" for i in range(4)} <= sources
    feedback = routed_kb.record_feedback(retrieved=results.ids(), used=results.ids()[:1], outcome=1.0)
    assert feedback.retrieved == len(results.ids())
    assert routed_kb.get(results.ids()[0]).retrieved >= 1  # type: ignore[union-attr]
    plan = routed_kb.maintain(dry_run=True)
    assert plan.dry_run


def test_a_write_is_known_to_the_reads_that_follow_it(routed_kb: KnowledgeBase) -> None:
    """Writes run in sessions that share execute_query's bookmark manager, so a read routed to
    another cluster member waits for them (causal consistency across calls and threads)."""
    manager = routed_kb.driver.execute_query_bookmark_manager
    before = set(manager.get_bookmarks())
    routed_kb.gateway.write("kb_state_growth", kb=routed_kb.namespace, added=0)
    after = set(manager.get_bookmarks())
    assert after and after != before
