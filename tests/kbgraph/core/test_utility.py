"""The learning loop's pure formulas (docs/design.md §4–5), without a database."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from kbgraph.core.utility import (
    ability,
    bottom_fraction,
    calendar_days_between,
    decay_rate_per_day,
    decayed,
    edv_verdict,
    growth_checkpoint_reached,
    impact_after_use,
    maintenance_score,
    next_growth_checkpoint,
    quality_update,
    running_mean,
    utility,
)


def test_quality_moves_towards_the_outcome_at_the_learning_rate() -> None:
    assert quality_update(0.5, 1.0, 0.2) == pytest.approx(0.6)
    assert quality_update(0.5, 0.0, 0.2) == pytest.approx(0.4)
    assert quality_update(0.7, 0.7, 0.9) == pytest.approx(0.7)
    q = 0.5
    for _ in range(50):
        q = quality_update(q, 1.0, 0.2)
    assert q == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("args", [(1.2, 1.0, 0.2), (0.5, -0.1, 0.2), (0.5, 1.0, 1.5), (math.nan, 1.0, 0.2)])
def test_quality_update_refuses_values_outside_the_unit_interval(args: tuple[float, float, float]) -> None:
    with pytest.raises(ValueError):
        quality_update(*args)


def test_utility_halves_every_half_life_unless_reinforced() -> None:
    rate = decay_rate_per_day(30)
    assert utility(0.8, 0, rate) == pytest.approx(0.8)
    assert utility(0.8, 30, rate) == pytest.approx(0.4)
    assert utility(0.8, 60, rate) == pytest.approx(0.2)
    assert decay_rate_per_day(0) == 0.0 and utility(0.8, 1000, 0.0) == pytest.approx(0.8)


def test_utility_adds_the_decayed_usage_impact_and_stays_in_the_unit_interval() -> None:
    rate = decay_rate_per_day(30)
    assert utility(0.5, 0, rate, impact=0.1, days_since_impact=30) == pytest.approx(0.55)
    assert utility(0.99, 0, rate, impact=0.5) == 1.0
    assert utility(0.0, 0, rate, impact=-0.3) == 0.0


def test_usage_impact_accumulates_successes_and_failures_with_decay() -> None:
    rate = decay_rate_per_day(10)
    impact = impact_after_use(0.0, 0.0, rate, outcome=1.0, step=0.05)
    assert impact == pytest.approx(0.05)
    impact = impact_after_use(impact, 10.0, rate, outcome=0.0, step=0.05)
    assert impact == pytest.approx(0.025 - 0.05)
    assert impact_after_use(0.0, 0.0, rate, outcome=0.5, step=0.05) == 0.0


def test_calendar_days_count_utc_dates_so_a_day_s_experiences_stay_equal() -> None:
    now = datetime(2026, 1, 31, 9, 30, tzinfo=UTC)
    early, late = datetime(2026, 1, 31, 0, 0, 1, tzinfo=UTC), datetime(2026, 1, 31, 9, 29, 59, tzinfo=UTC)
    assert calendar_days_between(early, now) == calendar_days_between(late, now) == 0
    assert calendar_days_between(datetime(2026, 1, 30, 23, 59, 59, tzinfo=UTC), now) == 1
    assert calendar_days_between(now - timedelta(days=3, hours=12), now) == 4  # 3.5 days, from the 27th
    # A date is taken in UTC, whatever the zone the time was written in: 01:00 at +02:00 is the 30th.
    assert calendar_days_between(datetime(2026, 1, 31, 1, 0, tzinfo=timezone(timedelta(hours=2))), now) == 1
    assert calendar_days_between(None, now) == 0
    assert calendar_days_between(now + timedelta(days=2), now) == 0
    assert decayed(1.0, -5, 0.1) == 1.0, "a time in the future (a clock skew) decays nothing"


def test_maintenance_score_is_autorefine_equation_one() -> None:
    s, u, r, eps = 3, 4, 10, 0.01
    assert maintenance_score(s, u, r) == pytest.approx(s / (u + eps) * math.log(1 + u) * (1 + u / (r + eps)))
    assert maintenance_score(0, 0, 50) == 0.0, "retrieved but never used"
    assert maintenance_score(0, 5, 5) == 0.0, "used but never successful"
    # Used more often when retrieved, and more successful, scores higher.
    assert maintenance_score(5, 5, 5) > maintenance_score(5, 5, 50) > maintenance_score(1, 5, 50)
    with pytest.raises(ValueError):
        maintenance_score(-1, 0, 0)


def test_bottom_fraction_is_reproducible_and_rounds_down() -> None:
    scores = {"a": 0.5, "b": 0.1, "c": 0.1, "d": 2.0, "e": 1.0}
    assert bottom_fraction(scores, 0.2) == ["b"]
    assert bottom_fraction(scores, 0.4) == ["b", "c"]
    assert bottom_fraction(scores, 0.1) == []
    assert bottom_fraction({}, 0.5) == []


def test_maintenance_runs_at_exponentially_spaced_points_of_growth() -> None:
    assert not growth_checkpoint_reached(0, 9)
    assert growth_checkpoint_reached(0, 10) and growth_checkpoint_reached(9, 10)
    assert not growth_checkpoint_reached(10, 19)
    assert growth_checkpoint_reached(19, 20) and growth_checkpoint_reached(20, 45)
    assert not growth_checkpoint_reached(40, 79) and growth_checkpoint_reached(79, 80)
    assert not growth_checkpoint_reached(30, 30)
    crossings = [n for n in range(1, 700) if growth_checkpoint_reached(n - 1, n)]
    assert crossings == [10, 20, 40, 80, 160, 320, 640]
    assert next_growth_checkpoint(0) == 10 and next_growth_checkpoint(45) == 80 and next_growth_checkpoint(80) == 160


def test_edv_verdict_follows_the_votes() -> None:
    assert edv_verdict({"a": True, "b": True}) == ("shared", ["a", "b"])
    assert edv_verdict({"b": True, "a": False, "c": True}) == ("private", ["b", "c"])
    assert edv_verdict({"a": False, "b": False}) == ("rejected", [])
    assert edv_verdict({}) == ("rejected", [])


def test_ability_is_smoothed_towards_one_half() -> None:
    assert ability(0, 0) == 0.5
    assert ability(1, 1) == pytest.approx(2 / 3)
    assert ability(90, 100) > ability(1, 1)
    with pytest.raises(ValueError):
        ability(3, 2)


def test_running_mean_counts_every_report() -> None:
    mean, n = running_mean(None, 0, 1.0)
    mean, n = running_mean(mean, n, 0.0)
    mean, n = running_mean(mean, n, -1.0)
    assert (mean, n) == (pytest.approx(0.0), 3)
