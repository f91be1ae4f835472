"""kb.add_trajectories: runs handed over in memory (models or dicts, as an agent loop has them) go
through the same pipeline, validation and idempotence as a file (real Neo4j, real MiniLM)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Trajectory


def run(i: int, success: bool = True) -> dict[str, Any]:
    return {"id": f"mem-{i}", "domain": "airline",
            "task": f"You want to cancel reservation number {i} and get a refund to the original payment.",
            "steps": [{"action": "get_reservation_details", "arguments": {"reservation_id": f"R{i:05d}"}},
                      {"action": "cancel_reservation", "arguments": {"reservation_id": f"R{i:05d}"},
                       "observation": '{"status": "cancelled"}'}],
            "outcome": {"success": success}}


def graph_counts(kb: KnowledgeBase) -> tuple[int, dict[str, int], dict[str, int]]:
    stats = kb.stats()
    return kb.count(), dict(stats.nodes), dict(stats.relationships)


def test_dicts_and_models_make_what_the_same_file_makes(kb: KnowledgeBase, tmp_path: Path) -> None:
    runs = [run(i, success=i != 2) for i in range(4)]
    report = kb.add_trajectories([runs[0], Trajectory.model_validate(runs[1]), *runs[2:]])
    assert report.records_read == 4 and report.records_rejected == 0
    from_memory = graph_counts(kb)
    assert sorted(s for e in kb.get_many([r["id"] for r in kb.gateway.read(
        "experience_ids_page", kb=kb.namespace, after="", limit=100)]) for s in e.source_ids) == [f"mem-{i}" for i in range(4)]

    kb.clear()
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    kb.ingest([path])
    assert graph_counts(kb) == from_memory


def test_the_same_runs_again_change_nothing_whether_given_as_dicts_or_models(kb: KnowledgeBase) -> None:
    kb.add_trajectories([run(0), run(1)])
    before = graph_counts(kb)
    again = kb.add_trajectories([Trajectory.model_validate(run(0)), run(1)])
    assert again.records_already_ingested == 2 and again.experiences_new == 0
    assert graph_counts(kb) == before


def test_a_bad_run_is_named_by_its_index_and_nothing_is_written(kb: KnowledgeBase) -> None:
    bad = run(1)
    bad["steps"][1]["action"] = ""
    with pytest.raises(InvalidInputError) as caught:
        kb.add_trajectories([run(0), bad])
    assert any(p.startswith("trajectories[1]: steps.1.action") for p in caught.value.problems), caught.value.problems
    assert kb.count() == 0


@pytest.mark.parametrize(("items", "named"), [
    ([{**run(0), "metadata": {"when": datetime(2026, 1, 1)}}], "trajectories[0]: not a JSON value"),
    ([{**run(0), "task": "\ud800 broken"}], "trajectories[0]: task: contains a lone surrogate"),
    (["not a run"], "trajectories[0]: expected a trajectory"),
    ([], "trajectories: empty list"),
])
def test_what_a_file_could_not_hold_is_refused_by_name(kb: KnowledgeBase, items: list[Any], named: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        kb.add_trajectories(items)
    assert any(p.startswith(named) for p in caught.value.problems), caught.value.problems
    assert kb.count() == 0


def test_skip_invalid_ingests_the_rest_and_lists_what_it_skipped(kb: KnowledgeBase) -> None:
    bad = {**run(1), "outcome": {"success": "maybe"}}
    report = kb.add_trajectories([run(0), bad], skip_invalid=True)
    assert report.records_rejected == 1 and report.rejected[0].startswith("trajectories[1]: outcome.success")
    assert kb.count() == 1


def test_a_call_retried_after_a_transient_error_leaves_the_run_on_the_same_way(kb: KnowledgeBase) -> None:
    # Run 1 met a "503 Service Unavailable" on its cancellation and retried it: it did what run 0
    # did, so it is stored with the same actions and operations, and both share one workflow.
    clean, retried = run(0), run(1)
    retried["steps"].insert(1, {"action": "cancel_reservation", "arguments": {"reservation_id": "R00001"},
                                "error": "503 Service Unavailable"})
    kb.add_trajectories([clean, retried])
    rows = kb.driver.execute_query(
        "MATCH (e:Experience {kb: $kb, kind: 'concrete'}) UNWIND e.source_ids AS run "
        "OPTIONAL MATCH (e)-[:ABSTRACTION]->(w:Experience) "
        "RETURN run, e.actions AS actions, e.operations AS operations, e.shape AS shape, w.id AS workflow",
        kb=kb.namespace, database_=kb.gateway.database).records
    by_run = {r["run"]: r for r in rows}
    assert set(by_run) == {"mem-0", "mem-1"}
    for field in ("actions", "operations", "shape", "workflow"):
        assert by_run["mem-0"][field] == by_run["mem-1"][field], field
    assert by_run["mem-1"]["actions"] == ["get_reservation_details", "cancel_reservation"]
    # The failure is still remembered, for the teacher.
    failures = kb.driver.execute_query(
        "MATCH (e:Experience {kb: $kb})-[:HAS_FAILURE]->(f) RETURN collect(DISTINCT f.action) AS actions",
        kb=kb.namespace, database_=kb.gateway.database).records[0]["actions"]
    assert failures == ["cancel_reservation"]
