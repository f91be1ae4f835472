"""Whose text a merged experience shows: a leave-one-out query must be kept from the text of the run
it was written from, even when that run was merged with a look-alike that is still in play."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.eval.shown_text import merged_experiences, own_text_of, own_text_runs, run_problems, shown_runs
from tests.conftest import SHARED_DATA


def test_a_merged_experience_shows_the_runs_whose_own_problem_it_holds() -> None:
    problems = {"r1": "Return the kettle.", "r2": "Return the lamp.", "r3": "Return the kettle. "}
    shown = shown_runs([("e1", "Return the kettle.", ["r1", "r2", "r3"]), ("e2", "Something else", ["r2"])], problems)
    # r3's text is the same once stripped; e2 shows no member's text and is never hidden.
    assert shown == {"e1": frozenset({"r1", "r3"})}


def test_only_an_experience_showing_nothing_but_excluded_runs_text_is_hidden() -> None:
    shown = {"e1": frozenset({"r1"}), "e2": frozenset({"r2", "r3"})}
    assert own_text_of(["r1"], shown) == ["e1"]
    # r3 is still in play and has the same text: that text is no longer the query's own.
    assert own_text_of(["r2"], shown) == []
    assert own_text_of(["r2", "r3", "r1"], shown) == ["e1", "e2"]
    assert own_text_of([], shown) == []


def test_the_runs_left_out_with_the_own_text_are_every_member_of_the_experiences_showing_it() -> None:
    shown = {"e1": frozenset({"r1"}), "e2": frozenset({"r2", "r3"})}
    members = {"e1": ["r1", "r4", "r5"], "e2": ["r2", "r3", "r6"]}
    # r4 and r5 were merged under r1's text: a query written from r1 can find them through no
    # text but its own, so the own-text view leaves them out for every system.
    assert own_text_runs(["r1"], shown, members) == {"r4", "r5"}
    assert own_text_runs(["r2"], shown, members) == frozenset(), "r3 still shows the text"
    assert own_text_runs(["r1", "r2", "r3"], shown, members) == {"r4", "r5", "r6"}


@pytest.mark.neo4j
def test_two_gold_runs_merged_into_one_show_the_canonical_runs_text(kb: KnowledgeBase, tmp_path: Path) -> None:
    # Two retail gold runs that the merge stage makes one experience (the same change, near-identical
    # requests); it keeps retail-train-491's text (the canonical member), not retail-train-55's.
    wanted = {"retail-train-491", "retail-train-55"}
    rows = [line for line in (SHARED_DATA / "trajectories" / "retail_train.jsonl").read_text().splitlines()
            if line.strip() and json.loads(line)["id"] in wanted]
    assert len(rows) == 2, "the shared data is missing its retail gold runs"
    corpus = tmp_path / "pair.jsonl"
    corpus.write_text("\n".join(rows) + "\n")
    kb.ingest([corpus])
    merged = merged_experiences(kb.gateway, kb.namespace)
    assert [sorted(sources) for _, _, sources in merged] == [sorted(wanted)]
    shown = shown_runs(merged, run_problems([corpus]))
    (experience_id,) = shown
    assert shown[experience_id] == {"retail-train-491"}
    assert own_text_of(["retail-train-491"], shown) == [experience_id]
    assert own_text_of(["retail-train-55"], shown) == []
    # Search leaves it out when told to, as the suite's own_text_hidden column tells it.
    request = "Cancel one order I placed by mistake and change an item of another"
    assert experience_id in kb.search(request, domain="retail", k=5, exclude=["retail-train-491"]).ids()
    assert experience_id not in kb.search(request, domain="retail", k=5,
                                          exclude=["retail-train-491", experience_id]).ids()
