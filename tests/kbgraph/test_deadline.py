"""The bound on waiting for Neo4j: a slow call on a server that answers is awaited, a call on one
that stopped answering fails after the bound (pure threading; the real server cases are in
tests/reliability/test_timeouts.py)."""

from __future__ import annotations

import time

import pytest

from kbgraph.deadline import Neo4jTimeoutError, within


def slow(seconds: float, value: str = "done") -> str:
    time.sleep(seconds)
    return value


def test_a_call_within_the_bound_returns_its_value_and_raises_its_own_errors() -> None:
    assert within(1.0, "quick", lambda: "ok") == "ok"
    with pytest.raises(ZeroDivisionError):
        within(1.0, "broken", lambda: 1 / 0)


def test_a_slow_call_is_awaited_while_the_server_answers() -> None:
    probes: list[float] = []

    def alive() -> bool:
        probes.append(time.monotonic())
        return True

    assert within(0.1, "big write", lambda: slow(0.45), alive) == "done"
    assert len(probes) >= 3


def test_a_call_fails_once_the_server_stops_answering() -> None:
    started = time.monotonic()
    with pytest.raises(Neo4jTimeoutError, match=r"did not answer within 0.2 s \(frozen\)"):
        within(0.2, "frozen", lambda: slow(5.0), lambda: False)
    assert time.monotonic() - started < 2.0
