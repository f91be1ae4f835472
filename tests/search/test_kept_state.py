"""When a search of a large namespace waits for the namespace's version before its vector and
full-text channels start (kbgraph.search.student.kept_state): only while the kept state has been
current; otherwise its index queries start at once and the version is checked beside them, at most
every ``recheck_seconds``."""

from __future__ import annotations

from kbgraph.search.student.kept_state import KeptState


def test_a_search_waits_for_the_version_only_while_the_kept_state_has_been_current() -> None:
    state = KeptState(recheck_seconds=3600.0)
    assert state.plan() == (True, False), "nothing known: check, but do not wait"
    assert state.plan() == (False, False), "checked a moment ago: the indexes answer, no check"
    state.saw(True)
    assert state.plan() == (True, True) and state.plan() == (True, True), "current: every search waits"
    state.saw(False)  # a write changed the version
    assert state.plan() == (False, False), "checked a moment ago"


def test_without_a_recheck_interval_every_search_checks() -> None:
    state = KeptState(recheck_seconds=0.0)
    assert [state.plan() for _ in range(3)] == [(True, False)] * 3


def test_a_version_that_moved_a_moment_ago_says_writes_are_coming_in() -> None:
    state = KeptState(moving_seconds=3600.0)
    assert not state.moving()
    state.moved()
    assert state.moving()
    assert not KeptState(moving_seconds=0.0).moving()
