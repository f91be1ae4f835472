"""The experiences searches returned are kept as read, by the namespace's feedback version
(kbgraph.search.student.kept_hits): a settled search that returns them again reads nothing and
returns them as a read would; a write by another process that changes what a hit shows (a
retrieval counted, a step reward) makes the next search read them. Real Neo4j, real MiniLM."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.student.kept_hits import KeptHits, shown_ids

from tests.search.test_student import record_reads
from kbgraph.search.student.vector_model import vector_rows

from tests.search.test_change_feed import runs
from tests.search.test_vector_model import experience, kept_current

QUERY = {"k": 5, "domain": "retail", "weights": {"exact_scan_max": 0}}
LAMP = "I want to return the lamp and get my money back"


def read_hits(asked: list[str]) -> bool:
    """Whether the hits were read (whole, or those changed since kept)."""
    return "search_hits_get" in asked or "search_hits_get_since" in asked


def row(exp_id: str) -> dict[str, object]:
    return {"version": "v", "experience": {"id": exp_id}, "steps": [], "failure_modes": [], "relations": []}


def test_rows_are_given_only_at_the_version_they_were_read_and_only_all_of_them() -> None:
    kept = KeptHits(held=3)
    kept.keep("v1", [row("a"), row("b")])
    assert kept.rows("v1", ["b", "a"]) == {"b": row("b"), "a": row("a")}
    assert kept.rows("v2", ["a"]) is None, "another version"
    assert kept.rows(None, ["a"]) is None, "no version read (a search off the kept path)"
    assert kept.rows("v1", ["a", "c"]) is None, "one of them not kept"
    kept.keep("v1", [row("c"), row("d")])  # three held: the least recently given goes
    assert kept.rows("v1", ["b"]) is None and kept.rows("v1", ["a", "c", "d"]) is not None
    kept.keep("v2", [row("e")])
    assert kept.rows("v2", ["e"]) is not None and kept.rows("v1", ["a"]) is None, "a and c make room for e"
    assert kept.rows("v2", ["d", "e"]) is None, "d is kept at v1 still"
    kept.keep(None, [row("f")])
    assert kept.rows("v2", ["e"]) is not None and len(kept) == 3


def test_a_read_is_sent_the_versions_of_the_rows_kept_and_what_each_shows_and_carries_the_unchanged_on() -> None:
    kept = KeptHits()
    shows = {**row("a"), "relations": [{"type": "COMPOSITION", "target_id": "t"}], "workflow": {"id": "w", "runs": 3}}
    kept.keep("v1", [shows, row("b")])
    kept.keep("v2", [row("c")])
    assert kept.sent(["c", "a", "x", "b"]) == (["v2", "v1"], [["c", 0, []], ["a", 1, ["t", "w"]], ["b", 1, []]])
    assert shown_ids(shows) == ["t", "w"]
    assert kept.carried("v3", ["a", "c"], {"a": "v1", "c": "v2"}) == {"a": shows, "c": row("c")}
    assert kept.rows("v3", ["a", "c"]) == {"a": shows, "c": row("c")} and kept.rows("v1", ["b"]) is not None
    kept.keep("v4", [row("b")])  # another search read b at a newer version meanwhile
    assert kept.carried("v3", ["b"], {"b": "v1"}) is None, "not the row the read confirmed"
    assert kept.carried("v3", ["z"], {"z": "v1"}) is None, "no longer kept"


def test_a_settled_search_returning_the_same_experiences_reads_nothing(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    kept_current(kb)
    first = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    again = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    assert not read_hits(asked)
    assert [h.model_dump() for h in again.hits] == [h.model_dump() for h in first.hits]
    kb.student.context.kept_hits = KeptHits()  # nothing kept: read
    read = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    assert read_hits(asked)
    assert [h.model_dump() for h in read.hits] == [h.model_dump() for h in first.hits]


def test_what_another_process_changes_of_a_hit_is_seen_by_the_next_search(
    kb: KnowledgeBase, searcher: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    kept_current(searcher)
    first = searcher.search(LAMP, **QUERY)  # type: ignore[arg-type]
    hit = next(h for h in first.hits if h.experience.steps)
    asked: list[str] = []
    record_reads(searcher, monkeypatch, asked)
    kb.record_feedback(retrieved=[hit.id])  # the writer's process
    counted = next(h for h in searcher.search(LAMP, **QUERY).hits if h.id == hit.id)  # type: ignore[arg-type]
    assert read_hits(asked)
    assert counted.experience.retrieved == hit.experience.retrieved + 1
    asked.clear()
    kb.record_feedback(step_rewards=[{"experience_id": hit.id, "order": hit.experience.steps[0].order, "reward": 1.0}])
    rewarded = next(h for h in searcher.search(LAMP, **QUERY).hits if h.id == hit.id)  # type: ignore[arg-type]
    assert read_hits(asked)
    assert rewarded.experience.steps[0].reward == 1.0 and hit.experience.steps[0].reward != 1.0


def test_after_any_kind_of_write_a_search_returns_its_hits_as_one_that_kept_nothing_reading_only_those_touched(
    real_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb = real_kb
    kept_current(kb)
    stored = kb.get_many([str(row[0]) for row in vector_rows(kb.gateway, kb.namespace)(None).rows][:40])
    queries = [{"task": e.problem, "domain": e.domain, **QUERY} for e in stored[::5]]
    carried: list[str] = []
    original = KeptHits.carried

    def counted(self: KeptHits, version: str, ids: Sequence[str], sent: Mapping[str, str]) -> dict[str, Any] | None:
        carried.extend(i for i in ids if sent[i] != version)  # carried across a write
        return original(self, version, ids, sent)

    monkeypatch.setattr(KeptHits, "carried", counted)
    ids = [e.id for e in stored]
    writes: list[tuple[str, Callable[[], Any]]] = [
        ("runs ingested (merges, workflows grown)", lambda: kb.add_trajectories(runs(3, "again"))),
        ("experiences stored as they are", lambda: kb.add_experiences([experience(n) for n in range(3)])),
        ("feedback", lambda: kb.record_feedback(used=ids[:2], outcome=True, task="a refund")),
        ("a hit's relation target deleted", lambda: kb.delete(ids[-1:])),
        ("maintenance (merges, archives)", kb.maintain),
        ("a restore", lambda: kb.restore(ids=ids[2:4])),
    ]
    for query in queries:  # the rows kept before the writes
        kb.search(**query)  # type: ignore[arg-type]
    by_write: dict[str, int] = {}
    for what, write in writes:
        write()
        kept_current(kb)
        carried.clear()
        for query in queries:
            hits = [h.model_dump() for h in kb.search(**query).hits]  # type: ignore[arg-type]
            kept, kb.student.context.kept_hits = kb.student.context.kept_hits, KeptHits()
            try:
                assert hits == [h.model_dump() for h in kb.search(**query).hits], f"after {what}"  # type: ignore[arg-type]
            finally:
                kb.student.context.kept_hits = kept
        by_write[what] = len(carried)
    assert by_write["feedback"] == 0, "feedback names no ids: every row is read again"
    assert by_write["experiences stored as they are"] > 0 and by_write["runs ingested (merges, workflows grown)"] > 0, by_write
