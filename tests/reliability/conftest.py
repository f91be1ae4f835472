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
