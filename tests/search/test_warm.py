"""A process can read what its searches keep of the namespace before the first of them
(``kb.student.warm()``, kbgraph.search.student.warm): its first search then reads no
whole-namespace rows and asks nothing its kept state answers, and ranks exactly as a process whose
kept state settled the usual way (in the background, after searches). A write afterwards is seen by
the next search as before. Real Neo4j, real MiniLM."""

from __future__ import annotations

import neo4j
import pytest

from kbgraph.core.models import Experience, Step
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase

from tests.search.test_student import record_reads
from tests.search.test_vector_model import experience, kept_current

LARGE = {"exact_scan_max": 0}  # every namespace counts as large: the kept path
LAMP = "I want to return the lamp and get my money back"
WHOLE_NAMESPACE_READS = {"search_experience_texts", "search_experience_vector_rows", "search_experience_fact_rows",
                         "search_step_text_rows", "search_experience_feedback_rows"}


def ranking(kb: KnowledgeBase, text: str, **query: object) -> list[tuple[str, float]]:
    hits = kb.search(text, k=5, weights=LARGE, **query).hits  # type: ignore[arg-type]
    return [(h.id, h.score) for h in hits]


def test_the_first_search_after_warm_reads_no_whole_namespace_rows_and_ranks_as_a_settled_process(
    kb: KnowledgeBase, searcher: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    parts = searcher.student.warm(LARGE)
    assert {"intent", "texts", "steps", "vectors", "facts", "feedback", "total"} <= set(parts)
    asked: list[str] = []
    record_reads(searcher, monkeypatch, asked)
    warmed = ranking(searcher, LAMP, domain="retail")
    with_steps = ranking(searcher, LAMP, domain="retail",
                         steps_so_far=[{"action": "get_order_details", "arguments": {"order_id": "#W1"}}])
    assert not WHOLE_NAMESPACE_READS & set(asked), asked
    assert "search_candidates_score" not in asked and "search_experience_vectors" not in asked, \
        "the kept vectors and facts answer"
    # One request reads the versions: the change feed's, which says nothing was written since.
    assert asked.count("search_workflow_operations") + asked.count("search_changes_since") == 1, asked

    kept_current(kb)  # the writer's process, settled the usual way
    assert ranking(kb, LAMP, domain="retail") == warmed
    assert ranking(kb, LAMP, domain="retail",
                   steps_so_far=[{"action": "get_order_details", "arguments": {"order_id": "#W1"}}]) == with_steps


def test_a_write_after_warm_is_seen_by_the_next_search(kb: KnowledgeBase, searcher: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(1, 12)])
    searcher.student.warm(LARGE)
    before = {exp_id for exp_id, _ in ranking(searcher, "Customer wants to return the garden hose", domain="retail")}
    hose = Experience(problem="Customer wants to return the garden hose bought last week.", goal="Refund the hose",
                      domain="retail", steps=[Step(action="get_order_details"), Step(action="return_delivered_order_items")])
    added = kb.add_experiences([hose]).ids[0]
    after = {exp_id for exp_id, _ in ranking(searcher, "Customer wants to return the garden hose", domain="retail")}
    assert added not in before and added in after


def test_warming_a_small_namespace_reads_its_intent_rows_and_texts_once_for_all_searches(
    kb: KnowledgeBase, driver: neo4j.Driver, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(1, 12)])
    fresh = KnowledgeBase(driver, embedder, namespace=kb.namespace, database=kb.gateway.database, ensure_schema=False)
    parts = fresh.student.warm()
    assert "intent" in parts and "texts" in parts and "vectors" not in parts, "a small namespace is scanned exactly"
    asked: list[str] = []
    record_reads(fresh, monkeypatch, asked)
    answers: list[bool] = []
    read = fresh.gateway.read

    def recording(name: str, **values: object) -> list[dict[str, object]]:
        rows = read(name, **values)
        if name in ("search_workflow_operations", "search_experience_texts"):
            answers.append(bool(rows[0]["unchanged"]))
        return rows

    monkeypatch.setattr(fresh.gateway, "read", recording)
    fresh.search(LAMP, domain="retail")
    fresh.search("My flight was cancelled, I want a refund", domain="airline")
    assert answers and all(answers), "every whole-namespace read answered unchanged"
