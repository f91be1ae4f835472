"""A namespace's state reduced to what must be equal between "done once, cleanly" and "done under
faults or concurrency": counts per label and relationship type, and every experience's content,
provenance, status and counters (timestamps and embeddings left out)."""

from __future__ import annotations

from typing import Any

from kbgraph.kb import KnowledgeBase


def canonical(kb: KnowledgeBase) -> dict[str, Any]:
    stats = kb.stats()
    ids = sorted(row["id"] for row in kb.gateway.read("experience_ids_page", kb=kb.namespace, after="", limit=10**6))
    experiences = {}
    for experience_id in ids:
        exp = kb.get(experience_id)
        assert exp is not None, experience_id
        experiences[experience_id] = {
            "problem": exp.problem, "goal": exp.goal, "kind": exp.kind, "status": exp.status,
            "source_ids": sorted(exp.source_ids), "failed_source_ids": sorted(exp.failed_source_ids),
            "retrieved": exp.retrieved, "used": exp.used, "succeeded": exp.succeeded,
            "quality": round(exp.quality, 9), "success_rate": round(exp.success_rate, 9),
            "steps": [(s.action, s.text) for s in exp.steps],
            "failure_modes": sorted((f.action or "", f.description) for f in exp.failure_modes),
        }
    return {"nodes": stats.nodes, "relationships": stats.relationships, "experiences": experiences}
