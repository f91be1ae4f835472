"""A suite report's requests grouped by how many changes they ask for and by domain
(kbgraph.search.eval.by_changes, ``kbgraph eval --by-changes``): each query once, in its strictest
leak-free view, with kbgraph's margin over the best baseline and over plain cosine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.search.eval.by_changes import changes_by_run, groups_by_changes
from kbgraph.search.eval.report import HeldOutRow, OwnTextRow, SetRow, SuiteReport
from tests.cli_in_process import run_kbgraph


def _figures(kbgraph: float, cosine: float, tfidf: float) -> dict[str, float]:
    return {"kbgraph": kbgraph, "minilm_cosine": cosine, "tfidf": tfidf}


def _report(own: dict[str, dict[str, float]], held: dict[str, dict[str, float]] | None) -> SuiteReport:
    row = SetRow(
        set="short", queries=len(own), kbgraph=0.0, baselines={}, best_baseline="tfidf", margin=0.0,
        own_text_hidden=0.0, own_text_margin=0.0, seconds=0.0, namespaces=["n"],
        per_query={qid: {"kbgraph": 0.0} for qid in own},
        own_text=OwnTextRow(queries=len(own), kbgraph=0.0, baselines={}, best_baseline="tfidf", margin=0.0, hiding=0,
                            unjudged=0, runs_left_out=0, per_query=own),
        held_out=None if held is None else HeldOutRow(queries=len(held), kbgraph=0.0, baselines={}, best_baseline="tfidf",
                                                      margin=0.0, namespace="h", runs_left_out=1, per_query=held))
    return SuiteReport(k=10, weights={}, ablations={}, rows=[row], worst_set="short", worst_margin=0.0)


RELEVANT = {"short": {"q1": ["cancel-1"], "q2": ["cancel-and-return-1"], "q3": ["cancel-and-return-2"]}}
DOMAINS = {"short": {"q1": "retail", "q2": "retail", "q3": "airline"}}
CHANGES = {"cancel-1": 1, "cancel-and-return-1": 2, "cancel-and-return-2": 2}


def test_each_query_counts_once_in_its_strictest_view_grouped_by_its_changes_and_domain() -> None:
    # q2 is judged held out (where it scores 1.0) and with its own text hidden (0.0): held out counts.
    own = {"q1": _figures(0.8, 0.3, 0.1), "q2": _figures(0.0, 0.0, 0.0), "q3": _figures(0.5, 0.1, 0.6)}
    groups = groups_by_changes(_report(own, {"q2": _figures(1.0, 0.2, 0.4)}), RELEVANT, DOMAINS, CHANGES, resamples=200)
    by_key = {(g.changes, g.domain): g for g in groups}
    assert sorted(by_key) == [("one", "all"), ("one", "retail"), ("several", "airline"), ("several", "all"),
                              ("several", "retail")]
    one = by_key[("one", "retail")]
    assert (one.queries, one.kbgraph, one.best_baseline) == (1, 0.8, "minilm_cosine")
    assert one.over_cosine.mean == pytest.approx(0.5)
    several = by_key[("several", "all")]
    assert several.queries == 2 and several.kbgraph == 0.75
    # The best baseline over both: TF-IDF 0.5 against cosine 0.15; the margin is per query, paired.
    assert several.best_baseline == "tfidf" and several.over_best.mean == pytest.approx(0.25)


def test_a_query_without_a_known_relevant_run_is_left_out_and_a_report_without_the_own_text_view_is_refused() -> None:
    own = {"q1": _figures(0.8, 0.3, 0.1)}
    assert groups_by_changes(_report(own, None), {"short": {"q1": ["unknown-run"]}}, DOMAINS, CHANGES) == []
    earlier = _report(own, None)
    earlier.rows[0].own_text = None
    with pytest.raises(InvalidInputError, match="no own-text view"):
        groups_by_changes(earlier, RELEVANT, DOMAINS, CHANGES)


def _run(run_id: str, actions: list[str]) -> str:
    return json.dumps({"id": run_id, "task": "t", "domain": "retail", "outcome": {"success": True},
                       "steps": [{"action": a, "arguments": {}} for a in actions]})


def test_a_runs_changes_are_its_distinct_state_changing_operations(tmp_path: Path) -> None:
    corpus = tmp_path / "runs.jsonl"
    corpus.write_text("\n".join([
        _run("a", ["get_order_details", "cancel_pending_order"]),
        _run("b", ["cancel_pending_order", "get_order_details", "return_delivered_order_items", "cancel_pending_order"]),
        _run("c", ["get_order_details"]),
        "not a run",
    ]) + "\n")
    assert changes_by_run([corpus]) == {"a": 1, "b": 2, "c": 0}


def test_the_command_reads_a_saved_report_and_the_sets_it_names(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "trajectories").mkdir(parents=True)
    (data / "trajectories" / "retail.jsonl").write_text("\n".join([
        _run("cancel-1", ["cancel_pending_order"]), _run("cancel-and-return-1", ["cancel_pending_order",
                                                                                "return_delivered_order_items"]),
    ]) + "\n")
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "short_queries.jsonl").write_text("\n".join(json.dumps({"qid": q, "query": f"request {q}", "domain": "retail"})
                                                      for q in ("q1", "q2")) + "\n")
    (dev / "short_qrels.jsonl").write_text("\n".join(json.dumps({"qid": q, "doc_id": d, "rel": 1})
                                                     for q, d in (("q1", "cancel-1"), ("q2", "cancel-and-return-1"))) + "\n")
    report = tmp_path / "report.json"
    report.write_text(_report({"q1": _figures(0.8, 0.3, 0.1), "q2": _figures(0.6, 0.1, 0.2)}, None).model_dump_json())
    done = run_kbgraph(dict(os.environ), "eval", "--by-changes", str(report), "--data", str(data), "--dev-sets", str(dev),
                       "--json")
    assert done.returncode == 0, done.stderr
    groups = {(g["changes"], g["domain"]): g for g in json.loads(done.stdout)}
    assert groups[("one", "retail")]["kbgraph"] == 0.8 and groups[("several", "retail")]["kbgraph"] == 0.6
    table = run_kbgraph(dict(os.environ), "eval", "--by-changes", str(report), "--data", str(data), "--dev-sets", str(dev))
    assert table.returncode == 0 and "several" in table.stdout and "+0.500" in table.stdout
    missing = run_kbgraph(dict(os.environ), "eval", "--by-changes", str(tmp_path / "none.json"))
    assert missing.returncode != 0 and "cannot read it" in missing.stderr
