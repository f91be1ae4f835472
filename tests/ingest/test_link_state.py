"""The link plan kept up to date part by part is the plan built from scratch (real runs and shared
trajectories, abstracted by the rule-based abstractor and embedded by the real MiniLM; no Neo4j).

Whatever order experiences arrive, leave or merge in, ``LinkState`` ends with the relations and
workflows of ``LinkState(all of them)``, and the deltas it hands back, replayed, give exactly
those: that is what lets an ingest write only the delta."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.ingest.abstract import RuleBasedAbstractor
from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.store.vector_cache import unit_vector
from kbgraph.ingest.link_state import LinkDelta, LinkState, plan_links
from kbgraph.ingest.merge import MergeGroup, plan_merges
from kbgraph.ingest.read import read_records
from kbgraph.core.models import Trajectory
from tests.conftest import REAL_RUNS, SHARED_DATA

CORPORA = [REAL_RUNS / "airline_gpt4o.jsonl", SHARED_DATA / "trajectories" / "airline.jsonl",
           SHARED_DATA / "trajectories" / "banking.jsonl"]


@pytest.fixture(scope="module")
def unmerged(embedder: CachedEmbedder) -> list[ExperienceFacts]:
    """One fact per run, as pass 1 writes them (before any merge)."""
    abstractor = RuleBasedAbstractor()
    experiences = []
    for record in read_records([p for p in CORPORA if p.exists()] or pytest.fail("the shared data is missing")):
        assert isinstance(record.item, Trajectory), record.problems
        experiences.append(abstractor.abstract(record.item))
    vectors = embedder.embed([e.pg_text() for e in experiences])
    return [ExperienceFacts(
        id=e.key, kind=e.kind, domain=e.domain, actions=tuple(s.action for s in e.steps), pg=unit_vector(v),
        success_rate=e.success_rate, source=e.source, source_ids=tuple(e.source_ids),
        adapted_from=tuple(e.adapted_from), retrieved=0, used=0, succeeded=0, problem=e.problem, goal=e.goal,
        failed_source_ids=tuple(e.failed_source_ids)) for e, v in zip(experiences, vectors, strict=True)]


def merged(facts: dict[str, ExperienceFacts], groups: list[MergeGroup]) -> dict[str, ExperienceFacts]:
    """What experience_merge leaves: each group's survivor holds its provenance, the rest go."""
    facts = dict(facts)
    for group in groups:
        facts[group.canonical] = replace(facts[group.canonical], source_ids=tuple(group.source_ids),
                                         failed_source_ids=tuple(group.failed_source_ids),
                                         success_rate=group.success_rate)
        for gone in group.merged_ids:
            del facts[gone]
    return facts


@pytest.fixture(scope="module")
def stored(unmerged: list[ExperienceFacts]) -> list[ExperienceFacts]:
    """The namespace after one ingest of everything: merged, so no two experiences are duplicates."""
    facts = merged({f.id: f for f in unmerged}, plan_merges(unmerged))
    return sorted(facts.values(), key=lambda f: f.id)


def snapshot(state: LinkState) -> tuple[Any, Any]:
    abstracts = {a.key: a.model_dump(exclude={"created_at"}) for a in state.abstracts.values()}
    return dict(state.relations), abstracts


def test_the_corpus_exercises_every_relation_and_merges(unmerged: list[ExperienceFacts],
                                                        stored: list[ExperienceFacts]) -> None:
    plan = plan_links(stored)
    assert {r["type"] for r in plan.relations} == {"ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE"}
    assert len(plan.abstracts) >= 5
    assert len(stored) < len(unmerged) - 10, "too few merges for the merge checks below to mean much"


def test_the_state_does_not_depend_on_the_order_facts_came_in(stored: list[ExperienceFacts]) -> None:
    shuffled = list(stored)
    random.Random(7).shuffle(shuffled)
    assert snapshot(LinkState(shuffled)) == snapshot(LinkState(stored))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_adding_in_slices_ends_where_adding_everything_at_once_does(stored: list[ExperienceFacts], seed: int) -> None:
    order = list(stored)
    random.Random(seed).shuffle(order)
    state = LinkState()
    replayed: dict[tuple[str, str, str], Any] = {}
    workflows: set[str] = set()
    for start in range(0, len(order), 13):
        delta = state.update(removed=(), upserted=order[start:start + 13])
        replay(delta, replayed, workflows)
    assert snapshot(state) == snapshot(LinkState(stored))
    assert replayed == state.relations, "the deltas written one after the other are not the plan"
    assert workflows == {a.key for a in state.abstracts.values()}


def replay(delta: LinkDelta, relations: dict[tuple[str, str, str], Any], workflows: set[str]) -> None:
    for key in delta.deleted:
        assert key in relations, f"deleting {key}, which was never written"
        del relations[key]
    for row in delta.upserted:
        relations[(row["type"], row["source_id"], row["target_id"])] = row
    workflows -= set(delta.dissolved)
    workflows |= {a.key for a in delta.abstracts}


def test_removing_experiences_ends_where_never_having_them_does(stored: list[ExperienceFacts]) -> None:
    rng = random.Random(11)
    leaving = {f.id for f in stored if rng.random() < 0.3}
    state = LinkState(stored)
    replayed = dict(state.relations)
    workflows = {a.key for a in state.abstracts.values()}
    replay(state.update(removed=sorted(leaving), upserted=()), replayed, workflows)
    rest = [f for f in stored if f.id not in leaving]
    assert snapshot(state) == snapshot(LinkState(rest))
    assert replayed == state.relations
    assert workflows == {a.key for a in state.abstracts.values()}


@pytest.mark.parametrize("seed", [4, 5])
def test_merging_new_runs_against_the_state_is_merging_against_everything(unmerged: list[ExperienceFacts], seed: int) -> None:
    """Each slice: the full path plans merges over every stored fact plus the new ones; the state
    plans them from the new ones alone. Same groups, and the same plan afterwards."""
    order = list(unmerged)
    random.Random(seed).shuffle(order)
    state = LinkState()
    everything: dict[str, ExperienceFacts] = {}
    merges = 0
    for start in range(0, len(order), 17):
        fresh = order[start:start + 17]
        full_groups = plan_merges(sorted([*everything.values(), *fresh], key=lambda f: f.id))
        groups = state.plan_merges(fresh)
        assert [g.as_row() for g in groups] == [g.as_row() for g in full_groups]
        everything = merged({**everything, **{f.id: f for f in fresh}}, full_groups)
        state.after_merges(fresh, groups)
        merges += sum(len(g.merged_ids) for g in groups)
        assert set(state.facts) == set(everything)
    assert merges > 10
    assert snapshot(state) == snapshot(LinkState(everything.values()))
