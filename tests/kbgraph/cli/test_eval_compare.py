"""``kbgraph eval --compare BEFORE AFTER``: two saved suite reports judged by statistics, each set on
its leak-free view, with the paired-bootstrap interval per set and pooled, and the adoption rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kbgraph.search.eval.suite import HeldOutRow, SetRow, SuiteReport
from tests.cli_in_process import run_kbgraph


def _report(short: dict[str, float], other: dict[str, float]) -> SuiteReport:
    def row(name: str, per_query: dict[str, dict[str, float]], held: HeldOutRow | None) -> SetRow:
        return SetRow(set=name, queries=len(per_query), kbgraph=0.5, baselines={"tfidf": 0.2}, best_baseline="tfidf",
                      margin=0.3, own_text_hidden=0.5, own_text_margin=0.3, held_out=held, seconds=1.0,
                      namespaces=["ns"], per_query=per_query)

    # "short" has a held-out view, whose figures count; its own per-query figures (with the leak) must not.
    held = HeldOutRow(kbgraph=0.5, baselines={"tfidf": 0.2}, best_baseline="tfidf", margin=0.3, namespace="held",
                      runs_left_out=1, queries=len(short),
                      per_query={q: {"kbgraph": v, "tfidf": 0.2} for q, v in short.items()})
    return SuiteReport(k=10, weights={}, ablations={}, worst_set="short", worst_margin=0.3, rows=[
        row("short", {q: {"kbgraph": 1.0, "own_text_hidden": 1.0} for q in short}, held),
        row("other", {q: {"kbgraph": 0.0, "own_text_hidden": v} for q, v in other.items()}, None),
    ])


def _write(path: Path, report: SuiteReport) -> Path:
    path.write_text(report.model_dump_json(), encoding="utf-8")
    return path


def test_a_change_up_on_one_set_and_flat_on_the_other_may_become_a_default(tmp_path: Path) -> None:
    queries = [f"q{i}" for i in range(40)]
    before = _write(tmp_path / "before.json", _report({q: 0.2 for q in queries}, {q: 0.5 for q in queries}))
    after = _write(tmp_path / "after.json", _report({q: 0.2 + (0.4 if i % 2 else 0.0) for i, q in enumerate(queries)},
                                                   {q: 0.5 for q in queries}))
    done = run_kbgraph(dict(os.environ), "eval", "--compare", str(before), str(after), "--json")
    assert done.returncode == 0, done.stderr
    comparison = json.loads(done.stdout)
    by_view = {(s["set"], s["view"]): s["change"]["mean"] for s in comparison["sets"]}
    # Each set on each of its leak-free views: "short" has a held-out corpus, "other" has not.
    assert by_view == {("short", "held out"): 0.2, ("short", "own text hidden"): 0.0, ("other", "own text hidden"): 0.0}
    assert comparison["verdict"]["adopt"] is True and comparison["verdict"]["pooled"]["low"] > 0

    table = run_kbgraph(dict(os.environ), "eval", "--compare", str(before), str(after))
    assert "pooled over 80 queries: +0.1000" in table.stdout and "may become a default" in table.stdout


def test_a_set_wholly_below_the_margin_in_any_of_its_views_vetoes_the_change(tmp_path: Path) -> None:
    queries = [f"q{i}" for i in range(40)]
    before = _write(tmp_path / "before.json", _report({q: 0.2 for q in queries}, {q: 0.5 for q in queries}))
    after = _write(tmp_path / "after.json", _report({q: 0.9 for q in queries}, {q: 0.4 for q in queries}))
    done = run_kbgraph(dict(os.environ), "eval", "--compare", str(before), str(after))
    assert done.returncode == 0, done.stderr
    assert "not a default: wholly below -0.02 on other (own text hidden)" in done.stdout

    # The held-out view of "short" gains; its own-text view (with the leak's source hidden) loses.
    short_down = _report({q: 0.2 for q in queries}, {q: 0.5 for q in queries})
    for figures in short_down.rows[0].per_query.values():
        figures["own_text_hidden"] = 0.5
    worse = _write(tmp_path / "worse.json", short_down)
    done = run_kbgraph(dict(os.environ), "eval", "--compare", str(before), str(worse))
    assert "wholly below -0.02 on short (own text hidden)" in done.stdout


def test_a_file_that_is_no_suite_report_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": 3}', encoding="utf-8")
    done = run_kbgraph(dict(os.environ), "eval", "--compare", str(bad), str(bad))
    assert done.returncode == 2
    assert f"--compare {bad}: not a suite report" in done.stderr and "Traceback" not in done.stderr
