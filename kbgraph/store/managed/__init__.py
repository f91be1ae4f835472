"""The locally managed Neo4j Community 5.26 server: kbgraph's embedded default."""

from kbgraph.store.managed.runtime import NEO4J_VERSION, ensure_runtime
from kbgraph.store.managed.server import ManagedNeo4j, ServerStatus

__all__ = ["NEO4J_VERSION", "ManagedNeo4j", "ServerStatus", "ensure_runtime"]
