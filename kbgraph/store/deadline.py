"""A bound on how long a call waits for a Neo4j that stopped answering.

The driver bounds connecting (``connection_timeout``) and retrying (``max_transaction_retry_time``),
but not reading an answer: against a server that stopped answering (a frozen process, SIGSTOP, a
half-open connection) a query waits forever unless the server has sent a receive-timeout hint. So
each call runs on a worker thread; every ``seconds`` it has not returned, the server is asked
whether it is alive (``alive``, itself bounded). A server that answers is working on the call — a
large write on a loaded machine may take minutes — and the call is awaited; one that does not
answer fails the call with :class:`Neo4jTimeoutError`. The worker is a daemon thread and is
abandoned with its connection: the process (a CLI command, an MCP tool call) goes on without it.

Workers are reused: starting a thread per call cost a search ~1 ms a request on 2 cores. Each call
reserves an idle worker or starts a new one, so concurrent calls never wait for each other, and an
abandoned worker is simply never idle again.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kbgraph.core.errors import Neo4jUnavailableError

T = TypeVar("T")


class _Job(Generic[T]):
    __slots__ = ("call", "done", "outcome", "failure")

    def __init__(self, call: Callable[[], T]):
        self.call = call
        self.done = threading.Event()
        self.outcome: list[T] = []
        self.failure: list[BaseException] = []


class _Workers:
    """Daemon threads that run calls; one is reserved per call (idle, or started for it)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job[Any]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def run(self, job: _Job[Any]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1  # reserved for this job
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="kbgraph-neo4j", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job.outcome.append(job.call())
            except BaseException as exc:  # handed to the caller, whatever it is
                job.failure.append(exc)
            finally:
                with self._lock:  # idle before the caller wakes, so its next call reuses this worker
                    self._idle += 1
                job.done.set()


_WORKERS = _Workers()


class Neo4jTimeoutError(Neo4jUnavailableError):
    """Neo4j did not answer within the configured bound."""


def within(seconds: float | None, what: str, call: Callable[[], T], alive: Callable[[], bool] | None = None) -> T:
    """``call()``'s result; Neo4jTimeoutError when it has not returned after ``seconds`` and
    ``alive()`` (if given) says the server no longer answers — while it does, the call is awaited
    in further rounds of ``seconds``. None: no bound. Exceptions of ``call`` are raised in the
    caller's thread unchanged."""
    if seconds is None:
        return call()
    job = _Job(call)
    _WORKERS.run(job)
    job.done.wait(seconds)
    while not job.done.is_set() and alive is not None and alive():
        job.done.wait(seconds)
    if not job.done.is_set():
        raise timed_out(seconds, what)
    if job.failure:
        raise job.failure[0]
    return job.outcome[0]


def timed_out(seconds: float, what: str) -> Neo4jTimeoutError:
    """The error of a call abandoned after ``seconds`` on a server that stopped answering."""
    return Neo4jTimeoutError(
        f"Neo4j did not answer within {seconds:g} s ({what}): it may be frozen, overloaded or unreachable "
        "(the bound is KBGRAPH_QUERY_TIMEOUT_S). Earlier calls are kept; this one was abandoned, and "
        "commits only if Neo4j recovers before dropping it.")
