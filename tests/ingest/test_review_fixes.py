"""Behaviours a review asked for: provenance-weighted success, private banks, crash safety between
an experience and its concepts, declared relations, EXHIBITS on later ingests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, FailureMode, Relation, Step, Trajectory
from kbgraph.ingest.abstract import RuleBasedAbstractor
from kbgraph.ingest.pipeline import IngestPipeline
from kbgraph.ingest.reflect import RuleBasedReflector

SAMPLES = Path(__file__).resolve().parents[2] / "kbgraph" / "samples"


def cancel(id: str, success: bool) -> dict[str, object]:
    return {"id": id, "domain": "retail", "task": "Cancel order #W1 please",
            "steps": [{"action": "cancel_pending_order", "arguments": {"order_id": "#W1"}}],
            "outcome": {"success": success}}


def write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_success_and_a_failure_of_one_workflow_stay_apart_and_their_workflow_counts_both(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    kb.ingest([write(tmp_path / "a.jsonl", [cancel("ok", True), cancel("ko", False)])])
    experiences = kb.get_many(list(kb.store.iter_ids()))
    concrete = sorted((e for e in experiences if e.kind == "concrete"), key=lambda e: e.success_rate)
    assert [(e.source_ids, e.failed_source_ids, e.success_rate) for e in concrete] == [
        (["ko"], ["ko"], 0.0), (["ok"], [], 1.0)]
    [workflow] = [e for e in experiences if e.kind == "abstract"]
    assert workflow.success_rate == 0.5  # the workflow worked in one of its two runs
    kb.ingest([write(tmp_path / "b.jsonl", [cancel("ok-2", True)])])  # a later run that worked joins the one that did
    experiences = kb.get_many(list(kb.store.iter_ids()))
    worked = next(e for e in experiences if e.kind == "concrete" and not e.failed_source_ids)
    assert sorted(worked.source_ids) == ["ok", "ok-2"] and worked.success_rate == 1.0
    [workflow] = [e for e in experiences if e.kind == "abstract"]
    assert abs(workflow.success_rate - 2 / 3) < 1e-6


def test_private_experiences_of_two_agents_stay_two(kb: KnowledgeBase) -> None:
    a = Experience(problem="p", scope="private", owner_agent="alice")
    b = Experience(problem="p", scope="private", owner_agent="bob")
    assert a.key != b.key != Experience(problem="p").key
    assert kb.add_experiences([a, b]).new == 2


def test_a_crash_between_an_experience_and_its_concepts_is_repaired_by_the_next_run(
    kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = SAMPLES / "trajectories.jsonl"
    # Batches of 10: the lease path, where experiences commit before their concepts (an input of
    # one batch is one transaction, ingest/one_transaction.py: a crash there commits nothing).
    kb.settings.write_batch_size = 10
    original = kb.gateway.write_all

    def crash_before_concepts(calls, verify=None):  # type: ignore[no-untyped-def]
        if any(name == "ingested_records_mark" for name, _ in calls):
            raise RuntimeError("killed")
        return original(calls, verify)

    monkeypatch.setattr(kb.gateway, "write_all", crash_before_concepts)
    with pytest.raises(RuntimeError):
        kb.ingest([path])
    assert kb.count() > 0 and kb.stats().nodes.get("Insight", 0) == 0  # experiences landed, concepts did not
    monkeypatch.setattr(kb.gateway, "write_all", original)
    kb.ingest([path])
    clean = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-clean", database=kb.gateway.database)
    try:
        clean.ingest([path])
        assert kb.stats().nodes == clean.stats().nodes
        assert kb.stats().relationships == clean.stats().relationships
        # The experiences the crashed run wrote count towards the maintenance checkpoints, and the
        # checkpoint they crossed runs maintenance once, as in the clean run (issue 35 item 6).
        assert growth_state(kb) == growth_state(clean)
        assert growth_state(clean)["maintenance_runs"] == 1
    finally:
        clean.clear()


def growth_state(kb: KnowledgeBase) -> dict[str, object]:
    row = kb.gateway.read("kb_state_get", kb=kb.namespace)[0]
    return {"added_total": row["added_total"], "maintenance_runs": row["maintenance_runs"],
            "last_maintenance_trigger": row["last_maintenance_trigger"]}


def test_an_ingest_crashed_after_some_batches_then_run_again_counts_its_growth_as_a_clean_one(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A crash after the third batch's marker commits (records 1–3 done, the rest never read):
    the re-run writes the rest, and the namespace's growth total and maintenance runs equal those
    of one clean ingest."""
    path = SAMPLES / "trajectories.jsonl"
    original = kb.gateway.write_all
    marked = 0

    def crash_after_three_batches(calls, verify=None):  # type: ignore[no-untyped-def]
        nonlocal marked
        if any(name == "ingested_records_mark" for name, _ in calls):
            marked += 1
            if marked > 3:
                raise RuntimeError("killed")
        return original(calls, verify)

    small = kb.settings.model_copy(update={"write_batch_size": 4})
    crashing = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, settings=small,
                             database=kb.gateway.database)
    monkeypatch.setattr(crashing.gateway, "write_all", crash_after_three_batches)
    with pytest.raises(RuntimeError):
        crashing.ingest([path])
    assert 0 < kb.count() and growth_state(kb)["maintenance_runs"] == 0  # the crash came before the check
    resumed = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, settings=small,
                            database=kb.gateway.database)
    report = resumed.ingest([path])
    assert report.records_already_ingested == 12
    clean = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-clean", settings=small,
                          database=kb.gateway.database)
    try:
        clean_report = clean.ingest([path])
        assert clean_report.maintenance_run is not None and report.maintenance_run is not None
        assert growth_state(resumed) == growth_state(clean)
        assert growth_state(clean)["added_total"] == clean_report.experiences_new
    finally:
        clean.clear()


def test_ready_made_provenance_does_not_hide_trajectories(kb: KnowledgeBase) -> None:
    kb.ingest([SAMPLES / "experiences.jsonl"])  # their source_ids name sample trajectory ids
    report = kb.ingest([SAMPLES / "trajectories.jsonl"])
    assert report.records_already_ingested == 0 and report.records_read == 36


def test_later_experiences_exhibit_the_meta_concepts_of_their_insights(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.ingest([write(tmp_path / "a.jsonl", [cancel("first", True)])])
    kb.ingest([write(tmp_path / "b.jsonl", [{**cancel("second", True), "task": "Please cancel my order #W2 now"}])])
    missing = kb.driver.execute_query(
        "MATCH (i:Insight {kb: $kb})-[:FROM]->(e:Experience), (i)-[:ABOUT]->(m:MetaConcept) "
        "WHERE NOT (e)-[:EXHIBITS]->(m) RETURN count(*) AS n", kb=kb.namespace, database_=kb.gateway.database,
    ).records[0]["n"]
    assert missing == 0


def test_an_inferred_relation_never_overwrites_a_declared_one(kb: KnowledgeBase) -> None:
    a, b = Experience(problem="first way"), Experience(problem="second way")
    kb.add_experiences([a, b.model_copy(update={"relations": [
        Relation(type="ALTERNATIVE", target_id=a.key, weight=0.3, reason="declared by a person")]})])  # type: ignore[arg-type]
    # b's id does not depend on its relations
    ns = kb.namespace
    kb.gateway.write("relation_upsert", kb=ns, rows=[{"source_id": b.key, "target_id": a.key, "type": "ALTERNATIVE",
                                                      "weight": 0.9, "reason": "inferred", "inferred": True}])
    kb.gateway.write("relations_inferred_delete", kb=ns)
    back = kb.get(b.key)
    assert back is not None and [(r.weight, r.reason) for r in back.relations] == [(0.3, "declared by a person")]


def test_reflection_on_a_run_without_steps_teaches_nothing_whatever_its_experience_holds() -> None:
    trajectory = Trajectory(id="t", task="x", steps=[])
    experience = Experience(problem="x", failure_modes=[FailureMode(description="it broke", step_order=None)],
                            steps=[Step(action="a")])
    assert RuleBasedReflector().reflect(trajectory, experience) == []


def test_pipeline_uses_the_write_batch_size(kb: KnowledgeBase) -> None:
    assert IngestPipeline(kb, RuleBasedAbstractor()).batch_size == kb.settings.write_batch_size
