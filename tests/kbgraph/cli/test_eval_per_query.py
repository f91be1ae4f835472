"""``kbgraph eval --suite --per-query`` without ``--json``: after the table, per set (and per held-out
set), the queries where kbgraph is below that set's best baseline, worst first."""

from __future__ import annotations

import pytest

from kbgraph.cli.eval import _print_queries_below
from kbgraph.search.eval.suite import HeldOutRow, SetRow, SuiteReport


def _row(name: str, per_query: dict[str, dict[str, float]], held_out: HeldOutRow | None = None) -> SetRow:
    return SetRow(set=name, queries=len(per_query), kbgraph=0.5, baselines={"tfidf": 0.2, "minilm_cosine": 0.4},
                  best_baseline="minilm_cosine", margin=0.1, own_text_hidden=0.5, own_text_margin=0.1,
                  held_out=held_out, seconds=1.0, namespaces=["ns"], per_query=per_query)


def test_the_queries_below_the_best_baseline_are_listed_worst_first_for_each_set_and_its_held_out_corpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    held = HeldOutRow(kbgraph=0.1, baselines={"tfidf": 0.3, "minilm_cosine": 0.2}, best_baseline="tfidf", margin=-0.2,
                      namespace="ns-held", runs_left_out=2, queries=1,
                      per_query={"q1": {"kbgraph": 0.1, "tfidf": 0.3, "minilm_cosine": 0.2}})
    report = SuiteReport(k=10, weights={}, ablations={}, worst_set="short", worst_margin=0.1, rows=[
        _row("short", {"q1": {"kbgraph": 0.0, "tfidf": 0.9, "minilm_cosine": 0.2},
                       "q2": {"kbgraph": 1.0, "tfidf": 0.0, "minilm_cosine": 0.5},
                       "q3": {"kbgraph": 0.1, "tfidf": 0.0, "minilm_cosine": 0.7}}, held),
        _row("even", {"q9": {"kbgraph": 0.4, "tfidf": 0.4, "minilm_cosine": 0.4}}),
    ])
    _print_queries_below(report)
    printed = capsys.readouterr().out
    # Judged against the set's best baseline (minilm_cosine), not against any baseline: q1 is
    # below tfidf by more, but below minilm_cosine by less than q3.
    assert "short: kbgraph below minilm_cosine on 2 of 3 queries" in printed
    assert printed.index("q3") < printed.index("q1") and "q2" not in printed
    assert "short, held out: kbgraph below tfidf on 1 of 1 queries" in printed
    assert "even: kbgraph is below minilm_cosine on no query" in printed, "a tie is not below"
