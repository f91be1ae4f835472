"""Counts of one namespace (``kb.count()``, ``kb.stats()``, ``kbgraph stats``): experiences by
status, kind and domain, and every node label and relationship type, each a named query read
through the gateway.
"""

from __future__ import annotations

from pydantic import BaseModel

from kbgraph.store.gateway import Neo4jGateway

__all__ = ["KbStats", "experience_count", "namespace_stats"]


class KbStats(BaseModel):
    """Counts of one namespace."""

    namespace: str
    experiences: int
    nodes: dict[str, int]
    relationships: dict[str, int]
    experiences_by_status: dict[str, int]
    experiences_by_kind: dict[str, int]
    experiences_by_domain: dict[str, int]


def experience_count(gateway: Neo4jGateway, namespace: str) -> int:
    """Experiences in ``namespace`` (any status)."""
    return sum(row["count"] for row in gateway.read("stats_experiences", kb=namespace))


def namespace_stats(gateway: Neo4jGateway, namespace: str) -> KbStats:
    by_status: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    by_domain: dict[str, int] = {}
    for row in gateway.read("stats_experiences", kb=namespace):
        by_status[row["status"]] = by_status.get(row["status"], 0) + row["count"]
        by_kind[row["kind"]] = by_kind.get(row["kind"], 0) + row["count"]
        by_domain[row["domain"]] = by_domain.get(row["domain"], 0) + row["count"]
    return KbStats(
        namespace=namespace,
        experiences=sum(by_status.values()),
        nodes={r["label"]: r["count"] for r in gateway.read("stats_nodes", kb=namespace)},
        relationships={r["type"]: r["count"] for r in gateway.read("stats_relationships", kb=namespace)},
        experiences_by_status=by_status,
        experiences_by_kind=by_kind,
        experiences_by_domain=by_domain,
    )
