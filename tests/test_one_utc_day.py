"""The helper that keeps exact comparisons of decayed utilities within one UTC day."""

from __future__ import annotations

from datetime import date

from tests.one_utc_day import on_one_utc_day


def test_a_read_within_one_day_is_done_once() -> None:
    reads: list[int] = []
    assert on_one_utc_day(lambda: reads.append(1) or len(reads), today=lambda: date(2026, 12, 1)) == 1
    assert reads == [1]


def test_a_read_that_midnight_crossed_is_done_again_on_the_new_day() -> None:
    days = iter([date(2026, 12, 1), date(2026, 12, 2)])
    reads: list[int] = []
    assert on_one_utc_day(lambda: reads.append(1) or len(reads), today=lambda: next(days)) == 2
    assert reads == [1, 1]
