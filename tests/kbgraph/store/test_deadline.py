"""The bound on waiting for Neo4j: a slow call on a server that answers is awaited, a call on one
that stopped answering fails after the bound (pure threading; the real server cases are in
tests/reliability/test_timeouts.py)."""

from __future__ import annotations

import time

import pytest

from kbgraph.store.deadline import Neo4jTimeoutError, within


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


def test_workers_are_reused_and_concurrent_calls_never_wait_for_each_other() -> None:
    import threading

    idle_before = {t for t in threading.enumerate() if t.name == "kbgraph-neo4j"}
    workers = {within(1.0, "quick", threading.current_thread) for _ in range(50)}
    assert len(workers - idle_before) <= 1, "sequential calls reuse workers, not a thread each"
    # Eight calls that each wait for all the others finish only if each has a worker of its own.
    barrier = threading.Barrier(8, timeout=5)
    results: list[str] = []
    callers = [threading.Thread(target=lambda: results.append(within(10.0, "together", lambda: str(barrier.wait()))))
               for _ in range(8)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    assert sorted(results) == [str(i) for i in range(8)]


def test_a_worker_left_behind_by_an_abandoned_call_does_not_hold_up_the_next_calls() -> None:
    release = __import__("threading").Event()
    with pytest.raises(Neo4jTimeoutError):
        within(0.1, "stuck", release.wait, lambda: False)
    try:
        assert within(1.0, "next", lambda: "answered") == "answered"
    finally:
        release.set()
