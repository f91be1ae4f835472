"""Calls to Neo4j run again as the driver's managed transactions are, and a lost server or a full
pool said in kbgraph's one line (what :class:`~kbgraph.store.gateway.Neo4jGateway` and its async
twin wrap every call in)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import neo4j

from kbgraph.core.errors import Neo4jUnavailableError
from kbgraph.store.pool import pool_exhausted, pool_occupancy

__all__ = ["LOST", "RetryBackoff", "guarded", "lost_neo4j", "retried", "retried_async"]

T = TypeVar("T")


class RetryBackoff:
    """The driver's retry schedule for one call: after an error the driver calls retryable
    (``is_retryable()``: transient errors, a lost or expired connection), wait 1 s, 2 s, 4 s …
    (±20 %) and run it again, until ``retry_time_s`` have passed since its first failure."""

    def __init__(self, retry_time_s: float, clock: Callable[[], float] = time.monotonic):
        self.retry_time_s = retry_time_s
        self.clock = clock
        self.first_failure: float | None = None
        self.delay = 1.0

    def wait_after(self, error: Exception) -> float | None:
        """Seconds to wait before the next attempt, or None: raise ``error`` now."""
        if not isinstance(error, neo4j.exceptions.Neo4jError | neo4j.exceptions.DriverError) or not error.is_retryable():
            return None
        now = self.clock()
        self.first_failure = now if self.first_failure is None else self.first_failure
        spent = now - self.first_failure
        if spent >= self.retry_time_s:
            return None
        wait = min(self.delay * random.uniform(0.8, 1.2), max(self.retry_time_s - spent, 0.0))
        self.delay *= 2
        return wait


def retried(
    call: Callable[[], T], retry_time_s: float, sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()``, run again on the schedule of :class:`RetryBackoff` as the driver's managed
    transactions are; then the last error is raised. Other errors are raised at once."""
    backoff = RetryBackoff(retry_time_s, clock)
    while True:
        try:
            return call()
        except Exception as exc:
            wait = backoff.wait_after(exc)
            if wait is None:
                raise
            sleep(wait)


async def retried_async(
    call: Callable[[], Awaitable[T]], retry_time_s: float,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, clock: Callable[[], float] = time.monotonic,
) -> T:
    """:func:`retried` for a coroutine function (the AsyncGateway's reads)."""
    backoff = RetryBackoff(retry_time_s, clock)
    while True:
        try:
            return await call()
        except Exception as exc:
            wait = backoff.wait_after(exc)
            if wait is None:
                raise
            await sleep(wait)


#: What the driver raises when the server is gone (after our retries): a connection refused or
#: lost, a routing table with no member, a commit whose outcome is unknown (IncompleteCommit).
LOST = (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired)


def lost_neo4j(what: str, error: BaseException) -> Neo4jUnavailableError:
    """kbgraph's error, in one line, for a Neo4j lost during ``what`` (a query's name)."""
    reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:200].rstrip(":")
    return Neo4jUnavailableError(f"lost Neo4j during {what} ({type(error).__name__}: {reason}): what was committed "
                                 "is kept; run it again once Neo4j answers")


def guarded(what: str, call: Callable[[], T], driver: Any = None) -> T:
    """``call()``, with the driver's lost-server errors raised as :func:`lost_neo4j`'s and a pool
    with no free connection as :func:`~kbgraph.store.pool.pool_exhausted`'s (worded from
    ``driver``'s pool, when given)."""
    try:
        return call()
    except LOST as error:
        raise lost_neo4j(what, error) from error
    except neo4j.exceptions.ConnectionAcquisitionTimeoutError as error:
        raise pool_exhausted(what, error, pool_occupancy(driver)) from error
