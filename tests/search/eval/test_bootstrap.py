"""The paired bootstrap over queries and the rule a default is adopted by (search/eval/bootstrap.py)."""

from __future__ import annotations

import math

import pytest

from kbgraph.search.eval.bootstrap import HARM_MARGIN, paired_bootstrap, verdict


def test_the_interval_holds_the_mean_and_is_the_same_for_the_same_changes() -> None:
    changes = [0.1, -0.05, 0.2, 0.0, 0.3, 0.1, -0.1, 0.05]
    first = paired_bootstrap(changes, resamples=2000)
    assert first.mean == pytest.approx(sum(changes) / len(changes), abs=1e-6)
    assert first.low <= first.mean <= first.high
    assert first == paired_bootstrap(changes, resamples=2000)
    assert first.queries == len(changes)


def test_equal_changes_give_a_point_interval_and_none_an_empty_one() -> None:
    assert paired_bootstrap([0.25] * 5) .model_dump() == {"queries": 5, "mean": 0.25, "low": 0.25, "high": 0.25}
    assert paired_bootstrap([]).model_dump() == {"queries": 0, "mean": 0.0, "low": 0.0, "high": 0.0}


def test_nan_changes_are_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        paired_bootstrap([0.1, math.nan])


def test_a_change_is_adopted_when_the_pooled_interval_is_above_zero_and_no_set_is_harmed() -> None:
    gains = {"a": [0.2, 0.1, 0.3, 0.2] * 10, "b": [0.0, 0.05, -0.05, 0.0] * 10}
    assert verdict(gains, resamples=2000).adopt


def test_one_set_wholly_below_the_harm_margin_vetoes_it() -> None:
    changes = {"a": [0.4, 0.5, 0.3, 0.45] * 10, "b": [-(HARM_MARGIN + 0.05), -(HARM_MARGIN + 0.1)] * 10}
    result = verdict(changes, resamples=2000)
    assert result.pooled.low > 0
    assert not result.adopt and result.harmed == ["b"]


def test_a_pooled_interval_that_reaches_zero_is_no_default() -> None:
    assert not verdict({"a": [0.3, -0.3, 0.2, -0.2, 0.01]}, resamples=2000).adopt
