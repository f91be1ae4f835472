"""CPU time per operation, the figure that does not move with a shared machine's load: the
client's (this process, all its threads: ``time.process_time``) and the Neo4j server's (its
process's user + system time from ``/proc/<pid>/stat``, when the server is the managed one on
this machine). Wall-clock latency grows when other work takes the cores; CPU time barely does."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kbgraph.core.settings import Settings

__all__ = ["CpuMeter", "managed_server_pid", "process_cpu_s"]


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (all its threads), or None when it is
    gone or /proc cannot tell. Resolution: one clock tick (10 ms), so measure many operations."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command's closing parenthesis: state is field 3 of stat(5), utime 14, stime 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def managed_server_pid(settings: Settings) -> int | None:
    """The pid of the managed Neo4j these settings use when it runs on this machine; None for a
    server of one's own (``NEO4J_URI``), whose CPU this process cannot see."""
    if not settings.uses_managed_server:
        return None
    from kbgraph.store.managed import ManagedNeo4j

    return ManagedNeo4j.from_settings(settings, quiet=True).status().pid


@dataclass
class CpuMeter:
    """Adds up client CPU around each timed operation (:meth:`start` / :meth:`stop`) and the
    server's CPU over the whole measurement (:meth:`begin` / :meth:`end`); :meth:`per_operation`
    divides both by the operations counted. The server's share includes whatever else it did
    meanwhile (its own merges, other clients), so measure on a server of its own when that matters."""

    server_pid: int | None = None
    client_s: float = 0.0
    operations: int = 0
    _server_start: float | None = None
    _server_s: float | None = None
    _started: float = field(default=0.0, repr=False)

    def begin(self) -> None:
        self._server_start = process_cpu_s(self.server_pid) if self.server_pid is not None else None

    def start(self) -> None:
        self._started = time.process_time()

    def stop(self) -> None:
        self.client_s += time.process_time() - self._started
        self.operations += 1

    def over(self, operations: int) -> None:
        """Counts ``operations`` done by any of this process's threads since :meth:`start`, and the
        whole process's CPU meanwhile (many clients at once: no thread's own share is told apart)."""
        self.client_s += time.process_time() - self._started
        self.operations += operations

    def end(self) -> None:
        if self.server_pid is not None and self._server_start is not None:
            now = process_cpu_s(self.server_pid)
            self._server_s = None if now is None else now - self._server_start

    def per_operation(self) -> dict[str, float | int | None]:
        """``client_ms`` and ``server_ms`` per operation (``server_ms`` None when unknown), and ``n``."""
        n = max(self.operations, 1)
        return {"n": self.operations, "client_ms": round(self.client_s * 1000 / n, 2),
                "server_ms": None if self._server_s is None else round(self._server_s * 1000 / n, 2)}
