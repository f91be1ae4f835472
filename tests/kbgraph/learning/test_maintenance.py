"""Maintenance: AutoRefine pruning (reversible), merging, growth checkpoints, dry runs (real Neo4j)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import neo4j
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.learning.feedback import FeedbackRecorder
from kbgraph.learning.maintenance import Maintainer
from kbgraph.core.models import Experience, Step
from kbgraph.core.settings import LearningSettings, Settings


def experience(n: int, action: str = "cancel_pending_order") -> Experience:
    topics = ["a kettle", "a lamp", "a desk", "a phone", "a bike", "a tent", "a camera", "a watch", "a sofa", "a rug"]
    return Experience(
        problem=f"Customer {n} wants help with {topics[n % len(topics)]} order number {n}.",
        goal=f"Get done: task {n}", domain="retail",
        steps=[Step(action="get_order_details"), Step(action=f"{action}_{n}")],
    )


def with_record(kb: KnowledgeBase, records: dict[str, tuple[int, int, int]]) -> None:
    """Gives experiences (retrieved, used, succeeded) through real feedback events."""
    for exp_id, (retrieved, used, succeeded) in records.items():
        for n in range(retrieved):
            kb.record_feedback(retrieved=[exp_id])
        for n in range(used):
            kb.record_feedback(used=[exp_id], outcome=n < succeeded)


def statuses(kb: KnowledgeBase) -> dict[str, str]:
    return {e.key: e.status for e in kb.get_many([e.key for e in [experience(n) for n in range(10)]])}


def test_prunes_the_bottom_fifth_of_judged_experiences_and_says_why(kb: KnowledgeBase) -> None:
    items = [experience(n) for n in range(10)]
    kb.add_experiences(items)
    # Eight with a record (retrieved ≥ 5): two were retrieved a lot and never helped.
    records = {items[0].key: (10, 0, 0), items[1].key: (8, 4, 0)}
    records |= {items[n].key: (6, 4, 3) for n in range(2, 8)}
    with_record(kb, records)
    report = kb.maintain()
    archived = [c for c in report.changes if c.action == "archive"]
    assert report.eligible_for_pruning == 8
    assert {c.id for c in archived} == {items[0].key}, "floor(8 · 20 %) = 1: the worst one"
    assert archived[0].score == 0.0 and "bottom 20%" in archived[0].reason and archived[0].retrieved == 10
    assert statuses(kb)[items[0].key] == "archived"
    assert items[0].key not in kb.search("Customer 0 wants help with a kettle order", k=10).ids()
    assert kb.get(items[0].key) is not None, "archived, not deleted"


def test_nothing_is_pruned_while_no_experience_has_a_record(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(10)])
    report = kb.maintain()
    assert report.changes == [] and report.eligible_for_pruning == 0 and report.examined == 10


def test_a_store_where_everything_works_loses_nothing(kb: KnowledgeBase) -> None:
    items = [experience(n) for n in range(5)]
    kb.add_experiences(items)
    with_record(kb, {e.key: (5, 3, 3) for e in items})
    assert kb.maintain().changes == []


def test_dry_run_reports_exactly_what_the_real_run_changes(kb: KnowledgeBase) -> None:
    items = [experience(n) for n in range(10)]
    duplicate = Experience(problem=items[3].problem + " Please.", goal=items[3].goal, domain="retail",
                           steps=items[3].steps)
    kb.add_experiences([*items, duplicate])
    with_record(kb, {items[n].key: (5 + n, n % 3, min(n % 3, n % 2)) for n in range(10)})
    with_record(kb, {duplicate.key: (2, 1, 1)})
    before = {e.key: (e.status, e.retrieved, e.used) for e in kb.get_many([e.key for e in [*items, duplicate]])}

    dry = kb.maintain(dry_run=True)
    after_dry = {e.key: (e.status, e.retrieved, e.used) for e in kb.get_many([e.key for e in [*items, duplicate]])}
    assert after_dry == before, "a dry run changes nothing"
    assert dry.dry_run and dry.merged == 1 and dry.archived >= 1

    real = kb.maintain()
    assert [c.model_dump() for c in real.changes] == [c.model_dump() for c in dry.changes]
    merge = next(c for c in real.changes if c.action == "merge")
    survivor, gone = sorted([items[3].key, duplicate.key])
    assert (merge.id, merge.into) == (gone, survivor)
    assert kb.get(gone) is None
    merged = kb.get(survivor)
    assert merged is not None and (merged.retrieved, merged.used, merged.succeeded) == (5 + 3 + 2, 0 + 1, 0 + 1)
    for change in real.changes:
        if change.action == "archive":
            stored = kb.get(change.id)
            assert stored is not None and stored.status == "archived"


def test_pruning_by_utility_judges_the_utility_kb_reports_by_calendar_day(
    driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str
) -> None:
    settings = Settings(namespace=namespace, learning=LearningSettings(prune_utility_below=0.625))
    kb = KnowledgeBase(driver, embedder, namespace=namespace, settings=settings)
    try:
        yesterday_night, this_morning, ahead = items = [experience(n) for n in range(3)]
        kb.add_experiences(items)
        now = datetime(2026, 3, 10, 0, 30, tzinfo=UTC)
        # A success: quality 0.6 plus an impact of 0.05, 0.65 undecayed (a 30-day half-life).
        # Used late on the 8th: 25 hours ago, but two calendar days, as the search counts them:
        # 0.65·2^(−2/30) = 0.6206, below 0.625 (by the second it would be 0.6346, above).
        kb.record_feedback(used=[yesterday_night.key], outcome=True, at=datetime(2026, 3, 8, 23, 30, tzinfo=UTC))
        kb.record_feedback(used=[this_morning.key], outcome=True, at=now - timedelta(minutes=20))
        # A failure (0.4 − 0.05 = 0.35) stamped two days ahead of `now` (a clock skew): not decayed,
        # and not grown either.
        kb.record_feedback(used=[ahead.key], outcome=False, at=now + timedelta(days=2))

        report = kb.maintain(dry_run=True, now=now)

        reported = {s.id: s.utility for s in FeedbackRecorder(kb.gateway, namespace, settings.learning).counters(
            [e.key for e in items], now=now)}
        archived = {c.id: c for c in report.changes if c.action == "archive"}
        assert set(archived) == {yesterday_night.key, ahead.key}, "this morning's 0.65 stays"
        assert {i: c.utility for i, c in archived.items()} == {i: reported[i] for i in archived}
        assert reported[ahead.key] == 0.35 and reported[this_morning.key] == 0.65
        assert archived[yesterday_night.key].reason == "utility 0.621 below 0.625"
    finally:
        kb.clear()


def _merging_pair(kb: KnowledgeBase) -> tuple[str, str]:
    """Ten experiences and a near-duplicate of the fourth; returns (survivor, merged-away) ids."""
    items = [experience(n) for n in range(10)]
    duplicate = Experience(problem=items[3].problem + " Please.", goal=items[3].goal, domain="retail",
                           steps=items[3].steps)
    kb.add_experiences([*items, duplicate])
    survivor, gone = sorted([items[3].key, duplicate.key])
    return survivor, gone


def test_feedback_committed_after_the_plan_was_made_is_added_by_the_merge(kb: KnowledgeBase) -> None:
    survivor, gone = _merging_pair(kb)
    with_record(kb, {survivor: (3, 1, 1), gone: (2, 1, 0)})
    _, groups = kb.maintainer.plan(datetime.now(UTC), dry_run=False)
    assert [(g.canonical, g.merged_ids) for g in groups] == [(survivor, [gone])]
    # Agents keep reporting between the plan and the write: both nodes change.
    with_record(kb, {survivor: (4, 2, 2), gone: (5, 3, 3)})
    kb.gateway.write("experience_merge", kb=kb.namespace, groups=[g.as_row() for g in groups])
    merged = kb.get(survivor)
    assert merged is not None and kb.get(gone) is None
    assert (merged.retrieved, merged.used, merged.succeeded) == (3 + 2 + 4 + 5, 1 + 1 + 2 + 3, 1 + 0 + 2 + 3)


def test_feedback_naming_a_merged_away_id_lands_on_its_survivor(kb: KnowledgeBase) -> None:
    survivor, gone = _merging_pair(kb)
    assert kb.maintain().merged == 1
    report = kb.record_feedback(retrieved=[gone], used=[gone, survivor], outcome=True, step_rewards=[
        {"experience_id": gone, "order": 0, "reward": 1.0}])
    assert report.redirected == {gone: survivor}
    assert report.step_rewards == 0 and report.step_rewards_skipped == 1, "its steps went with it"
    # Two ids named, now one experience: it counts both, as the merge would have summed them.
    assert [(e.id, e.retrieved, e.used, e.succeeded) for e in report.experiences] == [(survivor, 1, 2, 2)]


def active_ids(kb: KnowledgeBase) -> set[str]:
    rows = kb.gateway.read("maintenance_candidates", kb=kb.namespace)
    return {row["id"] for row in rows}


def test_a_workflow_dissolved_by_merges_is_in_the_plan_archived_and_restorable(kb: KnowledgeBase) -> None:
    steps = [Step(action="get_order_details"), Step(action="cancel_pending_order")]
    pair = [Experience(problem="A customer wants to cancel a pending order for a lamp.", goal="Cancel the lamp order",
                       domain="retail", steps=steps),
            Experience(problem="The lamp I bought has not shipped yet and I no longer need it.",
                       goal="Stop that purchase", domain="retail", steps=steps)]
    kb.add_experiences(pair)
    kb.recluster()  # links: the two share a workflow, which becomes an abstract experience
    workflow = next(i for i in active_ids(kb) if i not in {e.key for e in pair})
    with_record(kb, {workflow: (3, 1, 1)})
    kb.settings.learning.merge_threshold = 0.55  # maintenance merges what ingest (0.85) kept apart

    before = active_ids(kb)
    dry = kb.maintain(dry_run=True)
    assert active_ids(kb) == before
    assert [(c.action, c.stage) for c in dry.changes] == [("merge", "merge"), ("archive", "relink")]
    assert dry.changes[1].id == workflow and "no longer be shared" in dry.changes[1].reason

    real = kb.maintain()
    assert [c.model_dump() for c in real.changes] == [c.model_dump() for c in dry.changes]
    assert active_ids(kb) == before - {c.id for c in real.changes if c.action in ("merge", "archive")}
    archived = kb.get(workflow)
    assert archived is not None and archived.status == "archived" and archived.retrieved == 3

    assert kb.restore(real.run_id) == [workflow]
    restored = kb.get(workflow)
    assert restored is not None and restored.status == "active" and (restored.retrieved, restored.used) == (3, 1)


def test_a_run_interrupted_before_its_relinking_is_finished_by_the_next_one(kb: KnowledgeBase) -> None:
    steps = [Step(action="get_order_details"), Step(action="cancel_pending_order")]
    kb.add_experiences([
        Experience(problem="A customer wants to cancel a pending order for a lamp.", goal="Cancel the lamp order",
                   domain="retail", steps=steps),
        Experience(problem="The lamp I bought has not shipped yet and I no longer need it.",
                   goal="Stop that purchase", domain="retail", steps=steps)])
    kb.recluster()
    kb.settings.learning.merge_threshold = 0.55
    # As if the process died after the merge transaction committed, before relinking.
    assert Maintainer(kb.gateway, kb.namespace, kb.settings.learning).run().merged == 1
    pending = kb.maintain(dry_run=True)
    assert [(c.action, c.stage) for c in pending.changes] == [("archive", "relink")]
    kb.maintain()
    assert kb.maintain(dry_run=True).changes == [], "nothing left to do"


def test_a_relinking_that_died_half_way_is_redone_by_the_next_run_even_with_nothing_else_to_do(
    kb: KnowledgeBase
) -> None:
    steps = [Step(action="get_order_details"), Step(action="cancel_pending_order")]
    kb.add_experiences([Experience(problem=f"A customer wants to cancel a pending order for {thing}.",
                                   goal=f"Cancel the {thing} order", domain="retail", steps=steps)
                        for thing in ("a lamp", "a lamp, please", "a desk")])
    kb.settings.learning.merge_threshold = 0.9

    def dies(run_id: str) -> None:  # as if Neo4j or the process died while relinking
        raise RuntimeError("killed")

    try:
        Maintainer(kb.gateway, kb.namespace, kb.settings.learning, relink=dies).run()
    except RuntimeError:
        pass
    plan = kb.maintain(dry_run=True)
    assert [(c.action, c.stage) for c in plan.changes if c.action == "relink"] == [("relink", "relink")]
    assert plan.merged == 0
    kb.maintain()
    assert not any(c.action == "relink" for c in kb.maintain(dry_run=True).changes), "finished"


def test_on_real_runs_the_dry_run_predicts_the_active_set_exactly(real_kb: KnowledgeBase) -> None:
    kb = real_kb
    kb.settings.learning.merge_threshold = 0.4  # far below ingest's 0.85: many merges
    judged = sorted(active_ids(kb))[:12]
    with_record(kb, {i: (8, 0, 0) for i in judged[:3]} | {i: (6, 3, 3) for i in judged[3:]})
    before = active_ids(kb)
    # One clock for the plan and the run: scores decay with time, and a loaded machine is slow.
    now = datetime.now(UTC)
    dry = kb.maintain(dry_run=True, now=now)
    assert dry.merged > 0 and any(c.stage == "relink" for c in dry.changes), "merges that reshape workflows"
    real = kb.maintain(now=now)
    assert [c.model_dump() for c in real.changes] == [c.model_dump() for c in dry.changes]
    gone = {c.id for c in real.changes if c.action in ("merge", "archive")}
    back = {c.id for c in real.changes if c.action in ("create", "restore")}
    assert active_ids(kb) == (before - gone) | back, "nothing changes that the plan does not list"
    assert kb.restore(real.run_id) == sorted(c.id for c in real.changes if c.action == "archive")


def test_restore_undoes_a_prune(kb: KnowledgeBase) -> None:
    items = [experience(n) for n in range(10)]
    kb.add_experiences(items)
    with_record(kb, {items[0].key: (9, 0, 0)} | {items[n].key: (5, 3, 3) for n in range(1, 10)})
    report = kb.maintain()
    pruned = [c.id for c in report.changes if c.action == "archive"]
    assert pruned == [items[0].key]
    before = kb.get(items[0].key)
    assert before is not None and before.status == "archived"

    assert kb.restore(report.run_id) == pruned
    after = kb.get(items[0].key)
    assert after is not None and after.status == "active"
    assert (after.retrieved, after.used, after.quality) == (before.retrieved, before.used, before.quality)
    assert items[0].key in kb.search(items[0].problem, k=3).ids()
    assert kb.restore(report.run_id) == [], "restoring twice changes nothing"


def test_restore_without_arguments_undoes_the_last_run_and_takes_ids(kb: KnowledgeBase) -> None:
    items = [experience(n) for n in range(10)]
    kb.add_experiences(items)
    with_record(kb, {items[0].key: (9, 0, 0)} | {items[n].key: (5, 3, 3) for n in range(1, 10)})
    kb.maintain()
    assert kb.restore() == [items[0].key]
    kb.maintain()
    assert kb.restore(ids=[items[0].key, items[5].key]) == [items[0].key], "only archived ones are restored"


def test_maintenance_runs_by_itself_at_exponentially_spaced_growth_points(
    driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str, tmp_path: Path
) -> None:
    settings = Settings(namespace=namespace, learning=LearningSettings(maintenance_first_checkpoint=4))
    kb = KnowledgeBase(driver, embedder, namespace=namespace, settings=settings)
    try:
        runs = []
        for n in range(17):
            kb.add_experiences([experience(n)], maintain=True)
            state = kb.gateway.read("kb_state_get", kb=namespace)[0]
            runs.append(state["maintenance_runs"])
        # Checkpoints 4, 8, 16: a run after the 4th, 8th and 16th new experience.
        assert [n + 1 for n in range(17) if runs[n] != (runs[n - 1] if n else 0)] == [4, 8, 16]
        assert state["last_maintenance_trigger"] == "growth checkpoint: 16 experiences added"
        kb.add_experiences([experience(0)], maintain=True)
        assert kb.gateway.read("kb_state_get", kb=namespace)[0]["added_total"] == 17, "re-adding is not growth"
    finally:
        kb.clear()


def test_ingesting_trajectories_counts_towards_the_checkpoints(kb: KnowledgeBase, tmp_path: Path) -> None:
    from importlib import resources

    with resources.as_file(resources.files("kbgraph") / "samples" / "trajectories.jsonl") as path:
        report = kb.ingest([path])
    assert report.experiences_new >= 10 and report.maintenance_run is not None
    state = kb.gateway.read("kb_state_get", kb=kb.namespace)[0]
    assert state["added_total"] == report.experiences_new and state["maintenance_runs"] == 1


def test_maintenance_against_a_dead_server_raises_kbgraphs_error(embedder: CachedEmbedder) -> None:
    from kbgraph.core.errors import Neo4jUnavailableError
    from kbgraph.core.processes import free_port

    # Nothing listens on the port: what a server killed mid-session looks like to the driver.
    with neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{free_port()}", auth=("neo4j", "x"),
                                    max_transaction_retry_time=1, connection_timeout=2) as dead:
        kb = KnowledgeBase(dead, embedder, namespace="dead", ensure_schema=False)
        with pytest.raises(Neo4jUnavailableError, match=r"lost Neo4j during \w+ \(ServiceUnavailable"):
            kb.maintain()
