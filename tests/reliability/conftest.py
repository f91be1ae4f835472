"""Fixtures of the reliability suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.reliability.throwaway import ThrowawayNeo4j


@pytest.fixture(scope="module")
def throwaway_neo4j(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThrowawayNeo4j]:
    """One throw-away managed Neo4j per test module, for faults (kill -9, SIGSTOP) the shared test
    server must never see; tests start it again after killing it."""
    server = ThrowawayNeo4j(tmp_path_factory.mktemp("throwaway") / "instance")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Every module's inputs, counted once the whole run is over (test_fuzz's own line comes
    before the modules after it have run)."""
    import sys

    fuzz = sys.modules.get("tests.reliability.test_fuzz")
    tried = getattr(fuzz, "TRIED", None)
    if tried:
        terminalreporter.write_line(f"fuzz inputs tried per door, all modules: {tried} ({sum(tried.values())} in all)")
    # The kill -9 module's own print is captured by pytest: its figures are written here, uncaptured.
    kill9 = sys.modules.get("tests.reliability.test_kill9")
    faults, timings = getattr(kill9, "FAULTS", None), getattr(kill9, "TIMINGS", None)
    if faults:
        terminalreporter.write_line(
            f"feedback events across kill -9: {faults['feedback events confirmed']} confirmed, "
            f"{faults['feedback events counted']} counted "
            f"({faults['feedback counter increments counted twice (resent after a lost reply)']} counter increments "
            "counted twice: resent after a lost reply)")
        terminalreporter.write_line(f"faults injected: {dict(faults)}")
    if timings:
        terminalreporter.write_line(f"fault timings: {timings}")
