"""A bound on how long one call to Neo4j may take, whatever state the server is in.

The driver bounds connecting (``connection_timeout``) and retrying (``max_transaction_retry_time``),
but not reading an answer: against a server that stopped answering (a frozen process, SIGSTOP, a
half-open connection) a query waits forever unless the server has sent a receive-timeout hint. So
each call runs on a worker thread and the caller waits at most ``seconds``; past that it gets
:class:`Neo4jTimeoutError` at once. The worker is a daemon thread and is abandoned with its
connection: the process (a CLI command, an MCP tool call) goes on or exits without it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from kbgraph.errors import Neo4jUnavailableError

T = TypeVar("T")


class Neo4jTimeoutError(Neo4jUnavailableError):
    """Neo4j did not answer within the configured bound."""


def within(seconds: float | None, what: str, call: Callable[[], T]) -> T:
    """``call()``'s result, or Neo4jTimeoutError when it has not returned after ``seconds``
    (None: no bound). Exceptions of ``call`` are raised in the caller's thread unchanged."""
    if seconds is None:
        return call()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the caller, whatever it is
            failure.append(exc)

    worker = threading.Thread(target=work, name=f"kbgraph-neo4j-{what}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise Neo4jTimeoutError(
            f"Neo4j did not answer within {seconds:g} s ({what}): it may be overloaded, frozen or unreachable "
            "(the bound is KBGRAPH_QUERY_TIMEOUT_S). Earlier calls are kept; this one was abandoned, and "
            "commits only if Neo4j recovers before dropping it.")
    if failure:
        raise failure[0]
    return outcome[0]
