"""The locally managed Neo4j Community server (5.26 LTS, or 2026.09 with ``neo4j_version``):
kbgraph's embedded default."""

from kbgraph.store.managed.lines import LINES, Neo4jLine
from kbgraph.store.managed.runtime import NEO4J_VERSION, ensure_runtime
from kbgraph.store.managed.server import ManagedNeo4j, ServerStatus

__all__ = ["LINES", "NEO4J_VERSION", "ManagedNeo4j", "Neo4jLine", "ServerStatus", "ensure_runtime"]
