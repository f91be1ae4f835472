"""Turns at a whole-namespace read while writes keep changing what it returns.

The intent channel reads every workflow of the namespace and the history of requests of the
query's domain in one request (``search_workflow_operations``), sending the search version it kept
the rows with; the server reads nothing when that version is still the namespace's. While runs are
being added, each add gives the namespace a new version, and every search in flight then reads the
whole namespace again: at 10,000 experiences ~150 ms of Neo4j's CPU a search, for the same rows.
Under mixed traffic (``bench concurrent``: 8 clients, one operation in ten an add) that read was
the largest part of what the server did.

So while the rows keep changing (a read returned rows within the last ``churn_seconds``), the
searches of one set of filters take turns at the read: each waits for the one before it, then sends
the version that one kept, and mostly reads nothing. Every request is still sent after its search
began, so a search sees every write that ended before it started. A quiet namespace is read without
turns (nothing to wait for: its reads return no rows), and a turn is waited for ``wait_seconds`` at
most: a read that hangs never holds the searches behind it for longer. Thread-safe. Only where
the gateway's calls may wait in a thread of their own: under AsyncKnowledgeBase every search runs on
the event loop's thread, where a lock held across a request would stall the loop
(kbgraph.store.aio), so there are no turns (:func:`turn_of` with None).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from threading import Lock

__all__ = ["CHURN_SECONDS", "WAIT_SECONDS", "ReadTurns", "turn_of"]

#: How long after a read returned rows the searches of its filters keep taking turns.
CHURN_SECONDS = 5.0
#: The longest a search waits for its turn before it reads anyway.
WAIT_SECONDS = 2.0
#: Sets of filters whose turns are tracked (a namespace's searches mostly use one or two).
KEYS_HELD = 64


class ReadTurns:
    """Per key (a set of filters), whether its read is taken in turns now, and the turn (see the
    module docstring)."""

    def __init__(self, churn_seconds: float = CHURN_SECONDS, wait_seconds: float = WAIT_SECONDS):
        self.churn_seconds = churn_seconds
        self.wait_seconds = wait_seconds
        self._turns: dict[Hashable, Lock] = {}
        self._rows_at: dict[Hashable, float] = {}
        self._lock = Lock()

    def in_turns(self, key: Hashable) -> bool:
        """Whether a read of ``key`` returned rows within the last ``churn_seconds``."""
        with self._lock:
            return time.monotonic() - self._rows_at.get(key, -math.inf) < self.churn_seconds

    @contextmanager
    def turn(self, key: Hashable) -> Iterator[Callable[[bool], None]]:
        """Runs the block in ``key``'s turn while its reads return rows, else at once. The block
        calls what it is given with whether its read returned rows."""
        with self._lock:
            if len(self._turns) >= KEYS_HELD and key not in self._turns:
                self._turns.clear()
                self._rows_at.clear()
            turn = self._turns.setdefault(key, Lock())
        held = self.in_turns(key) and turn.acquire(timeout=self.wait_seconds)
        try:
            yield lambda rows: self._saw(key, rows)
        finally:
            if held:
                turn.release()

    def _saw(self, key: Hashable, rows: bool) -> None:
        if rows:
            with self._lock:
                self._rows_at[key] = time.monotonic()


@contextmanager
def turn_of(turns: ReadTurns | None, key: Hashable) -> Iterator[Callable[[bool], None]]:
    """``turns.turn(key)``; with None, the block runs at once (no turns are taken)."""
    if turns is None:
        yield lambda rows: None
        return
    with turns.turn(key) as saw:
        yield saw
