"""The change feed (kbgraph.store.search_version, kbgraph.search.student.change_feed): rows a process
kept at an older version, brought forward by the ids the writes since then changed, are the rows a
read of the whole namespace gives, after every kind of write; where the feed cannot tell, it says
so. A large namespace's searches then keep their state current under writes without reading it
whole. Real Neo4j, real MiniLM, the real agent runs; the merge and the double read are pure."""

from __future__ import annotations

import numpy as np

import json
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import SearchFilters, SearchQuery, SearchWeights
from kbgraph.search.student.change_feed import (Changes, ChangeFeed, first_id, follow, following, following_feedback,
                                                merged_rows, rows_of, WritesKeptComing)
from kbgraph.search.student.channels import filter_params
from kbgraph.search.lexical import query_terms
from kbgraph.search.student.kept_facts import fact_rows
from kbgraph.search.student.kept_feedback import NamespaceFeedback, feedback_rows
from kbgraph.search.student.kept_parts import facts_part, feedback_part, read_texts, steps_part, texts_part, vectors_part
from kbgraph.search.student.step_model import following_steps, step_rows
from kbgraph.search.student.vector_model import ExperienceVectors, vector_rows
from kbgraph.search.student.versioned import Follow, KeptByVersion, KeptPart, RowsRead, VersionedRead
from kbgraph.store.search_version import BUMP, CHANGED_IDS, CHANGES_SEARCHED

from kbgraph.search.student.workflow_operations import SEPARATOR
from kbgraph.store.queries import query

from tests.conftest import REAL_RUNS
from tests.search.test_vector_model import experience, kept_current, params

#: The reads of a whole namespace's rows that the feed stands in for.
WHOLE_READS = {"search_experience_texts", "search_experience_vector_rows", "search_experience_fact_rows",
               "search_experience_feedback_rows"}

Part = tuple[RowsRead[Any], Follow[Any]]


def parts(kb: KnowledgeBase) -> dict[str, Part]:
    """Each kept part's whole read and how it follows the writes, as the searches' context makes them."""
    filters = filter_params(kb.namespace, SearchFilters(), SearchQuery(task="a refund"), SearchWeights())
    texts = partial(read_texts, kb.gateway, filters)
    reads: dict[str, RowsRead[Any]] = {"texts": texts, "vectors": vector_rows(kb.gateway, kb.namespace),
                                       "facts": fact_rows(kb.gateway, kb.namespace)}
    # As kept_parts makes them: the texts and the facts are made of their rows alone.
    found: dict[str, Part] = {name: (read, following(kb.gateway, kb.namespace, read, rows_alone=name != "vectors"))
                              for name, read in reads.items()}
    found["steps"] = (step_rows(kb.gateway, kb.namespace), following_steps(kb.gateway, kb.namespace))
    feedback = feedback_rows(kb.gateway, kb.namespace)
    found["feedback"] = (feedback, following_feedback(kb.gateway, kb.namespace, feedback))
    return found


def runs(count: int, prefix: str) -> list[dict[str, Any]]:
    """Real runs under fresh ids (the same tasks: they join the stored experiences' groups)."""
    lines = [json.loads(line) for line in (REAL_RUNS / "airline_gpt4o.jsonl").read_text().splitlines() if line.strip()]
    return [{**run, "id": f"{prefix}-{n}"} for n, run in enumerate(lines[:count])]


def test_a_read_of_some_experiences_rows_seeks_those_experiences_not_the_namespace(
    real_runs_read_only: KnowledgeBase,
) -> None:
    kb = real_runs_read_only
    every = [str(row[0]) for row in vector_rows(kb.gateway, kb.namespace)(None).rows]
    filters = filter_params(kb.namespace, SearchFilters(), SearchQuery(task="a refund", domain="retail"), SearchWeights())
    asked = {"search_experience_texts": {**filters, "known": None},
             "search_experience_vector_rows": {"kb": kb.namespace, "known": None},
             "search_experience_fact_rows": {"kb": kb.namespace, "known": None},
             "search_experience_feedback_rows": {"kb": kb.namespace, "known": None},
             "search_workflow_operations": {**filters, "known": None, "history": True, "history_known": None,
                                            "separator": SEPARATOR}}
    for name, params in asked.items():
        # A filter on $ids alone was planned after the seek of the namespace's experiences: every
        # one of them read and dropped (8,700 db hits at 10,000 experiences, each follow).
        assert max(experiences_sought(kb, name, {**params, "ids": every[:2]})) <= 2, name
        assert max(experiences_sought(kb, name, {**params, "ids": None})) >= len(every) // 2, name
    # The reads of the changed ids alone: with the ids unwound, the planner could seek the namespace
    # by kb and join the ids on (CI: 126 of 126 experiences sought for two ids).
    for name in ("search_step_text_rows_of", "search_experience_vectors_of", "search_change_neighbours"):
        assert max(experiences_sought(kb, name, {"kb": kb.namespace, "ids": every[:2]})) <= 2, name


def experiences_sought(kb: KnowledgeBase, name: str, params: dict[str, Any]) -> list[int]:
    """The rows each index seek of experiences gave in the named read with ``params``, profiled."""
    with kb.gateway.driver.session() as session:
        plan = session.run("PROFILE " + query(name), **params).consume().profile
    found: list[int] = []

    def walk(step: dict[str, Any]) -> None:
        details = str(step.get("args", {}).get("Details", ""))
        if "IndexSeek" in str(step.get("operatorType", "")) and ":Experience(kb" in details:
            found.append(int(step.get("rows", 0)))
        for child in step.get("children", []):
            walk(child)

    walk(plan)
    return found or [0]


def test_every_write_that_changes_what_is_searched_says_what_it_changed_or_that_it_cannot() -> None:
    assert set(CHANGED_IDS) == set(CHANGES_SEARCHED)


def test_kept_rows_followed_through_every_kind_of_write_are_the_rows_a_whole_read_gives(real_kb: KnowledgeBase) -> None:
    kb = real_kb
    found = parts(kb)
    first = {name: read(None) for name, (read, _) in found.items()}
    last = dict(first)
    every = [str(row[0]) for row in first["vectors"].rows]
    writes: list[tuple[str, Callable[[], Any], set[str]]] = [
        # (what, the write, the parts whose feed cannot tell after it)
        ("runs ingested (merges, workflows grown)", lambda: kb.add_trajectories(runs(3, "again")), set()),
        ("experiences stored as they are", lambda: kb.add_experiences([experience(n) for n in range(3)]), set()),
        ("feedback", lambda: kb.record_feedback(used=every[:2], outcome=True, task="a refund"), {"feedback"}),
        ("an experience deleted", lambda: kb.delete(every[-1:]), set()),
        ("maintenance (merges, archives)", kb.maintain, set()),
        ("a restore", lambda: kb.restore(ids=every[2:4]), set()),
    ]
    told: dict[tuple[str, str], bool] = {}
    for what, write, cannot_tell in writes:
        write()
        for name, (read, follows) in found.items():
            whole = read(None)
            for since in (last[name], first[name]):  # from the version before, and across several
                followed = follows(since.version, since.rows)
                if since is last[name]:
                    told[what, name] = followed is not None
                if followed is not None:
                    assert followed[:2] == (whole.version, whole.rows), f"{name} after {what}"
            assert not (name in cannot_tell and told[what, name]), f"{name} after {what}: a feedback write names no ids"
            last[name] = whole
    # The ingest (its merges and grown workflows), a store and a delete say what they changed.
    for what in ("runs ingested (merges, workflows grown)", "experiences stored as they are", "an experience deleted"):
        assert all(told[what, name] for name in found), f"{what}: {told}"


def test_the_feed_cannot_tell_past_a_version_it_does_not_hold_or_a_write_that_did_not_say(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(4)])
    read, follows = parts(kb)["vectors"]
    kept = read(None)
    assert follows("a version no write made", kept.rows) is None
    kb.add_experiences([experience(5)])
    assert follows(kept.version, kept.rows) is not None
    kept = read(None)
    kb.gateway.write(BUMP, kb=kb.namespace)  # a version whose writes said nothing (an auto-commit bump)
    assert follows(kept.version, kept.rows) is None
    kept = read(None)
    kb.gateway.write("kb_state_search_version_renew", kb=kb.namespace)  # as an import renews it
    assert follows(kept.version, kept.rows) is None


def test_a_large_namespace_keeps_its_state_current_under_writes_without_reading_it_whole(
        kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    kb.add_experiences([experience(n) for n in range(40)])
    kept_current(kb)
    ctx = kb.student.context
    backgrounds = [ctx.vectors_in_background, ctx.texts_in_background, ctx.facts_in_background,
                   ctx.feedback_in_background]
    for background in backgrounds:
        assert background is not None
        background.settle_seconds = background.settle_per_read = 60.0  # a whole read would wait a minute
    asked: list[str] = []
    whole: list[str] = []
    read = kb.gateway.read

    def recording(name: str, **values: Any) -> Any:
        asked.append(name)
        if name in WHOLE_READS and values.get("ids") is None:
            whole.append(name)
        return read(name, **values)

    monkeypatch.setattr(kb.gateway, "read", recording)
    kb.add_experiences([experience(100)])
    p = params(kb, domain=None)

    def current() -> list[Any]:
        versions = ctx.versions()
        return [ctx.current_vectors(p, versions.search), ctx.current_texts(p, versions.search),
                ctx.current_facts(versions.search), ctx.current_feedback(versions.feedback)]

    assert current() == [None] * 4, "a new version: the follows start"
    for background in backgrounds:
        background.settle()  # type: ignore[union-attr]
    now = current()
    assert all(value is not None for value in now), "followed to the new version"
    assert whole == [] and "search_changes_since" in asked, "followed, not read whole"
    assert now[0].filters.ids == sorted(str(row[0]) for row in vector_rows(kb.gateway, kb.namespace)(None).rows)


def test_merged_rows_are_the_kept_ones_without_the_changed_with_the_fresh_in_id_order() -> None:
    rows = [["a", 1], ["b", 2], ["c", 3]]
    assert merged_rows(rows, ["b", "d"], [["d", 4]], lambda row: str(row[0])) == [["a", 1], ["c", 3], ["d", 4]]
    assert merged_rows(rows, ["a"], [["a", 9]], lambda row: str(row[0])) == [["a", 9], ["b", 2], ["c", 3]]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 400), unique=True), st.lists(st.integers(0, 420), max_size=90),
       st.lists(st.integers(0, 420), unique=True, max_size=90))
def test_merged_rows_are_the_rows_a_sort_gives_whether_placed_by_bisection_or_sorted(
    kept: list[int], changed: list[int], fresh: list[int],
) -> None:
    def row_id(row: list[Any]) -> str:
        return str(row[0])

    rows = sorted(([f"exp_{n:03d}", "kept"] for n in kept), key=row_id)
    ids = [f"exp_{n:03d}" for n in changed]
    # The fresh rows are of changed ids (a few of other ids too: they are placed after the kept row).
    new = [[f"exp_{n:03d}", "fresh"] for n in fresh if n % 7 == 0 or f"exp_{n:03d}" in ids]
    sort = sorted([*(row for row in rows if row_id(row) not in set(ids)), *new], key=row_id)
    assert merged_rows(rows, ids, new, row_id) == sort


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 400), unique=True), st.lists(st.integers(0, 420), max_size=120))
def test_rows_of_some_ids_are_the_ones_a_pass_over_every_row_finds(kept: list[int], asked: list[int]) -> None:
    rows = sorted([f"exp_{n:03d}", n] for n in kept)
    ids = [f"exp_{n:03d}" for n in asked]
    assert rows_of(rows, ids, first_id) == [row for row in rows if row[0] in set(ids)]


def fake_feed(answers: list[tuple[str, list[str] | None, str, list[list[Any]]]],
              rows_alone: bool = False) -> ChangeFeed[list[Any]]:
    """A feed whose successive reads answer ``(version, changed, version of the rows read, rows)``."""
    calls = iter(answers)
    current: list[tuple[str, list[str] | None, str, list[list[Any]]]] = []

    def changes(_: str, inclusive: bool = False) -> Changes:
        current[:] = [next(calls)]
        return Changes(current[0][0], current[0][1])

    def read(known: str | None, ids: list[str] | None = None) -> VersionedRead[list[list[Any]]]:
        return VersionedRead(current[0][2], False, current[0][3])

    return ChangeFeed(changes, read, lambda row: str(row[0]), rows_alone=rows_alone)


def test_a_follow_reads_once_and_again_only_when_a_write_came_between_its_two_requests() -> None:
    base = [["a", 1], ["b", 2]]
    once = fake_feed([("v2", ["b"], "v2", [["b", 3]])])
    assert follow(once, "v1", base) == ("v2", [["a", 1], ["b", 3]], ["b"])
    # The rows were read at v3, the feed at v2: read again.
    moved_once = fake_feed([("v2", ["b"], "v3", [["b", 3]]), ("v3", ["b", "c"], "v3", [["b", 3], ["c", 4]])])
    assert follow(moved_once, "v1", base) == ("v3", [["a", 1], ["b", 3], ["c", 4]], ["b", "c"])
    # A write between the feed and the rows, every time: the next search follows again.
    moving = fake_feed([("v2", ["b"], "v3", [["b", 3]])] * 3)
    with pytest.raises(WritesKeptComing):
        follow(moving, "v1", base)
    # The feed cannot tell: None (a whole read).
    assert follow(fake_feed([("v2", None, "v2", [])]), "v1", base) is None


def test_a_follow_of_a_value_made_of_its_rows_alone_gives_only_the_ids_whose_rows_read_otherwise() -> None:
    base = [["a", 1], ["b", 2], ["c", 3]]
    # The write that made v1 read again (a, b as kept), with v2's: c changed, d new, b gone.
    answer = ("v2", ["a", "b", "c", "d"], "v2", [["a", 1], ["c", 30], ["d", 4]])
    assert follow(fake_feed([answer], rows_alone=True), "v1", base, inclusive=True) == (
        "v2", [["a", 1], ["c", 30], ["d", 4]], ["b", "c", "d"])
    # Not made of its rows alone (the vectors, what feedback changes): every id the feed gave.
    assert follow(fake_feed([answer]), "v1", base, inclusive=True) == (
        "v2", [["a", 1], ["c", 30], ["d", 4]], ["a", "b", "c", "d"])
    # Nothing read otherwise: no id, the rows as they were.
    assert follow(fake_feed([("v1", ["a"], "v1", [["a", 1]])], rows_alone=True), "v1", base, inclusive=True) == (
        "v1", base, [])


def test_a_value_patched_from_the_one_before_ranks_as_one_made_of_the_whole_rows(real_kb: KnowledgeBase) -> None:
    kb = real_kb
    filters = filter_params(kb.namespace, SearchFilters(), SearchQuery(task="a refund"), SearchWeights())
    kept_vectors: KeptByVersion[str, ExperienceVectors] = KeptByVersion(1)
    kept_feedback: KeptByVersion[str, NamespaceFeedback] = KeptByVersion(1)
    found: dict[str, KeptPart[Any, Any]] = {
        "texts": texts_part(kb.gateway, kb.namespace, filters), "facts": facts_part(kb.gateway, kb.namespace),
        "vectors": vectors_part(kb.gateway, kb.namespace, kept_vectors),
        "feedback": feedback_part(kb.gateway, kb.namespace, kept_feedback), "steps": steps_part(kb.gateway, kb.namespace)}
    held: dict[str, tuple[str, Any, Any]] = {}
    for name, part in found.items():
        answer = part.read(None)
        held[name] = (answer.version, answer.rows, part.make(answer.rows))
        for kept, of in ((kept_vectors, "vectors"), (kept_feedback, "feedback")):
            if name == of:
                kept.hold(kb.namespace, answer.version, held[name][2])
    texts = ["cancel my reservation and refund", "change the flight to a later date", "baggage allowance gold member",
             "I want to return the lamp and get my money back"]
    vectors = kb.embedder.embed(texts)
    for step, write in enumerate([lambda: kb.add_trajectories(runs(4, "patched")),
                                  lambda: kb.add_experiences([experience(n) for n in range(5)]),
                                  lambda: kb.delete([str(held["vectors"][1][0][0])]),
                                  lambda: kb.add_trajectories(runs(6, "again"))]):
        write()
        for name, part in found.items():
            version, rows, value = held[name]
            assert part.follow is not None and part.patch is not None
            followed = part.follow(version, rows)
            assert followed is not None, f"{name}, write {step}"
            at, now_rows, changed = followed
            patched, whole = part.patch(value, now_rows, changed), part.make(now_rows)
            if name == "texts":
                for text in texts:
                    for domain in (None, "airline", "retail"):
                        terms = query_terms(text)
                        assert patched.rank(terms, 30, domain, 0.5) == whole.rank(terms, 30, domain, 0.5)
            elif name == "vectors":
                for vector in vectors:
                    for which in ("pg", "structure"):
                        for domain in (None, "airline"):
                            asked = {**filters, "domain": domain}
                            assert patched.nearest(which, vector, asked, 30) == whole.nearest(which, vector, asked, 30)
                assert patched.held.keys() == whole.held.keys()
                for exp_id, pair in patched.held.items():
                    for slot, which in enumerate(("pg", "structure")):
                        mine, theirs = pair[slot], whole.held[exp_id][slot]
                        assert (mine is None) == (theirs is None) and (mine is None or np.array_equal(mine, theirs))
                        # Kept once: a view of the patched model's own matrix, not of the one before.
                        assert mine is None or np.shares_memory(mine, patched.vectors[which])
                assert patched.filters.ids == whole.filters.ids and patched.abstract == whole.abstract
                for column in ("kind", "status", "domain", "success", "shared", "owner"):
                    assert list(getattr(patched.filters, column)) == list(getattr(whole.filters, column)), column
            elif name == "steps":
                for vector in vectors:
                    for asked in (filters, {**filters, "domains": ["airline"]}, {**filters, "kinds": ["concrete"]}):
                        for k in (1, 10, 50):
                            assert patched.nearest(vector, asked, k) == whole.nearest(vector, asked, k), f"write {step}"
                assert patched.experiences.ids == whole.experiences.ids
            else:
                assert patched.by_id == whole.by_id, f"{name}, write {step}"
            held[name] = (at, now_rows, patched)
            for kept, of in ((kept_vectors, "vectors"), (kept_feedback, "feedback")):
                if name == of:
                    kept.hold(kb.namespace, at, patched)
