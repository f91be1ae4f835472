"""The scoring facts of a large namespace are kept in the process with its search version
(kbgraph.search.student.kept_facts): a search's candidates then get, field by field, the facts
``search_candidates_score`` gives them, with only what feedback changes read from the server; after
a write the next search scores with the facts the change feed's follow brings to it, or, when the
follow is not done in the little time a search waits for it, with the server's. Real Neo4j, real MiniLM, the real
agent runs."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import SearchFilters, SearchQuery, SearchWeights
from kbgraph.search.student import kept_channels
from kbgraph.search.student.kept_channels import KeptNow
from kbgraph.search.student.channels import filter_params
from kbgraph.search.student.facts import read_facts, read_kept_facts
from kbgraph.search.student.kept_facts import NamespaceFacts, fact_rows
from kbgraph.search.student.rows import CandidateFacts
from kbgraph.search.student.versioned import NamespaceVersions

from tests.search.test_student import record_reads
from tests.search.test_vector_model import experience, kept_current

REQUEST = "I need to cancel my reservation and get a refund for the flight"


def kept(kb: KnowledgeBase) -> NamespaceFacts:
    answer = fact_rows(kb.gateway, kb.namespace)(None)
    return NamespaceFacts(answer.rows)


def all_ids(kb: KnowledgeBase) -> list[str]:
    return [r["id"] for r in kb.gateway.driver.execute_query(
        "MATCH (e:Experience {kb: $kb}) RETURN e.id AS id ORDER BY id", kb=kb.namespace,
        database_=kb.gateway.database).records]


def assert_same_facts(ours: list[CandidateFacts], theirs: list[CandidateFacts]) -> None:
    """Every field equal, the server's cosines (semantic, structural, the outcomes' scores) to
    1e-6: Neo4j 2026 computes them in float32, and two requests for one cosine were seen to differ
    in the last bit (CI on 2026.09: 0.7904052734375 against 0.7904053330421448, 2^-24 apart)."""
    ours, theirs = sorted(ours, key=lambda f: f.id), sorted(theirs, key=lambda f: f.id)
    assert [f.id for f in ours] == [f.id for f in theirs]
    for mine, read in zip(ours, theirs, strict=True):
        assert [mine.semantic, mine.structural] == pytest.approx([read.semantic, read.structural], abs=1e-6)
        assert [s for s, _ in mine.outcomes] == pytest.approx([s for s, _ in read.outcomes], abs=1e-6)
        cosines_as_read = replace(mine, semantic=read.semantic, structural=read.structural, outcomes=tuple(
            (score, outcome) for (_, outcome), (score, _) in zip(mine.outcomes, read.outcomes, strict=True)))
        assert cosines_as_read == read


# (Searches ask for active experiences only; the queries take any statuses, and ["archived"] leaves
# out every workflow and every way.)
@pytest.mark.parametrize("statuses", [["active"], ["archived"]])
def test_kept_facts_are_the_query_facts_field_by_field(real_kb: KnowledgeBase, statuses: list[str]) -> None:
    kb = real_kb
    ids = all_ids(kb)
    abstract = [i for i, f in kept(kb).by_id.items() if f.kind == "abstract"]
    assert abstract, "the real runs have workflows, whose facts gather their instances' runs"
    # Feedback, so that quality, utility and the task outcomes are not their defaults.
    kb.record_feedback(used=ids[:3], outcome=True, task=REQUEST)
    kb.record_feedback(used=ids[3:5], outcome=False, task="change the shipping address of my order")
    facts = kept(kb)
    vector = [float(x) for x in kb.embedder.embed([REQUEST])[0]]
    task = [float(x) for x in kb.embedder.embed(["search_reservations then cancel_reservation"])[0]]
    params = filter_params(kb.namespace, SearchFilters(), SearchQuery(task=REQUEST), SearchWeights())
    params["statuses"] = statuses
    some_source = next(s for f in facts.by_id.values() for s in f.source_ids)
    ctx = kb.student.context
    for excluded in (set(), {some_source}):
        for part in (ids[:40], ids[40:], [*abstract, *ids[::3]]):
            # Scores a vector channel returned are taken as given, by both.
            known = {i: {"semantic": 0.5 + n / 1000} for n, i in enumerate(part[::4])}
            known.update({i: {"structural": 0.25} for i in part[1::5]})
            for split in (False, True):
                theirs = read_facts(ctx, part, vector, task, excluded, params, 0.5, known=known, split=split)
                ours = read_kept_facts(ctx, KeptNow(None, None, facts, None, None, NamespaceVersions(None, None)), part, vector, task, excluded,
                                       params, 0.5, known)
                assert_same_facts(ours, theirs)
    assert any(f.outcomes for f in ours) and any(f.workflow for f in ours) == (statuses == ["active"])


def test_a_search_with_kept_facts_ranks_as_one_without(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    query = {"k": 10, "domain": "retail", "weights": {"exact_scan_max": 0}}
    request = "I want to return the lamp and get my money back"
    kept_current(kb)
    kb.student.context.feedback_in_background = None  # what feedback changes is read (test_kept_feedback)
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    with_kept = kb.search(request, **query)  # type: ignore[arg-type]
    assert "search_candidates_feedback" in asked and "search_candidates_score" not in asked
    # A request without steps asks the intent channel, whose request reads the version as well.
    assert "search_workflow_operations" in asked and "search_version_of" not in asked
    kb.student.context.facts_in_background = None  # the facts query answers
    asked.clear()
    without = kb.search(request, **query)  # type: ignore[arg-type]
    assert "search_candidates_score" in asked
    assert [(h.id, h.score, h.breakdown) for h in with_kept.hits] == [(h.id, h.score, h.breakdown) for h in without.hits]


def test_a_write_makes_the_next_search_wait_for_the_follow_that_brings_the_kept_facts_to_it(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A search that waited for the version waits a little (FOLLOW_WAIT_SECONDS) for the change
    # feed's follows it started; here as long as they take.
    kb.add_experiences([experience(n) for n in range(12)])
    kept_current(kb)
    [added] = kb.add_experiences([experience(40)]).ids
    monkeypatch.setattr(kept_channels, "FOLLOW_WAIT_SECONDS", 60.0)
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    found = kb.search(experience(40).problem, k=3, weights={"exact_scan_max": 0})
    assert "search_experience_fact_rows" in asked, "the follow read the rows the write changed"
    assert "search_candidates_score" not in asked, "the facts were the kept ones, followed to the write"
    assert found.hits[0].id == added
    followed = kb.student.context.facts_by_version.kept(kb.namespace)
    assert followed is not None and followed[0] == kb.student.context.search_version() and added in followed[1].by_id


def test_a_write_whose_follow_is_late_makes_the_next_search_read_the_facts_from_the_server(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(12)])
    kept_current(kb)
    [added] = kb.add_experiences([experience(40)]).ids
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    recording = kb.gateway.read

    def late_follow(name: str, **params: object) -> list[dict[str, object]]:
        if name == "search_changes_since":  # every follow asks the feed first
            time.sleep(1.0)
        return recording(name, **params)

    monkeypatch.setattr(kb.gateway, "read", late_follow)
    monkeypatch.setattr(kept_channels, "FOLLOW_WAIT_SECONDS", 0.05)
    found = kb.search(experience(40).problem, k=3, weights={"exact_scan_max": 0})
    assert "search_candidates_score" in asked, "the kept facts are of the version before the write"
    assert found.hits[0].id == added


def test_above_the_in_process_limit_the_facts_query_answers(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    # As the vectors (vector_model.IN_PROCESS_MAX): past the limit the facts' read after each
    # write costs more than it saves.
    kb.add_experiences([experience(n) for n in range(12)])
    monkeypatch.setattr(kb.student.context, "in_process_max", 10)
    kept_current(kb, vectors=False)
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    kb.search("I want to return the lamp and get my money back", weights={"exact_scan_max": 0})
    assert "search_candidates_score" in asked and "search_candidates_feedback" not in asked
