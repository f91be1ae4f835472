"""A bound on how long a call waits for a Neo4j that stopped answering.

The driver bounds connecting (``connection_timeout``) and retrying (``max_transaction_retry_time``),
but not reading an answer: against a server that stopped answering (a frozen process, SIGSTOP, a
half-open connection) a query waits forever unless the server has sent a receive-timeout hint. So
each call runs on a worker thread; every ``seconds`` it has not returned, the server is asked
whether it is alive (``alive``, itself bounded). A server that answers is working on the call — a
large write on a loaded machine may take minutes — and the call is awaited; one that does not
answer fails the call with :class:`Neo4jTimeoutError`. The worker is a daemon thread and is
abandoned with its connection: the process (a CLI command, an MCP tool call) goes on without it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from kbgraph.errors import Neo4jUnavailableError

T = TypeVar("T")


class Neo4jTimeoutError(Neo4jUnavailableError):
    """Neo4j did not answer within the configured bound."""


def within(seconds: float | None, what: str, call: Callable[[], T], alive: Callable[[], bool] | None = None) -> T:
    """``call()``'s result; Neo4jTimeoutError when it has not returned after ``seconds`` and
    ``alive()`` (if given) says the server no longer answers — while it does, the call is awaited
    in further rounds of ``seconds``. None: no bound. Exceptions of ``call`` are raised in the
    caller's thread unchanged."""
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
    while worker.is_alive() and alive is not None and alive():
        worker.join(seconds)
    if worker.is_alive():
        raise Neo4jTimeoutError(
            f"Neo4j did not answer within {seconds:g} s ({what}): it may be frozen, overloaded or unreachable "
            "(the bound is KBGRAPH_QUERY_TIMEOUT_S). Earlier calls are kept; this one was abandoned, and "
            "commits only if Neo4j recovers before dropping it.")
    if failure:
        raise failure[0]
    return outcome[0]
