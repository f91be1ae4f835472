"""Two suite reports compared by statistics (search/eval/compare.py): each set in each of its
leak-free views, and the pooled change that decides a default, each query counted once."""

from __future__ import annotations

from kbgraph.search.eval.compare import HELD_OUT_VIEW, OWN_TEXT_VIEW, compare_reports, strictest_per_query
from kbgraph.search.eval.report import HeldOutRow, SetRow, SuiteReport


def _row(own: dict[str, float], held: dict[str, float] | None = None) -> SetRow:
    held_row = None if held is None else HeldOutRow(
        queries=len(held), kbgraph=0.0, baselines={}, best_baseline="tfidf", margin=0.0, namespace="h",
        runs_left_out=1, per_query={qid: {"kbgraph": value} for qid, value in held.items()})
    return SetRow(set="short", queries=len(own), kbgraph=0.0, baselines={}, best_baseline="tfidf", margin=0.0,
                  own_text_hidden=0.0, own_text_margin=0.0, held_out=held_row, seconds=0.0, namespaces=["n"],
                  per_query={qid: {"kbgraph": value, "own_text_hidden": value} for qid, value in own.items()})


def _report(row: SetRow) -> SuiteReport:
    return SuiteReport(k=10, weights={}, ablations={}, rows=[row], worst_set=row.set, worst_margin=0.0)


def test_a_query_counts_in_the_held_out_view_where_it_judges_it_and_with_its_own_text_hidden_elsewhere() -> None:
    views = {OWN_TEXT_VIEW: {"q1": 0.2, "q2": 0.4}, HELD_OUT_VIEW: {"q1": 0.9}}
    assert strictest_per_query(views) == {"q1": 0.9, "q2": 0.4}
    assert strictest_per_query({OWN_TEXT_VIEW: {"q1": 0.2}}) == {"q1": 0.2}


def test_the_pooled_change_counts_every_query_once_even_those_the_held_out_corpus_cannot_judge() -> None:
    # q1 is judged held out (unchanged there, though its own-text figure moved); q2 and q3 only with
    # their own text hidden, where both gained: the pooled change is their mean over three queries.
    before = _report(_row({"q1": 0.5, "q2": 0.0, "q3": 0.0}, held={"q1": 0.5}))
    after = _report(_row({"q1": 0.0, "q2": 0.3, "q3": 0.3}, held={"q1": 0.5}))
    comparison = compare_reports(before, after, resamples=200)
    assert round(comparison.verdict.pooled.mean, 6) == 0.2
    by_view = {change.view: change for change in comparison.sets}
    assert by_view[HELD_OUT_VIEW].change.mean == 0.0
    assert round(by_view[OWN_TEXT_VIEW].change.mean, 6) == round(0.1 / 3, 6)
