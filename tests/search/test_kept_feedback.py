"""What feedback changes is kept in the process by the namespace's feedback version
(kbgraph.search.student.kept_feedback): worked out from it, a search's candidates get, field by
field, what ``search_candidates_feedback`` reads (cosines to the last bits of a float32), and a
settled search asks the server nothing about its candidates; feedback given by another process
makes the next search read them from the server again. Real Neo4j, real MiniLM, the real agent
runs."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.student.kept_facts import NamespaceFacts, fact_rows
from kbgraph.search.student.kept_feedback import NamespaceFeedback, built_feedback, feedback_rows, utility_as_read
from kbgraph.search.student.vector_model import experience_vectors
from kbgraph.search.student.versioned import KeptByVersion

from tests.search.test_kept_facts import REQUEST, all_ids
from tests.search.test_student import record_reads
from tests.search.test_vector_model import experience, kept_current

QUERY = {"k": 10, "domain": "retail", "weights": {"exact_scan_max": 0}}
LAMP = "I want to return the lamp and get my money back"


def kept_feedback(kb: KnowledgeBase) -> NamespaceFeedback:
    rows = feedback_rows(kb.gateway, kb.namespace)(None).rows
    return built_feedback(kb.gateway, kb.namespace, KeptByVersion(1))(rows)


def test_the_utility_is_the_requests_expression() -> None:
    assert utility_as_read(0.8, 0.1, 0, 0, 0.05) == 0.8 + 0.1
    assert utility_as_read(0.8, 0.1, -3, -1, 0.05) == 0.8 + 0.1, "a clock skew counts as no day"
    assert utility_as_read(0.6, -0.2, 10, 4, 0.05) == pytest.approx(0.6 * 0.6065306597 - 0.2 * 0.8187307531)


def test_what_feedback_changes_is_worked_out_as_the_request_reads_it(real_kb: KnowledgeBase) -> None:
    kb = real_kb
    ids = all_ids(kb)
    kb.record_feedback(used=ids[:3], outcome=True, task=REQUEST)
    kb.record_feedback(used=ids[2:6], outcome=False, task="change the shipping address of my order")
    kb.record_feedback(used=ids[7:9], outcome=True)
    facts = NamespaceFacts(fact_rows(kb.gateway, kb.namespace)(None).rows)
    vectors = experience_vectors(kb.gateway, kb.namespace, KeptByVersion(1))
    feedback = kept_feedback(kb)
    assert len(feedback) == len(ids)
    pg = [float(x) for x in kb.embedder.embed([REQUEST])[0]]
    task = [float(x) for x in kb.embedder.embed(["search_reservations then cancel_reservation"])[0]]
    today = datetime.now(UTC).date()
    decay = kb.student.context.utility_decay
    for day in (today, today + timedelta(days=40), date(2020, 1, 1)):
        for part in (ids[:40], ids[::3]):
            semantic = part[::2]
            structural = [i for i in part[1::2] if facts.by_id[i].has_steps]
            theirs = kb.gateway.read("search_candidates_feedback", kb=kb.namespace, ids=part, pg=pg, task=task,
                                     decay=decay, today=day, semantic_ids=semantic, structural_ids=structural)[0]["rows"]
            ours = feedback.rows(part, pg, task, semantic, structural, facts, vectors, day, decay)
            assert ours is not None
            assert [r["id"] for r in ours] == [r["id"] for r in theirs]
            for mine, read in zip(ours, theirs, strict=True):
                assert (mine["quality"], mine["text"]) == (read["quality"], read["text"])
                assert mine["utility"] == pytest.approx(read["utility"], rel=1e-14, abs=1e-15)
                for field in ("semantic", "structural"):
                    assert (mine[field] is None) == (read[field] is None), field
                    assert mine[field] == pytest.approx(read[field], abs=1e-6)
                assert [o for _, o in mine["outcomes"]] == [o for _, o in read["outcomes"]]
                assert [s for s, _ in mine["outcomes"]] == pytest.approx([s for s, _ in read["outcomes"]], abs=1e-6)
    assert any(r["outcomes"] for r in ours) and any(r["structural"] is not None for r in ours)
    assert len({r["utility"] for r in ours}) > 2, "feedback moved some utilities off the prior"


def test_a_settled_search_asks_nothing_of_its_candidates_and_ranks_as_one_that_reads_them(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    first = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    kb.record_feedback(used=[h.id for h in first.hits[:2]], outcome=True, task=LAMP)
    kb.record_feedback(used=[first.hits[3].id], outcome=False)
    kept_current(kb)
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    with_kept = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    assert not {"search_candidates_feedback", "search_candidates_score"} & set(asked)
    assert any(h.breakdown.outcomes for h in with_kept.hits), "the task outcomes were worked out too"
    kb.student.context.feedback_in_background = None  # the request answers
    asked.clear()
    without = kb.search(LAMP, **QUERY)  # type: ignore[arg-type]
    assert "search_candidates_feedback" in asked
    assert [h.id for h in with_kept.hits] == [h.id for h in without.hits]
    assert [h.score for h in with_kept.hits] == pytest.approx([h.score for h in without.hits], abs=1e-6)


def test_feedback_from_another_process_is_seen_by_the_next_search(
    kb: KnowledgeBase, searcher: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    kept_current(searcher)
    before = searcher.search(LAMP, **QUERY)  # type: ignore[arg-type]
    hit = before.hits[0]
    asked: list[str] = []
    record_reads(searcher, monkeypatch, asked)
    kb.record_feedback(used=[hit.id], outcome=False)  # another process: the writer's
    after = searcher.search(LAMP, **QUERY)  # type: ignore[arg-type]
    assert "search_candidates_feedback" in asked, "the kept values are of the feedback version before the write"
    [same] = [h for h in after.hits if h.id == hit.id] or [None]
    assert same is None or same.breakdown.quality < hit.breakdown.quality


def test_a_feedback_write_bumps_a_feedback_stripe_in_its_transaction_not_the_search_version(kb: KnowledgeBase) -> None:
    [added] = kb.add_experiences([experience(1)]).ids
    ctx = kb.student.context
    before = ctx.versions()
    assert before.search is not None and before.feedback is not None and before.feedback.startswith(before.search)
    kb.record_feedback(retrieved=[added], used=[added], outcome=True)
    after = ctx.versions()
    assert after.search == before.search and after.feedback not in (before.feedback, None)
    stripes = kb.gateway.driver.execute_query("MATCH (s:FeedbackStripe {kb: $kb}) RETURN count(s) AS n",
                                              kb=kb.namespace, database_=kb.gateway.database).records[0]["n"]
    assert stripes == 1, "one stripe a transaction"
    kb.record_feedback(retrieved=[added])  # a counter a hit shows (kbgraph.search.student.kept_hits)
    assert ctx.versions().feedback != after.feedback and ctx.versions().search == before.search
