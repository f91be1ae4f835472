"""The meta-concept documents a large namespace's searches keep by the search version
(kbgraph.search.student.kept_concepts): ranked in the process as the scan ranks them, read again
only at a new version, which every write of a document or of who exhibits it gives. Real Neo4j,
real MiniLM, the bundled sample runs; the ranking is pure."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.student.kept_concepts import KeptConcepts, NamespaceConcepts, read_concepts
from tests.search.test_student import record_reads
from tests.search.test_vector_model import experience

QUERIES = ["a customer wants to return a damaged item and get a refund", "change the flight to a later date",
           "cancel my order", "update the shipping address of a pending order"]


@pytest.fixture
def sample_kb(kb: KnowledgeBase) -> Iterator[KnowledgeBase]:
    with resources.as_file(resources.files("kbgraph") / "samples" / "trajectories.jsonl") as path:
        kb.ingest([path])
    yield kb


def test_documents_rank_by_neo4j_s_cosine_score_best_first_ties_by_id() -> None:
    rows = [{"id": i, "name": i, "document": "", "concepts": 1, "experiences": 0, "embedding": e}
            for i, e in [("c", [1.0, 0.0]), ("a", [0.6, 0.8]), ("b", [1.0, 0.0])]]
    kept = NamespaceConcepts.of(rows)
    found = kept.nearest([2.0, 0.0], 3)
    assert [r["id"] for r in found] == ["b", "c", "a"], "equal vectors score equal: the id decides"
    assert found[0]["score"] == pytest.approx(1.0) and found[2]["score"] == pytest.approx((1 + 0.6) / 2)
    assert "embedding" not in found[0] and kept.nearest([1.0, 0.0], 0) == []
    assert NamespaceConcepts.of([]).nearest([1.0, 0.0], 3) == []


def test_what_is_kept_answers_only_at_the_version_it_was_read_at() -> None:
    kept = KeptConcepts()
    concepts = NamespaceConcepts.of([])
    kept.keep("v1", concepts)
    assert kept.get("v1") is concepts and kept.get("v2") is None and kept.get(None) is None
    kept.keep(None, NamespaceConcepts.of([]))  # a namespace without a version keeps nothing
    assert kept.get("v1") is concepts


def test_kept_documents_rank_as_the_scan_does(sample_kb: KnowledgeBase) -> None:
    version, kept = read_concepts(sample_kb.gateway, sample_kb.namespace)
    assert version is not None and kept.rows
    for text in QUERIES:
        vector = [float(x) for x in sample_kb.embedder.embed([text])[0]]
        scanned = sample_kb.gateway.read("search_meta_concepts_scan", kb=sample_kb.namespace, vector=vector, k=5)[0]["rows"]
        ranked = kept.nearest(vector, 5)
        assert [r["id"] for r in ranked] == [r["id"] for r in scanned]
        for mine, theirs in zip(ranked, scanned, strict=True):
            assert mine["score"] == pytest.approx(theirs["score"], abs=1e-6)
            assert {k: v for k, v in mine.items() if k != "score"} == {k: v for k, v in theirs.items() if k != "score"}


def test_every_write_of_a_document_or_of_who_exhibits_it_gives_a_new_search_version(sample_kb: KnowledgeBase) -> None:
    before = sample_kb.student.context.search_version()
    sample_kb.recluster()
    after = sample_kb.student.context.search_version()
    assert after != before, "a recluster rewrites the documents"
    version, kept = read_concepts(sample_kb.gateway, sample_kb.namespace)
    assert version == after and kept.rows
    sample_kb.gateway.write_all([("meta_concept_link", {"kb": sample_kb.namespace, "rows": []})])
    assert sample_kb.student.context.search_version() != after


def test_a_large_namespace_ranks_its_documents_from_what_it_keeps(sample_kb: KnowledgeBase,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Above exact_scan_max (its experiences) the search reads the version; its documents (fewer)
    # are ranked from what is kept at that version: read once, then not again until a write.
    sample_kb.add_experiences([experience(n) for n in range(30)])
    scanned = {text: sample_kb.search(text).concepts for text in QUERIES}
    large = {"exact_scan_max": len(read_concepts(sample_kb.gateway, sample_kb.namespace)[1].rows)}
    assert sample_kb.student.context.size.get(2000).experiences > large["exact_scan_max"]
    asked: list[str] = []
    record_reads(sample_kb, monkeypatch, asked)
    for text in QUERIES:
        assert sample_kb.search(text, weights=large).concepts == scanned[text]
    assert asked.count("search_meta_concepts_all") == 1 and "search_meta_concepts_scan" not in asked
    sample_kb.recluster()
    asked.clear()
    assert sample_kb.search(QUERIES[0], weights=large).concepts
    assert asked.count("search_meta_concepts_all") == 1, "a new version: read again"
