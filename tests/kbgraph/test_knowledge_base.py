"""Writing, reading back and deleting experiences on a real Neo4j."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from kbgraph.bench.synthetic import synthetic_experiences
from kbgraph.core.errors import InvalidInputError
from kbgraph.ingest.failure_records import with_records
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, FailureMode, Relation, Step

EMBEDDINGS = ("pg_embedding", "structure_embedding", "context_embedding")


def assert_same_experience(written: Experience, read: Experience) -> None:
    """Field for field, every failure mode with its record (given, or made from what it gives:
    ingest/failure_records.py); embeddings within float32 tolerance (they are stored as float32)."""
    written = with_records(written)
    skip = {"steps": {"__all__": {"embedding"}}, "failure_modes": {"__all__": {"embedding"}},
            **{f: True for f in EMBEDDINGS}}
    assert read.model_dump(exclude=skip) == written.model_dump(exclude=skip)
    pairs: list[tuple[Any, Any]] = [(getattr(written, f), getattr(read, f)) for f in EMBEDDINGS]
    pairs += [(a.embedding, b.embedding) for a, b in zip(written.steps, read.steps, strict=True)]
    pairs += [(a.embedding, b.embedding) for a, b in zip(written.failure_modes, read.failure_modes, strict=True)]
    for a, b in pairs:
        assert a is not None and b is not None
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=1e-6, atol=1e-7)


def test_a_thousand_experiences_round_trip_and_rewriting_changes_no_count(kb: KnowledgeBase) -> None:
    experiences = synthetic_experiences(1000, steps=8, seed=1)
    report = kb.add_experiences(experiences)
    assert (report.new, report.existing) == (1000, 0)
    read = kb.get_many([e.key for e in experiences])
    assert len(read) == 1000
    for written, back in zip(experiences, read, strict=True):
        assert_same_experience(written, back)
    before = kb.stats()
    assert before.experiences == 1000 and before.nodes["Step"] == 8000
    assert before.relationships["NEXT"] == 7000 and before.relationships["HAS_STEP"] == 8000
    assert {"ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE"} <= set(before.relationships)

    again = kb.add_experiences(synthetic_experiences(1000, steps=8, seed=1))
    assert (again.new, again.existing) == (0, 1000)
    assert kb.stats() == before


def test_missing_embeddings_are_computed_with_the_real_model(kb: KnowledgeBase) -> None:
    exp = Experience(problem="Customer wants to send back a blender", goal="Refund issued", domain="retail",
                     steps=[Step(action="return_items", text="return {item_id}")],
                     failure_modes=[FailureMode(description="order not delivered yet", issue_type="wrong_state")])
    kb.add_experiences([exp])
    back = kb.get(exp.key)
    assert back is not None and back.pg_embedding is not None and len(back.pg_embedding) == 384
    assert math.isclose(float(np.linalg.norm(back.pg_embedding)), 1.0, rel_tol=1e-5)
    similar = kb.embedder.embed(["return a product to the shop"])[0]
    unrelated = kb.embedder.embed(["rebook a cancelled flight to Paris"])[0]
    vector = np.array(back.pg_embedding, dtype=np.float32)
    assert float(vector @ similar) > float(vector @ unrelated)


def test_rewriting_keeps_learning_state_and_accumulates_provenance(kb: KnowledgeBase) -> None:
    first = Experience(problem="p1", goal="g", quality=0.2, retrieved=3, source_ids=["t-1"])
    kb.add_experiences([first])
    kb.add_experiences([Experience(problem="p1", goal="g", quality=0.9, retrieved=0, source_ids=["t-2"])])
    back = kb.get(first.key)
    assert back is not None
    assert (back.quality, back.retrieved) == (0.2, 3)  # feedback owns these after creation
    assert back.source_ids == ["t-1", "t-2"]


def test_invalid_input_writes_nothing_and_names_every_problem(kb: KnowledgeBase) -> None:
    good = {"problem": "fine", "goal": "fine"}
    bad = [good, {"goal": "no problem"}, {"problem": "x", "pg_embedding": [0.1] * 12},
           {"problem": "y", "steps": [{"action": "a", "embedding": [float("nan")] * 384}]}]
    with pytest.raises(InvalidInputError) as caught:
        kb.add_experiences(bad)
    problems = caught.value.problems
    assert any(p.startswith("experiences[1]: problem:") for p in problems)
    assert any(p.startswith("experiences[2]: pg_embedding: has 12 values") for p in problems)
    assert any(p.startswith("experiences[3]: steps.0.embedding") for p in problems)
    assert kb.count() == 0


def test_a_relation_to_an_unknown_experience_is_rejected_before_writing(kb: KnowledgeBase) -> None:
    exp = Experience(problem="p", relations=[Relation(type="ALTERNATIVE", target_id="exp_nowhere")])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="relations.0.target_id: no experience 'exp_nowhere'"):
        kb.add_experiences([exp])
    assert kb.count() == 0


def test_relations_may_point_at_experiences_already_stored(kb: KnowledgeBase) -> None:
    target = Experience(problem="original approach")
    kb.add_experiences([target])
    other = Experience(problem="another approach",
                       relations=[Relation(type="ALTERNATIVE", target_id=target.key, weight=0.7, reason="same goal")])  # type: ignore[arg-type]
    kb.add_experiences([other])
    back = kb.get(other.key)
    assert back is not None and [(r.type.value, r.target_id, r.weight) for r in back.relations] == [
        ("ALTERNATIVE", target.key, 0.7)]


def test_delete_by_id_removes_steps_and_failures_too(kb: KnowledgeBase) -> None:
    experiences = synthetic_experiences(4, steps=3, seed=2)
    kb.add_experiences(experiences)
    assert kb.delete([experiences[0].key, "exp_unknown"]) == 1
    assert kb.get(experiences[0].key) is None
    stats = kb.stats()
    assert stats.experiences == 3 and stats.nodes["Step"] == 9


def test_namespaces_do_not_see_each_other(kb: KnowledgeBase) -> None:
    other = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-other", database=kb.gateway.database)
    try:
        exp = Experience(problem="shared content, two tenants")
        kb.add_experiences([exp])
        other.add_experiences([exp])
        assert kb.count() == 1 and other.count() == 1
        other.clear()
        assert other.count() == 0 and other.get(exp.key) is None
        assert kb.get(exp.key) is not None
    finally:
        other.clear()


def test_an_empty_namespace_reads_as_empty(kb: KnowledgeBase) -> None:
    assert kb.count() == 0 and kb.get("exp_missing") is None and kb.get_many([]) == []
    assert kb.stats().experiences == 0


def test_duplicates_in_one_call_pool_their_provenance(kb: KnowledgeBase) -> None:
    report = kb.add_experiences([Experience(problem="same", source_ids=["t-1"]),
                                 Experience(problem="same", source_ids=["t-2"])])
    assert report.new == 1 and report.received == 2
    back = kb.get(report.ids[0])
    assert back is not None and back.source_ids == ["t-1", "t-2"]


def test_a_wrapped_tool_call_is_stored_with_the_tool_it_called(kb: KnowledgeBase) -> None:
    """A run that reaches its tools through a wrapper is stored, and read back, with the tool each
    call reached: its operations, and so its workflow, are those tools'."""
    kb.add_trajectories([{
        "id": "bank-1", "domain": "banking", "task": "Close my debit card.", "outcome": {"success": True},
        "steps": [{"action": "call_discoverable_agent_tool",
                   "arguments": {"agent_tool_name": "close_debit_card_4721", "arguments": "{}"}}],
    }])
    [row] = kb.gateway.driver.execute_query(
        "MATCH (e:Experience {kb: $kb, kind: 'concrete'}) RETURN e.id AS id, e.operations AS operations",
        kb=kb.namespace, database_=kb.gateway.database).records
    assert row["operations"] == ["close_debit_card"]
    stored = kb.get(row["id"])
    assert stored is not None
    assert [(s.action, s.tool) for s in stored.steps] == [("call_discoverable_agent_tool", "close_debit_card")]
