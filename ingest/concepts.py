"""Stages 4–5 on the graph: deduplicate concepts into meta-concepts, then integrate documents.

Incremental (after every ingest): insights not yet attached to a meta-concept are gathered; their
concepts attach to the nearest existing meta-concept when close enough, the rest are clustered
among themselves (UMAP + HDBSCAN, or the small-input fallback) into new meta-concepts; every
touched document is rebuilt from the evidence of all its insights (ingest/integrate_evidence.py). Full (``recluster``): every meta-concept is dropped and
rebuilt from all concepts and insights. Either way the result is computed first and written in
ONE transaction, so an interrupted run leaves the previous state and a re-run redoes it whole.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.embedders import Embedder, unit_rows
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.core.ids import content_hash, normalise_text
from kbgraph.ingest.dedupe import (
    DEFAULT_ATTACH_THRESHOLD,
    attach,
    cluster_concepts,
    concept_context,
    concept_vectors,
    representative,
)
from kbgraph.ingest.reflect_rules import verbs_named
from kbgraph.ingest.integrate_evidence import (
    DocumentRewriter,
    EvidencedDocument,
    InsightEvidence,
    Statement,
    build_document,
    evidence_rows,
)

Vectors = npt.NDArray[np.float32]


def operation_verbs(name: str) -> list[str]:
    """The state changes a meta-concept's operation makes, stored with it (``MetaConcept.verbs``) so
    that readers (the skills export) take them from there. Its name is the label of its representative
    concept, the operation its insights are about (:func:`~kbgraph.core.generalise.humanise_action`
    of an action on the rule path, a model's words on the LLM path, which keep no action): they are
    read from that label once, here, where the meta-concept is written."""
    return sorted(verbs_named(name))


@dataclass
class ConceptResult:
    concepts: int = 0
    insights: int = 0
    meta_concepts_new: int = 0
    documents_updated: int = 0
    meta_concept_ids: list[str] = field(default_factory=list)


@dataclass
class _Concept:
    id: str
    label: str
    label_vector: Vectors
    insights: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    meta_id: str | None = None


def meta_concept_id(label: str) -> str:
    return content_hash({"label": normalise_text(label).lower()}, "meta")


class ConceptStage:
    def __init__(
        self, gateway: Neo4jGateway, namespace: str, embedder: Embedder,
        document_writer: DocumentRewriter | None = None, attach_threshold: float | None = None,
        on_progress: Callable[[str], None] | None = None,
    ):
        self.gateway = gateway
        self.namespace = namespace
        self.embedder = embedder
        self.document_writer = document_writer
        self.attach_threshold = attach_threshold
        self.on_progress = on_progress

    def run(self, full: bool = False) -> ConceptResult:
        rows = self.gateway.read("insights_all" if full else "insights_pending", kb=self.namespace)
        result = ConceptResult()
        if not rows:
            return result
        concepts: dict[str, _Concept] = {}
        for row in rows:
            concept = concepts.get(row["concept_id"])
            if concept is None:
                concept = _Concept(row["concept_id"], row["label"], np.asarray(row["embedding"], dtype=np.float32),
                                   meta_id=row["meta_id"])
                concepts[concept.id] = concept
            concept.insights.append(row["text"])
            concept.actions += [a for a in row["actions"] or [] if a not in concept.actions]
        result.concepts, result.insights = len(concepts), len(rows)

        metas = {} if full else {m["id"]: m for m in self.gateway.read("meta_concepts_all", kb=self.namespace)}
        pending = sorted((c for c in concepts.values() if c.meta_id is None), key=lambda c: c.id)
        newly_assigned = {c.id for c in pending}
        new_metas: dict[str, dict[str, Any]] = {}
        if pending:
            vectors = self._cluster_vectors(pending)
            if metas:
                meta_ids = sorted(metas)
                threshold = DEFAULT_ATTACH_THRESHOLD if self.attach_threshold is None else self.attach_threshold
                # A concept never attaches to a meta-concept of another operation (kbgraph/core/operation_keys.py).
                nearest = attach(vectors, np.stack([np.asarray(metas[m]["embedding"], dtype=np.float32)
                                                    for m in meta_ids]), threshold,
                                 labels=[c.label for c in pending], meta_labels=[metas[m]["name"] for m in meta_ids])
                for concept, index in zip(pending, nearest, strict=True):
                    if index is not None:
                        concept.meta_id = meta_ids[index]
                keep = [i for i, c in enumerate(pending) if c.meta_id is None]
                pending, vectors = [pending[i] for i in keep], vectors[keep]
            if pending:
                labels = [c.label for c in pending]
                for group in cluster_concepts(vectors, labels):
                    name = labels[representative(group, labels, vectors)]
                    meta_id = meta_concept_id(name)
                    for i in group:
                        pending[i].meta_id = meta_id
                    if meta_id in metas:  # a cluster named like an existing meta-concept joins it
                        continue
                    centroid = unit_rows(vectors[group].mean(axis=0, keepdims=True))[0]
                    entry = new_metas.setdefault(meta_id, {"id": meta_id, "name": name, "vectors": [], "size": 0})
                    entry["vectors"].append(centroid)
                    entry["size"] += len(group)

        # Documents: every meta-concept that receives insights in this run, rebuilt from the
        # evidence of all its insights (ingest/integrate_evidence.py): where a statement stands
        # follows what backs it, and that changes as runs come in.
        joined: dict[str, int] = defaultdict(int)  # concepts newly assigned to each meta-concept
        for concept in concepts.values():
            assert concept.meta_id is not None
            if concept.id in newly_assigned:
                joined[concept.meta_id] += 1
        touched = sorted({c.meta_id for c in concepts.values() if c.meta_id is not None})
        evidence = self._evidence(concepts, touched)
        upserts: list[dict[str, Any]] = []
        for meta_id in touched:
            existing = metas.get(meta_id)
            fresh = new_metas.get(meta_id)
            name = existing["name"] if existing else fresh["name"] if fresh else meta_id
            before = EvidencedDocument.from_json(existing.get("statements") if existing else None)
            document = build_document(evidence.get(meta_id, []), embed=self.embedder.embed,
                                      reword=self._reworder(name, before))
            rendered = document.render()
            said = [(s.domain, s.section, s.text) for s in document.statements]
            changed = said != [(s.domain, s.section, s.text) for s in before.statements]
            if existing is not None and not changed and rendered == existing.get("document"):
                continue  # nothing new: the same sentences with the same evidence
            if existing is not None:
                embedding = np.asarray(existing["embedding"], dtype=np.float32)
                # The version counts changes of what the document says, not of its evidence.
                version = int(existing["version"] or 1) + (1 if changed else 0)
                size = int(existing["size"] or 0) + joined[meta_id]
            else:
                assert fresh is not None
                embedding = unit_rows(np.mean(fresh["vectors"], axis=0, keepdims=True))[0]
                version, size = 1, joined[meta_id]
            result.documents_updated += 1
            upserts.append({
                "id": meta_id, "name": name, "verbs": operation_verbs(name), "embedding": embedding.tolist(),
                "version": version, "size": size,
                "document": rendered, "statements": document.statements_json(), **document.sections().model_dump(),
            })
        result.meta_concepts_new = len(new_metas)
        result.meta_concept_ids = touched
        links = [{"concept_id": c.id, "meta_id": c.meta_id} for c in sorted(concepts.values(), key=lambda c: c.id)]
        calls: list[tuple[str, dict[str, Any]]] = []
        if full:
            calls.append(("meta_concepts_delete", {"kb": self.namespace}))
        if upserts:
            calls.append(("meta_concept_upsert", {"kb": self.namespace, "rows": upserts}))
        calls.append(("meta_concept_link", {"kb": self.namespace, "rows": links}))
        self.gateway.write_all(calls)
        return result

    def _evidence(self, concepts: dict[str, _Concept], meta_ids: list[str]) -> dict[str, list[InsightEvidence]]:
        """The insights of each meta-concept in ``meta_ids``, with what backs them per domain: those
        of the concepts read in this run (where they are assigned now) and those of the concepts
        the meta-concepts already hold."""
        by_meta: dict[str, list[InsightEvidence]] = defaultdict(list)
        rows = self.gateway.read("insight_evidence", kb=self.namespace, concept_ids=sorted(concepts), meta_ids=meta_ids)
        seen: set[tuple[str, str]] = set()
        for row in rows:
            concept = concepts.get(row["concept_id"])
            meta_id = concept.meta_id if concept is not None else row["meta_id"]
            if meta_id is None or (row["concept_id"], row["text"]) in seen:
                continue  # a concept read both ways is counted once
            seen.add((row["concept_id"], row["text"]))
            by_meta[meta_id] += evidence_rows(row)
        return by_meta

    def _reworder(self, name: str, before: EvidencedDocument) -> Callable[[list[Statement]], list[Statement]] | None:
        """With a document writer: the statements reworded, each only once — a statement that
        stands where it stood, for the same sentences, keeps the wording it was given then."""
        writer = self.document_writer
        if writer is None:
            return None
        known = {(s.domain, s.section, s.sources): s.text for s in before.statements}

        def reword(statements: list[Statement]) -> list[Statement]:
            new = [s for s in statements if (s.domain, s.section, s.sources) not in known]
            texts = dict(zip((id(s) for s in new), writer.reword(name, new), strict=True)) if new else {}
            return [replace(s, text=texts.get(id(s)) or known.get((s.domain, s.section, s.sources), s.text))
                    for s in statements]

        return reword

    def _cluster_vectors(self, concepts: list[_Concept]) -> Vectors:
        """Label embedding mixed with the embedding of what was learned about the concept, so
        paraphrased labels meet through shared context."""
        labels = np.stack([c.label_vector for c in concepts])
        contexts = self.embedder.embed([concept_context(c.insights[:5], c.actions) for c in concepts])
        return concept_vectors(labels, contexts)
