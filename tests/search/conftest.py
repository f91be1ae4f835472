"""Fixtures the search tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.store.connection import open_driver
from tests.conftest import Neo4jTarget


@pytest.fixture
def searcher(kb: KnowledgeBase, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> Iterator[KnowledgeBase]:
    """Another process's knowledge base on the writer's (``kb``'s) namespace: its own driver, its own caches."""
    driver = open_driver(neo4j_target.uri, (neo4j_target.username, neo4j_target.password), neo4j_target.database)
    other = KnowledgeBase(driver, embedder, namespace=kb.namespace, database=neo4j_target.database)
    yield other
    other.close()
    driver.close()
