"""Specification of kbgraph.search.eval.metrics (values worked out by hand on tiny rankings) and of the
evaluation-file loaders' error messages (kbgraph.search.eval.data). No database, no model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from kbgraph.search.eval.data import EvalDataError, load_qrels, load_queries, qrels_by_query
from kbgraph.search.eval.metrics import dcg_at_k, evaluate, mrr, ndcg_at_k, recall_at_k, with_queries_replaced

LOG2_3 = math.log2(3)  # discount of rank 2; rank 3 is log2(4) = 2

# --------------------------------------------------------------------------- nDCG


def test_ndcg_binary_by_hand() -> None:
    # relevant a, b, c; ranking a, x, b (k=3): DCG = 1/1 + 0 + 1/2; IDCG = 1 + 1/log2(3) + 1/2
    value = ndcg_at_k(["a", "x", "b"], {"a": 1, "b": 1, "c": 1}, k=3)
    assert value == pytest.approx(1.5 / (1.5 + 1 / LOG2_3))
    assert value == pytest.approx(0.70391, abs=1e-5)


def test_ndcg_graded_uses_linear_gain() -> None:
    # rel a=2, b=1; ranking b, a: DCG = 1 + 2/log2(3); IDCG = 2 + 1/log2(3)
    value = ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, k=2)
    assert value == pytest.approx((1 + 2 / LOG2_3) / (2 + 1 / LOG2_3))


def test_ndcg_cut_at_k_and_ideal_from_the_qrels() -> None:
    # three relevant documents but k=2: the ideal is two hits, so a, b reaches 1.0
    assert ndcg_at_k(["a", "b", "x"], {"a": 1, "b": 1, "c": 1}, k=2) == pytest.approx(1.0)
    # a hit below k does not count
    assert ndcg_at_k(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    # unjudged and zero-judged ids are irrelevant; the ideal ignores the zero judgement
    assert ndcg_at_k(["z", "a"], {"a": 1, "z": 0}, k=10) == pytest.approx(1 / LOG2_3)


def test_ndcg_repeated_id_counts_once() -> None:
    assert ndcg_at_k(["a", "a", "b"], {"a": 1, "b": 1}, k=2) == pytest.approx(1.0)
    assert ndcg_at_k(["a", "a"], {"a": 1, "b": 1}, k=2) == pytest.approx(1 / (1 + 1 / LOG2_3))


def test_ndcg_undefined_without_relevant_documents() -> None:
    with pytest.raises(ValueError, match="without relevant"):
        ndcg_at_k(["a"], {"a": 0}, k=10)
    with pytest.raises(ValueError, match="k must be"):
        ndcg_at_k(["a"], {"a": 1}, k=0)


def test_dcg_by_hand() -> None:
    assert dcg_at_k([1, 0, 1, 1], k=3) == pytest.approx(1.5)


# --------------------------------------------------------------------------- recall and MRR


def test_recall_by_hand() -> None:
    relevance = {"a": 1, "b": 1, "c": 1}
    assert recall_at_k(["a", "x", "b"], relevance, k=3) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "x", "b"], relevance, k=1) == pytest.approx(1 / 3)
    assert recall_at_k([], relevance, k=10) == 0.0
    assert recall_at_k(["a", "a"], {"a": 1, "b": 1}, k=10) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="without relevant"):
        recall_at_k(["a"], {}, k=10)


def test_mrr_over_whole_ranking_or_at_k() -> None:
    assert mrr(["x", "y", "a", "b"], {"a": 1, "b": 1}) == pytest.approx(1 / 3)
    assert mrr(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    assert mrr(["a"], {"a": 1}, k=1) == 1.0
    assert mrr(["x", "x", "a"], {"a": 1}) == pytest.approx(1 / 2)  # the repeat is dropped
    assert mrr(["x"], {"x": 0}) == 0.0


# --------------------------------------------------------------------------- evaluate


def test_evaluate_means_per_query_skipped_and_missing() -> None:
    qrels = {
        "q1": {"a": 1, "b": 1},  # ranking a, x, b: nDCG (1 + 1/2) / (1 + 1/log2 3), recall 1, RR 1
        "q2": {"c": 1},  # ranking x, c: nDCG 1/log2 3, recall 1, RR 1/2
        "q3": {"d": 0},  # nothing relevant: skipped
        "q4": {"e": 1},  # no ranking: scored as empty, all 0
    }
    rankings = {"q1": ["a", "x", "b"], "q2": ["x", "c"], "q3": ["d"], "unjudged": ["a"]}
    result = evaluate(rankings, qrels, k=10)
    q1 = 1.5 / (1 + 1 / LOG2_3)
    assert result["per_query"]["q1"] == pytest.approx({"ndcg": q1, "recall": 1.0, "mrr": 1.0})
    assert result["per_query"]["q2"] == pytest.approx({"ndcg": 1 / LOG2_3, "recall": 1.0, "mrr": 0.5})
    assert result["per_query"]["q4"] == {"ndcg": 0.0, "recall": 0.0, "mrr": 0.0}
    assert result["evaluated"] == 3
    assert result["skipped"] == ["q3"]
    assert result["missing"] == ["q4"]
    assert set(result["per_query"]) == {"q1", "q2", "q4"}
    assert result["ndcg"] == pytest.approx((q1 + 1 / LOG2_3) / 3)
    assert result["recall"] == pytest.approx(2 / 3)
    assert result["mrr"] == pytest.approx(1.5 / 3)
    assert result["k"] == 10


def test_evaluate_k_cuts_ndcg_and_recall_but_not_mrr() -> None:
    result = evaluate({"q": ["x", "a"]}, {"q": {"a": 1}}, k=1)
    assert result["ndcg"] == 0.0 and result["recall"] == 0.0
    assert result["mrr"] == pytest.approx(0.5)


def test_evaluate_nothing_to_score() -> None:
    result = evaluate({}, {"q": {"a": 0}})
    assert result["evaluated"] == 0 and result["ndcg"] == 0.0 and result["skipped"] == ["q"]


# --------------------------------------------------------------------------- loaders


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_queries_reads_the_optional_fields(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.jsonl", [
        json.dumps({"qid": "q0", "query": "return the kettle", "domain": "retail",
                    "steps_so_far": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}}]}),
        "",
        json.dumps({"qid": "q1", "query": "top product", "domain": "web", "exclude": ["webarena-0"]}),
    ])
    first, second = load_queries(path)
    assert first.steps_so_far is not None and first.steps_so_far[0].action == "get_order_details"
    assert first.exclude == frozenset()
    assert second.steps_so_far is None and second.exclude == frozenset({"webarena-0"})


def test_load_queries_reports_every_bad_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "q.jsonl", [
        json.dumps({"qid": "q0", "query": "fine", "domain": "retail"}),
        json.dumps({"qid": "q1", "domain": "retail"}),
        "{not json",
        json.dumps({"qid": "q2", "query": "x", "domain": "retail", "exclude": "webarena-0"}),
        json.dumps({"qid": "q0", "query": "again", "domain": "retail"}),
        json.dumps({"qid": "q3", "query": "   ", "domain": "retail", "excludes": ["a"]}),
        json.dumps({"qid": "q4", "query": "x", "domain": "retail", "steps_so_far": [{"arguments": {}}]}),
        "[1, 2]",
    ])
    with pytest.raises(EvalDataError) as caught:
        load_queries(path)
    problems = caught.value.problems
    assert f"{path}:2: query: Field required" in problems
    assert any(p.startswith(f"{path}:3: (record): invalid JSON at column 2") for p in problems)
    assert f"{path}:4: exclude: must be a list of document ids" in problems
    assert f"{path}:5: qid: 'q0' repeats the query of {path}:1" in problems
    assert f"{path}:6: query: must not be blank" in problems
    assert f"{path}:6: excludes: Extra inputs are not permitted" in problems
    assert f"{path}:7: steps_so_far.0.action: Field required" in problems
    assert f"{path}:8: (record): expected a JSON object, got list" in problems
    assert str(path) in str(caught.value)


def test_load_qrels_and_group(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.jsonl", [
        json.dumps({"qid": "q0", "doc_id": "a", "rel": 1}),
        json.dumps({"qid": "q0", "doc_id": "b", "rel": 0.5}),
        json.dumps({"qid": "q1", "doc_id": "a", "rel": 0}),
    ])
    assert qrels_by_query(load_qrels(path)) == {"q0": {"a": 1.0, "b": 0.5}, "q1": {"a": 0.0}}


def test_load_qrels_reports_every_bad_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.jsonl", [
        json.dumps({"qid": "q0", "doc_id": "a", "rel": 1}),
        json.dumps({"qid": "q0", "doc_id": "a", "rel": 2}),
        json.dumps({"qid": "q0", "doc_id": "b", "rel": "1"}),
        json.dumps({"qid": "q0", "doc_id": "c", "rel": -1}),
        json.dumps({"qid": "q0", "rel": 1}),
        json.dumps({"qid": "q0", "doc_id": "d", "rel": True}),
    ])
    with pytest.raises(EvalDataError) as caught:
        load_qrels(path)
    assert caught.value.problems == [
        f"{path}:2: doc_id: 'a' is judged twice for 'q0' (first at {path}:1)",
        f"{path}:3: rel: must be a number",
        f"{path}:4: rel: Input should be greater than or equal to 0",
        f"{path}:5: doc_id: Field required",
        f"{path}:6: rel: must be a number",
    ]


def test_loaders_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match="no such file"):
        load_qrels(tmp_path / "absent.jsonl")
    empty = _write(tmp_path / "empty.jsonl", [""])
    with pytest.raises(EvalDataError, match="empty file, no queries"):
        load_queries(empty)


def test_queries_asked_again_replace_their_figures_and_one_no_longer_judged_leaves_the_means() -> None:
    # q1 and q2 asked again with a run left out: q1 now finds its one relevant run first, q2 has
    # none left (not judged); q3 keeps its figure.
    base = evaluate({"q1": ["x", "a"], "q2": ["b"], "q3": ["c"]}, {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"z": 1}})
    again = evaluate({"q1": ["a"], "q2": ["b"]}, {"q1": {"a": 1}, "q2": {}})
    combined = with_queries_replaced(base, again, {"q1", "q2"})
    assert sorted(combined["per_query"]) == ["q1", "q3"] and combined["evaluated"] == 2
    assert combined["ndcg"] == pytest.approx(0.5) and combined["mrr"] == pytest.approx(0.5)
    assert combined["skipped"] == ["q2"]
