"""Audits a namespace: every meta-concept document as stored, every skill as an export at
``min_runs`` would write it (what it would show, nothing rendered or written)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kbgraph.audit._documents import DocumentInput, audit_document
from kbgraph.audit._findings import AuditReport, Finding
from kbgraph.audit._skills import audit_skill
from kbgraph.ingest.integrate import SECTIONS, EmbedFn, sentence_key
from kbgraph.ingest.integrate_evidence import Evidence, EvidencedDocument, Statement
from kbgraph.skills.export import DEFAULT_MIN_RUNS, read_skills
from kbgraph.skills.shown import skill_shows
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["audit_namespace", "document_input"]


def document_input(row: Mapping[str, Any], insights: list[Mapping[str, Any]]) -> DocumentInput:
    """A stored meta-concept as the audit reads it; a document written before statements were kept
    is read as its sections' sentences, in no particular domain."""
    statements = EvidencedDocument.from_json(row.get("statements")).statements
    if not row.get("statements"):
        statements = tuple(Statement(section, "", text, Evidence(), (sentence_key(text),))
                           for section in SECTIONS for text in row.get(section) or [])
    return DocumentInput(str(row["name"]), statements, str(row.get("document") or ""), insights)


def audit_namespace(gateway: Neo4jGateway, namespace: str, embed: EmbedFn | None,
                    min_runs: int = DEFAULT_MIN_RUNS) -> AuditReport:
    metas = gateway.read("meta_concepts_all", kb=namespace)
    insights: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in gateway.read("insight_evidence", kb=namespace, concept_ids=[], meta_ids=[m["id"] for m in metas]):
        insights[str(row["meta_id"])].append(row)
    findings: list[Finding] = []
    by_meta: dict[str, list[Finding]] = {}
    for meta in metas:
        by_meta[str(meta["id"])] = audit_document(document_input(meta, insights[str(meta["id"])]), embed)
        findings += by_meta[str(meta["id"])]
    plan, given = read_skills(gateway, namespace, min_runs)
    for skill in plan.skills:
        mine = by_meta.get(skill.source_id, []) if skill.kind == "concept" else []
        findings += audit_skill(skill, skill_shows(skill, given.failures), mine)
    return AuditReport(namespace=namespace, documents=len(metas), skills=len(plan.skills), findings=findings)
