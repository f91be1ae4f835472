"""Pass 2 for what changed, or from scratch (real Neo4j, real MiniLM, the real runs).

A KnowledgeBase remembers its namespace's link plan between ingests and the next ingest merges
and links only what was written since. Whatever else happens to the namespace meanwhile — an
experience added without an ingest, a delete, maintenance, a restore, another process — the graph
it ends with is the one a consolidation from scratch gives; and it starts from scratch itself
whenever it cannot know what changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.ingest.abstract import RuleBasedAbstractor
from kbgraph.ingest.link_state import LinkState, RememberedLinks
from kbgraph.ingest.pipeline import IngestPipeline
from kbgraph.kb import KnowledgeBase
from kbgraph.ingest.report import IngestReport
from kbgraph.core.models import Experience, Relation, Trajectory
from kbgraph.transfer import export_to, import_file
from tests.conftest import REAL_RUNS
from tests.ingest.test_incremental import relations


@pytest.fixture(scope="module")
def runs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (REAL_RUNS / "airline_gpt4o.jsonl").read_text().splitlines() if line.strip()]


def another_process(kb: KnowledgeBase) -> KnowledgeBase:
    """A second KnowledgeBase on the same namespace: it remembers nothing of it."""
    return KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, database=kb.gateway.database,
                         ensure_schema=False)


def experiences(kb: KnowledgeBase) -> dict[str, tuple[str, ...]]:
    rows = kb.gateway.read("experiences_link_facts", kb=kb.namespace)
    return {row["id"]: tuple(sorted(row["source_ids"] or ())) for row in rows}


def from_scratch(kb: KnowledgeBase) -> tuple[Any, Any]:
    """What a consolidation from scratch makes of the namespace as it is (in another process)."""
    report = IngestPipeline(another_process(kb)).consolidate()
    assert report.consolidated == "from scratch"
    return relations(kb), experiences(kb)


def reported_totals_are_the_namespace_s(report: IngestReport, kb: KnowledgeBase) -> None:
    stats = kb.stats().relationships
    assert report.relations == {kind: stats.get(kind, 0) for kind in report.relations}


def marked(kb: KnowledgeBase) -> int:
    return len(kb.gateway.read("kb_state_unlinked", kb=kb.namespace)[0]["marks"])


def test_an_ingest_after_an_ingest_links_only_what_it_added_and_leaves_no_mark(kb: KnowledgeBase, runs: list[dict[str, Any]]) -> None:
    first = kb.add_trajectories(runs[:40])
    assert first.consolidated == "from scratch" and marked(kb) == 0
    second = kb.add_trajectories(runs[40:60])
    assert second.consolidated == "incremental" and marked(kb) == 0
    assert second.experiences_merged > 0, "the second slice should merge runs into stored experiences"
    reported_totals_are_the_namespace_s(second, kb)  # kept up to date from what it wrote, not counted
    for start in range(60, 70, 2):
        reported_totals_are_the_namespace_s(kb.add_trajectories(runs[start:start + 2]), kb)
    ours = relations(kb), experiences(kb)
    assert from_scratch(kb) == ours


def test_experiences_added_without_an_ingest_are_merged_and_linked_by_the_next_one(kb: KnowledgeBase, runs: list[dict[str, Any]]) -> None:
    kb.add_trajectories(runs[:40])
    # Another process writes ready-made experiences (no consolidation): they stay marked.
    abstractor = RuleBasedAbstractor()
    written = another_process(kb).add_experiences(
        [abstractor.abstract(Trajectory.model_validate(run)) for run in runs[40:55]])
    assert written.new > 0 and marked(kb) == written.new
    report = kb.add_trajectories(runs[55:60])
    assert report.consolidated == "incremental" and marked(kb) == 0
    ours = relations(kb), experiences(kb)
    assert from_scratch(kb) == ours


def test_another_process_s_ingests_are_followed_from_the_facts_log_not_planned_from_scratch(
        kb: KnowledgeBase, runs: list[dict[str, Any]]) -> None:
    kb.add_trajectories(runs[:40])
    other = another_process(kb)
    other.add_trajectories(runs[40:50])  # its first: from scratch, and logged
    other.add_trajectories(runs[50:56])  # incremental, logged
    report = kb.add_trajectories(runs[56:62])
    assert (report.consolidated, report.consolidations_followed) == ("incremental", 2)
    reported_totals_are_the_namespace_s(report, kb)
    assert marked(kb) == 0
    ours = relations(kb), experiences(kb)
    assert from_scratch(kb) == ours


@pytest.mark.parametrize("change", ["delete", "restore after maintenance", "import", "a declared relation"])
def test_a_change_the_knowledge_base_did_not_make_sends_the_next_ingest_back_to_scratch(
        kb: KnowledgeBase, runs: list[dict[str, Any]], change: str, tmp_path: Path) -> None:
    kb.add_trajectories(runs[:40])
    if change == "import":
        elsewhere = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-b", database=kb.gateway.database)
        try:
            elsewhere.add_trajectories(runs[40:50])
            export_to(elsewhere.gateway, elsewhere.namespace, tmp_path / "b.jsonl")
        finally:
            elsewhere.clear()
        import_file(kb.gateway, kb.namespace, tmp_path / "b.jsonl")
    elif change == "a declared relation":
        first, second = sorted(experiences(kb))[:2]
        declared = Experience(problem="A way declared by hand", domain="airline",
                              relations=[Relation(type="ALTERNATIVE", target_id=first), Relation(type="COMPOSITION", target_id=second)])
        another_process(kb).add_experiences([declared])
    elif change == "delete":
        kb.delete([sorted(experiences(kb))[3]])
    else:  # restore after maintenance
        other = another_process(kb)
        victim = sorted(experiences(other))[5]
        other.gateway.write("maintenance_archive", kb=kb.namespace, rows=[{"id": victim, "reason": "test", "score": 0.0}],
                            run="test-run", now=neo4j.time.DateTime.now())
        other.restore(ids=[victim])
    report = kb.add_trajectories(runs[50:60])
    assert report.consolidated == "from scratch"
    reported_totals_are_the_namespace_s(report, kb)
    # ... and it remembers again from there.
    again = kb.add_trajectories(runs[60:64])
    assert again.consolidated == "incremental"
    reported_totals_are_the_namespace_s(again, kb)
    assert marked(kb) == 0
    ours = relations(kb), experiences(kb)
    assert from_scratch(kb) == ours


def test_maintenance_relinking_does_not_leave_an_unmerged_plan_behind(kb: KnowledgeBase, runs: list[dict[str, Any]]) -> None:
    kb.add_trajectories(runs[:40])
    kb._relink("maint-test")  # noqa: SLF001 - what maintenance runs after its merges: links, merges nothing
    assert kb.add_trajectories(runs[40:50]).consolidated == "from scratch"


def test_recluster_always_starts_from_scratch(kb: KnowledgeBase, runs: list[dict[str, Any]]) -> None:
    kb.add_trajectories(runs[:20])
    assert kb.recluster().consolidated == "from scratch"
    assert kb.add_trajectories(runs[20:30]).consolidated == "incremental"


def test_a_consolidation_that_fails_half_way_is_not_remembered(kb: KnowledgeBase, runs: list[dict[str, Any]],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    kb.add_trajectories(runs[:20])
    # Batches of 4: the lease path, whose consolidation commits apart from the records it links
    # (an input of one batch is one transaction: a failure there commits nothing at all).
    kb.settings.write_batch_size = 4
    original = kb.gateway.write_all

    def failing(calls: Any, verify: Any = None) -> Any:
        if any(name == "relation_upsert" for name, _ in calls):
            raise neo4j.exceptions.ServiceUnavailable("the server went away")
        return original(calls, verify)

    monkeypatch.setattr(kb.gateway, "write_all", failing)
    with pytest.raises(neo4j.exceptions.ServiceUnavailable):
        kb.add_trajectories(runs[20:30])
    monkeypatch.undo()
    assert marked(kb) > 0, "what the failed consolidation read stays marked"
    report = kb.add_trajectories(runs[30:40])
    assert report.consolidated == "from scratch" and marked(kb) == 0
    ours = relations(kb), experiences(kb)
    assert from_scratch(kb) == ours


def test_remembered_links_hand_back_their_state_once_and_only_for_their_version() -> None:
    remembered = RememberedLinks()
    state, totals = LinkState(), {"ABSTRACTION": 3}
    remembered.keep(state, "v1", totals)
    assert remembered.take("v2") is None
    assert remembered.take("v1") is None, "a mismatch forgets it"
    remembered.keep(state, "v1", totals)
    assert remembered.take(None) is None
    remembered.keep(state, "v1", totals)
    assert remembered.take("v1") == (state, totals)
    assert remembered.take("v1") is None, "taken, it is no longer remembered"


def test_clearing_the_namespace_forgets_it(kb: KnowledgeBase, runs: list[dict[str, Any]]) -> None:
    kb.add_trajectories(runs[:10])
    kb.clear()
    assert kb.add_trajectories(runs[10:20]).consolidated == "from scratch"


def run(run_id: str, task: str, *actions: str) -> dict[str, Any]:
    return {"id": run_id, "domain": "airline", "task": task, "outcome": {"success": True},
            "steps": [{"action": a, "arguments": {"reservation_id": "ABC123"}} for a in actions]}


def test_a_stored_experience_merged_away_takes_its_relations_out_of_the_totals(kb: KnowledgeBase) -> None:
    kb.add_trajectories([
        run("long", "Cancel my reservation ABC123, I cannot travel any more", "get_user_details",
            "get_reservation_details", "get_reservation_details", "cancel_reservation"),
        run("other", "My flight was moved by three days: refund me by cancelling the whole booking",
            "get_reservation_details", "cancel_reservation"),
    ])
    stored = {i for i, sources in experiences(kb).items() if sources}  # the runs' (not the workflow's)
    assert len(stored) == 2 and relations(kb), "two experiences of one workflow, related to its abstraction"
    # The same task done in fewer steps: the new run's experience is the canonical one, the stored
    # one is merged away, and its ABSTRACTION relation goes with it.
    report = kb.add_trajectories([run("short", "Cancel my reservation ABC123, I cannot travel any more",
                                      "get_reservation_details", "cancel_reservation")])
    assert report.consolidated == "incremental" and report.experiences_merged == 1
    assert not set(experiences(kb)) >= set(stored), "a stored experience should have been merged away"
    reported_totals_are_the_namespace_s(report, kb)
