"""Whether a search of a large namespace waits for the namespace's search version before its vector
and full-text channels start (:func:`kbgraph.search.student.channels.gather`).

What the process keeps of a large namespace (its vectors and texts, kept current in the background:
:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`) answers a search only when it was read
at the version that search reads. Waiting for that version costs a round trip before the channels'
index queries can start, which pays while the kept state keeps being current (a namespace no write
changes) and is lost while writes keep changing the version (mixed traffic: the index answers
anyway). So a search waits only when the last check found the kept state current; otherwise its
index queries start at once and the version is checked beside them, at most every
``recheck_seconds``, to start the background reads and to notice when the kept state is current
again. Thread-safe.
"""

from __future__ import annotations

import math
import time
from threading import Lock

__all__ = ["MOVING_SECONDS", "RECHECK_SECONDS", "KeptState"]

#: How often a namespace whose kept state was not current has its version checked.
RECHECK_SECONDS = 0.25
#: How long after a search saw the version move the namespace counts as being written to.
MOVING_SECONDS = 1.0


class KeptState:
    """What the last version check said of a namespace's kept state (see the module docstring)."""

    def __init__(self, recheck_seconds: float = RECHECK_SECONDS, moving_seconds: float = MOVING_SECONDS):
        self.recheck_seconds = recheck_seconds
        self.moving_seconds = moving_seconds
        self._current = False
        self._checked = -math.inf
        self._moved = -math.inf
        self._lock = Lock()

    def plan(self) -> tuple[bool, bool]:
        """``(check, wait)``: whether this search reads the version, and whether its channels wait
        for it (only when the kept state was current at the last check)."""
        with self._lock:
            if self._current:
                return True, True
            now = time.monotonic()
            if now - self._checked >= self.recheck_seconds:
                self._checked = now
                return True, False
            return False, False

    def saw(self, current: bool) -> None:
        """Records whether the kept state was current at the version a search read."""
        with self._lock:
            self._current = current

    def moved(self) -> None:
        """Records that a search read a newer version than the one the kept state was confirmed at."""
        with self._lock:
            self._moved = time.monotonic()

    def moving(self) -> bool:
        """Whether the version moved in the last ``moving_seconds``: writes are coming in, and what
        a search works out from the kept state while it reads the version is likely thrown away
        (kbgraph.search.student.channels)."""
        with self._lock:
            return time.monotonic() - self._moved < self.moving_seconds
