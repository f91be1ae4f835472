"""Stages 4–5 on the graph: deduplicate concepts into meta-concepts, then integrate documents.

Incremental (after every ingest): insights not yet attached to a meta-concept are gathered; their
concepts attach to the nearest existing meta-concept when close enough, the rest are clustered
among themselves (UMAP + HDBSCAN, or the small-input fallback) into new meta-concepts; every
touched document takes the new insights. Full (``recluster``): every meta-concept is dropped and
rebuilt from all concepts and insights. Either way the result is computed first and written in
ONE transaction, so an interrupted run leaves the previous state and a re-run redoes it whole.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
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
from kbgraph.ingest.integrate import DocumentRewriter, sentence_key, update_document
from kbgraph.core.models import ConceptDocument

Vectors = npt.NDArray[np.float32]


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


def _document_of(row: dict[str, Any] | None) -> ConceptDocument:
    if row is None:
        return ConceptDocument()
    return ConceptDocument(**{k: list(row.get(k) or []) for k in ("when_to_use", "why", "how", "pitfalls")})


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
        new_insights: dict[str, list[str]] = defaultdict(list)  # concept id → insight texts
        for row in rows:
            concept = concepts.get(row["concept_id"])
            if concept is None:
                concept = _Concept(row["concept_id"], row["label"], np.asarray(row["embedding"], dtype=np.float32),
                                   meta_id=row["meta_id"])
                concepts[concept.id] = concept
            concept.insights.append(row["text"])
            concept.actions += [a for a in row["actions"] or [] if a not in concept.actions]
            new_insights[concept.id].append(row["text"])
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
                # A concept never attaches to a meta-concept of another operation (ingest/operations.py).
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

        # Documents: every meta-concept that receives insights in this run.
        by_meta: dict[str, list[str]] = defaultdict(list)
        joined: dict[str, int] = defaultdict(int)  # concepts newly assigned to each meta-concept
        for concept in concepts.values():
            assert concept.meta_id is not None
            by_meta[concept.meta_id] += new_insights[concept.id]
            if concept.id in newly_assigned:
                joined[concept.meta_id] += 1
        evidence = self._evidence(sorted(concepts), sorted(by_meta))
        upserts: list[dict[str, Any]] = []
        for meta_id in sorted(by_meta):
            existing = metas.get(meta_id)
            fresh = new_metas.get(meta_id)
            name = existing["name"] if existing else fresh["name"] if fresh else meta_id
            before = _document_of(existing)
            document, changed = update_document(before, by_meta[meta_id], embed=self.embedder.embed)
            if changed and self.document_writer is not None:
                # The writer folds in only what survived deduplication; the update afterwards
                # enforces the section caps and drops any sentence the model repeated.
                known = {line for section in before.model_dump().values() for line in section}
                surviving = [line for section in document.model_dump().values() for line in section
                             if line not in known]
                document, _ = update_document(self.document_writer.rewrite(name, before, surviving), [])
            rendered = document.render(evidence)
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
                "id": meta_id, "name": name, "embedding": embedding.tolist(), "version": version, "size": size,
                "document": rendered, **document.model_dump(),
            })
        result.meta_concepts_new = len(new_metas)
        result.meta_concept_ids = sorted(by_meta)
        links = [{"concept_id": c.id, "meta_id": c.meta_id} for c in sorted(concepts.values(), key=lambda c: c.id)]
        calls: list[tuple[str, dict[str, Any]]] = []
        if full:
            calls.append(("meta_concepts_delete", {"kb": self.namespace}))
        if upserts:
            calls.append(("meta_concept_upsert", {"kb": self.namespace, "rows": upserts}))
        calls.append(("meta_concept_link", {"kb": self.namespace, "rows": links}))
        self.gateway.write_all(calls)
        return result

    def _evidence(self, concept_ids: list[str], meta_ids: list[str]) -> Callable[[str], str]:
        """What backs each sentence of the documents being written: the runs and tasks its insights
        were learnt from, and how many of those runs then succeeded ("6 runs, 3 tasks, 2 succeeded";
        a sentence seen in one run says so too)."""
        runs: dict[str, set[str]] = defaultdict(set)
        tasks: dict[str, set[str]] = defaultdict(set)
        succeeded: dict[str, set[str]] = defaultdict(set)
        for row in self.gateway.read("insight_evidence", kb=self.namespace, concept_ids=concept_ids, meta_ids=meta_ids):
            key = sentence_key(row["text"])
            runs[key].update(row["runs"])
            tasks[key].update(row["tasks"])
            succeeded[key].update(row["succeeded"])

        def backing(sentence: str) -> str:
            key = sentence_key(sentence)
            n, t, s = len(runs.get(key, ())), len(tasks.get(key, ())), len(succeeded.get(key, ()))
            if not n:
                return ""
            text = f"{n} run{'s' if n != 1 else ''}, {t} task{'s' if t != 1 else ''}"
            return text if s == n else f"{text}, {s} succeeded"

        return backing

    def _cluster_vectors(self, concepts: list[_Concept]) -> Vectors:
        """Label embedding mixed with the embedding of what was learned about the concept, so
        paraphrased labels meet through shared context."""
        labels = np.stack([c.label_vector for c in concepts])
        contexts = self.embedder.embed([concept_context(c.insights[:5], c.actions) for c in concepts])
        return concept_vectors(labels, contexts)
