"""``kb.stats()`` / ``kbgraph stats``: every kind of node kbgraph writes is counted, the items of
the LangGraph store included."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kbgraph.integrations.langgraph import KbgraphStore
from kbgraph.kb import KnowledgeBase
from kbgraph.transfer import NOT_EXPORTED
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget

CYPHER = Path(__file__).resolve().parents[3] / "cypher"


def test_every_label_with_a_key_constraint_is_counted_by_the_stats_query() -> None:
    constrained = set(re.findall(r"FOR \(n:(\w+)\)", (CYPHER / "schema" / "01_constraints.cypher").read_text()))
    counted = set(re.findall(r"MATCH \(n:(\w+) \{kb: \$kb\}\)", (CYPHER / "queries" / "stats_nodes.cypher").read_text()))
    assert {"StoreItem", "StoreVector", "Experience"} <= constrained
    # The feedback version's stripes are cache tokens, neither counted nor exported: the counts are
    # what an export carries (kbgraph.transfer.NOT_EXPORTED).
    assert constrained - counted - set(NOT_EXPORTED) == set(), "labels kbgraph writes that `kbgraph stats` would not count"
    assert not counted & set(NOT_EXPORTED)


def test_a_namespace_holding_only_langgraph_store_items_shows_them(kb: KnowledgeBase, neo4j_target: Neo4jTarget) -> None:
    store = KbgraphStore(kb, index={"dims": kb.embedder.dimension, "fields": ["text"]})
    store.put(("users", "u1"), "prefs", {"text": "likes green tea without sugar"})
    store.put(("users", "u2"), "prefs", {"text": "prefers window seats"})
    store.put(("users", "u2"), "plain", {"other": 1}, index=False)

    stats = kb.stats()
    assert stats.experiences == 0
    assert stats.nodes == {"StoreItem": 3, "StoreVector": 2}
    assert stats.relationships == {"HAS_VECTOR": 2}

    done = run_kbgraph(neo4j_target.env(kb.namespace), "stats", "--json", embedder=kb.embedder)  # in this process
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["nodes"] == {"StoreItem": 3, "StoreVector": 2}
