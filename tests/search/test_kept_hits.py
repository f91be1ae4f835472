"""The experiences searches returned are kept as read, by the namespace's feedback version
(kbgraph.search.student.kept_hits): a settled search that returns them again reads nothing and
returns them as a read would; a write by another process that changes what a hit shows (a
retrieval counted, a step reward) makes the next search read them. Real Neo4j, real MiniLM."""

from __future__ import annotations

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.student.kept_hits import KeptHits

from tests.search.test_student import record_reads
from tests.search.test_vector_model import experience, kept_current

QUERY = {"k": 5, "domain": "retail", "weights": {"exact_scan_max": 0}}
LAMP = "I want to return the lamp and get my money back"


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
    assert len(kept) == 1 and kept.rows("v1", ["a"]) is None, "a new version drops the old one's rows"
    kept.keep(None, [row("f")])
    assert kept.rows("v2", ["e"]) is not None


def test_a_settled_search_returning_the_same_experiences_reads_nothing(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    kept_current(kb)
    first = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    again = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    assert "search_hits_get" not in asked
    assert [h.model_dump() for h in again.hits] == [h.model_dump() for h in first.hits]
    kb.student.context.kept_hits = KeptHits()  # nothing kept: read
    read = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    assert "search_hits_get" in asked
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
    assert "search_hits_get" in asked
    assert counted.experience.retrieved == hit.experience.retrieved + 1
    asked.clear()
    kb.record_feedback(step_rewards=[{"experience_id": hit.id, "order": hit.experience.steps[0].order, "reward": 1.0}])
    rewarded = next(h for h in searcher.search(LAMP, **QUERY).hits if h.id == hit.id)  # type: ignore[arg-type]
    assert "search_hits_get" in asked
    assert rewarded.experience.steps[0].reward == 1.0 and hit.experience.steps[0].reward != 1.0
