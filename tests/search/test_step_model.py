"""Above ``exact_scan_max`` the step channel answers in the process, from the namespace's step texts
and the experiences that say them, kept with its search version (kbgraph.search.student.step_model):
the same experiences, in the same order, with the same scores as the exact Cypher scan, whatever
the filters; a write is seen by the next search. Real Neo4j, real MiniLM, the real agent runs."""

from __future__ import annotations

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import parse_query
from kbgraph.search.student.step_model import StepSayers, step_rows

from tests.search.test_student import record_reads
from tests.search.test_vector_model import experience, kept_current, params

EXECUTED = [
    [{"action": "find_user_id_by_name_zip", "arguments": {"first_name": "Yusuf", "zip": "80280"}}],
    [{"action": "get_reservation_details", "arguments": {"reservation_id": "ZFA04Y"}}],
    [{"action": "get_order_details", "arguments": {"order_id": "#W2378156"}},
     {"action": "return_delivered_order_items", "arguments": {"order_id": "#W2378156", "item_ids": ["1"]}}],
]


def said(kb: KnowledgeBase) -> StepSayers:
    return StepSayers.of(step_rows(kb.gateway, kb.namespace)(None).rows)


def step_vectors(kb: KnowledgeBase) -> list[list[float]]:
    vectors = []
    for steps in EXECUTED:
        query = parse_query({"task": "help the customer", "steps_so_far": steps})
        vectors += [list(map(float, v)) for v in kb.student._embed_query(query, kb.student.weights)["steps"]]
    return vectors


def test_the_kept_step_texts_answer_as_the_exact_scan_whatever_the_filters(
    real_runs_read_only: KnowledgeBase,
) -> None:
    kb = real_runs_read_only
    model = said(kb)
    assert len(model.sayers()) > 0 and any(s.size > 1 for s in model.sayers()), "texts said by several runs"
    for vector in step_vectors(kb):
        for p in (params(kb, domain=None), params(kb), params(kb, domain="airline"), params(kb, domains=["retail"]),
                  params(kb, kinds=["concrete"]), params(kb, min_success=0.5), params(kb, agent="someone")):
            for k in (1, 5, 50):
                ours = [(h.id, h.score) for h in model.nearest(vector, p, k)]
                rows = kb.gateway.read("search_step_scan", vector=vector, k=k, **p)[0]["rows"]
                theirs = [(r["id"], r["score"]) for r in rows]
                assert [i for i, _ in ours] == [i for i, _ in theirs], (k, p, ours, theirs)
                assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-6)


def test_a_search_with_steps_above_the_scan_limit_uses_the_kept_step_texts(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(24)])  # 24 experiences, 5 step texts
    # Above the limit in experiences, under it in step texts: without the kept texts the step
    # channel scans, the reference.
    query = {"k": 10, "domain": "retail", "weights": {"exact_scan_max": 10},
             "steps_so_far": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}}]}
    request = "I want to return the lamp and get my money back"
    kept_current(kb)
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    kept = kb.search(request, **query)  # type: ignore[arg-type]
    assert not {"search_step_scan", "search_step_vectors"} & set(asked), "answered from the kept step texts"
    kb.student.context.steps_in_background = None
    asked.clear()
    scanned = kb.search(request, **query)  # type: ignore[arg-type]
    assert "search_step_scan" in asked
    assert [h.id for h in kept.hits] == [h.id for h in scanned.hits]
    for ours, theirs in zip(kept.hits, scanned.hits, strict=True):
        assert ours.breakdown.fine == pytest.approx(theirs.breakdown.fine, abs=1e-6)
        assert ours.score == pytest.approx(theirs.score, abs=1e-6)


def test_a_write_is_seen_by_the_next_search(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(6)])
    before = said(kb)
    [added] = kb.add_experiences([experience(41)]).ids  # its steps: get_order_details, return_item_1
    after = said(kb)
    vector = step_vectors(kb)[1]  # any vector: every text is ranked
    everyone = params(kb, domain=None)
    assert added not in {h.id for h in before.nearest(vector, everyone, 50)}
    assert added in {h.id for h in after.nearest(vector, everyone, 50)}
