"""One vector per distinct step text (kbgraph.store.step_texts, the StepText nodes the store writes):
steps saying the same share one vector, deletes leave no orphan and take no vector still said, a
namespace written before is converted on open, and searches find the same experiences."""

from __future__ import annotations

from typing import Any

import pytest

from kbgraph import KnowledgeBase
from kbgraph.core.ids import text_hash
from kbgraph.core.models import Experience, Step
from kbgraph.store.experiences import StepTextGone, step_text_key
from kbgraph.store.step_texts import migrate_step_texts
from kbgraph.store.writer import ExperienceWriter


def experience(n: int, *actions: str) -> Experience:
    return Experience(
        problem=f"Customer {n} wants to cancel order number {n}.", goal=f"Get done: task {n}", domain="retail",
        steps=[Step(action=a, text=f"{a} for the customer") for a in actions],
    )


def cypher(kb: KnowledgeBase, statement: str) -> list[Any]:
    return list(kb.driver.execute_query(statement, {"kb": kb.namespace}, database_=kb.gateway.database).records)


def counts(kb: KnowledgeBase) -> dict[str, Any]:
    row = cypher(kb, 
        "MATCH (s:Step {kb: $kb}) WITH count(s) AS steps, count(s.embedding) AS own "
        "OPTIONAL MATCH (v:StepText {kb: $kb}) WITH steps, own, collect(v) AS texts "
        "RETURN steps, own, size(texts) AS texts, "
        "size([v IN texts WHERE v.embedding IS NOT NULL]) AS with_vector, "
        "size([v IN texts WHERE NOT EXISTS { (v)<-[:SAYS]-() }]) AS orphans")[0]
    return row.data()


def test_steps_saying_the_same_share_one_vector(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(1, "find_user", "cancel_order"), experience(2, "find_user", "refund_order"),
                        experience(3, "find_user", "cancel_order")])
    assert counts(kb) == {"steps": 6, "own": 0, "texts": 3, "with_vector": 3, "orphans": 0}
    got = kb.get_many([experience(1, "find_user", "cancel_order").key])[0]
    expected = kb.embedder.embed(["find_user: find_user for the customer"])[0].tolist()
    assert got.steps[0].embedding == pytest.approx(expected, abs=1e-6)


def test_an_add_whose_texts_are_all_known_embeds_no_step(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(1, "find_user", "cancel_order")])
    later = experience(2, "cancel_order", "find_user")
    ExperienceWriter(kb.store, kb.embedder).embed_missing([later])
    assert [s.embedding for s in later.steps] == [None, None]
    kb.add_experiences([later])
    assert counts(kb) == {"steps": 4, "own": 0, "texts": 2, "with_vector": 2, "orphans": 0}


def test_a_vector_given_for_a_stored_text_yields_to_the_stored_one(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(1, "find_user")])
    other = experience(2, "find_user")
    other.steps[0].embedding = [1.0] + [0.0] * (kb.embedder.dimension - 1)
    kb.add_experiences([other])
    vectors = [e.steps[0].embedding for e in kb.get_many([experience(1, "find_user").key, other.key])]
    assert vectors[0] == vectors[1] and vectors[0] != other.steps[0].embedding


def test_deleting_keeps_the_vectors_still_said_and_leaves_no_orphan(kb: KnowledgeBase) -> None:
    first, second = experience(1, "find_user", "cancel_order"), experience(2, "find_user", "refund_order")
    kb.add_experiences([first, second])
    kb.store.delete([first.key])
    assert counts(kb) == {"steps": 2, "own": 0, "texts": 2, "with_vector": 2, "orphans": 0}
    assert kb.store.known_step_texts([step_text_key(s) for s in first.steps]) == {step_text_key(first.steps[0])}
    kb.store.delete([second.key])
    assert counts(kb) == {"steps": 0, "own": 0, "texts": 0, "with_vector": 0, "orphans": 0}


def test_a_text_deleted_between_the_read_of_known_texts_and_the_write_is_embedded_again(kb: KnowledgeBase) -> None:
    first = experience(1, "find_user")
    kb.add_experiences([first])
    later = experience(2, "find_user")
    writer = ExperienceWriter(kb.store, kb.embedder)
    writer.embed_missing([later])  # the text is known: no vector
    kb.store.delete([first.key])  # ... and deleted before the write
    with pytest.raises(StepTextGone):
        kb.store.write([later])
    assert counts(kb)["steps"] == 0  # the batch was rolled back whole
    kb.add_experiences([later])  # the writer's own path: refused, embedded, written again
    assert counts(kb) == {"steps": 1, "own": 0, "texts": 1, "with_vector": 1, "orphans": 0}


def test_a_merge_deletes_the_vectors_only_its_members_said(kb: KnowledgeBase) -> None:
    keep, gone = experience(1, "find_user", "cancel_order"), experience(2, "find_user", "refund_order")
    kb.add_experiences([keep, gone])
    kb.gateway.write("experience_merge", kb=kb.namespace, groups=[{
        "canonical": keep.key, "merged_ids": [gone.key], "source_ids": [], "failed_source_ids": [],
        "success_rate": 1.0}])
    assert counts(kb) == {"steps": 2, "own": 0, "texts": 2, "with_vector": 2, "orphans": 0}


def _as_written_before(kb: KnowledgeBase) -> None:
    """The namespace as a kbgraph of before wrote it: every step its own vector, no StepText."""
    cypher(kb, "MATCH (s:Step {kb: $kb})-[:SAYS]->(v:StepText) "
               "CALL db.create.setNodeVectorProperty(s, 'embedding', v.embedding) "
               "WITH DISTINCT v DETACH DELETE v")


def test_a_namespace_written_before_is_converted_and_searches_the_same(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n, "find_user", f"cancel_order_{n % 3}") for n in range(9)])
    def ranking() -> list[tuple[str, float]]:
        results = kb.search("cancel my order", steps_so_far=[{"action": "cancel_order_1", "text": "cancel"}], k=9)
        return [(h.id, round(h.score, 9)) for h in results.hits]

    before = ranking()
    _as_written_before(kb)
    assert counts(kb) == {"steps": 18, "own": 18, "texts": 0, "with_vector": 0, "orphans": 0}
    report = migrate_step_texts(kb.gateway, kb.namespace, page=5)
    assert (report.steps, report.disagreeing) == (18, 0)
    assert counts(kb) == {"steps": 18, "own": 0, "texts": 4, "with_vector": 4, "orphans": 0}
    assert migrate_step_texts(kb.gateway, kb.namespace).steps == 0  # idempotent
    assert ranking() == before


def test_the_text_key_is_the_sha256_of_what_is_embedded() -> None:
    assert step_text_key(Step(action="find_user", text="by zip")) == text_hash("find_user: by zip")
