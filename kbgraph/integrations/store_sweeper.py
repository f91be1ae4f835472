"""The LangGraph store's TTL sweeper: a daemon thread that deletes expired items every interval."""

from __future__ import annotations

import threading
from collections.abc import Callable


class TtlSweeper:
    """Calls ``sweep`` every interval in a daemon thread, from :meth:`start` until :meth:`stop`."""

    def __init__(self, sweep: Callable[[], int]):
        self._sweep = sweep
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self, minutes: float) -> threading.Thread:
        """The sweeping thread (the one already running, if any)."""
        if self._thread is not None and self._thread.is_alive():
            return self._thread
        self._stop.clear()

        def sweep() -> None:
            while not self._stop.wait(float(minutes) * 60):
                try:
                    self._sweep()
                except Exception:  # noqa: BLE001 - a failed sweep is retried at the next interval
                    continue

        self._thread = threading.Thread(target=sweep, name="kbgraph-store-ttl-sweeper", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float | None = None) -> bool:
        """True when the thread has stopped within ``timeout`` seconds."""
        self._stop.set()
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()
