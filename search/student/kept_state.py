"""Whether a search of a large namespace waits for the namespace's search version before its vector
and full-text channels start (:func:`kbgraph.search.student.channels.gather`).

What the process keeps of a large namespace (its vectors and texts, kept current in the background:
:class:`~kbgraph.search.student.versioned.KeptInBackground`) answers a search only when it was read
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

__all__ = ["RECHECK_SECONDS", "KeptState"]

#: How often a namespace whose kept state was not current has its version checked.
RECHECK_SECONDS = 0.25


class KeptState:
    """What the last version check said of a namespace's kept state (see the module docstring)."""

    def __init__(self, recheck_seconds: float = RECHECK_SECONDS):
        self.recheck_seconds = recheck_seconds
        self._current = False
        self._checked = -math.inf
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
