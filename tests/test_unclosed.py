"""The check of tests/unclosed.py: a session or driver a test drops unclosed is caught, naming where
it was opened; one closed (by `with` or close()) is not."""

from __future__ import annotations

import asyncio
import inspect

import neo4j

from tests.unclosed import _Watch

NOWHERE = "bolt://127.0.0.1:1"  # nothing is connected: opening a session or a driver connects nothing


def caught() -> list[str]:
    """What the check caught so far in this test, taken away (so that this test itself passes)."""
    found, _Watch.leaked[:] = list(_Watch.leaked), []
    return found


def test_a_session_or_driver_dropped_unclosed_is_caught_where_it_was_opened() -> None:
    with neo4j.GraphDatabase.driver(NOWHERE, auth=("neo4j", "x")) as driver:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        driver.session(database="neo4j")
        assert caught() == [f"Session opened at tests/test_unclosed.py:{line}"]
    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    neo4j.GraphDatabase.driver(NOWHERE, auth=("neo4j", "x"))
    assert caught() == [f"BoltDriver opened at tests/test_unclosed.py:{line}"]


def test_an_async_session_dropped_unclosed_is_caught() -> None:
    async def drop() -> None:
        driver = neo4j.AsyncGraphDatabase.driver(NOWHERE, auth=("neo4j", "x"))
        try:
            driver.session()
        finally:
            await driver.close()

    asyncio.run(drop())
    assert [found.split(" opened at ")[0] for found in caught()] == ["AsyncSession"]


def test_what_is_closed_is_not_caught() -> None:
    with neo4j.GraphDatabase.driver(NOWHERE, auth=("neo4j", "x")) as driver:
        with driver.session(database="neo4j"):
            pass
        session = driver.session(database="neo4j")
        session.close()
        del session
    assert caught() == []
