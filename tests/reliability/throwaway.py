"""A throw-away managed Neo4j that tests may kill, freeze and restart (never the shared one)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from kbgraph.store.managed.lines import LINES
from kbgraph.store.managed.server import ManagedNeo4j, free_port
from kbgraph.core.settings import Settings
from tests.class_data import ClassDataArchive


#: The JIT of a server that lives for a few tests and is killed and started again: C1 only. A
#: fresh JVM's C2 compiler threads spent more CPU than the work itself, on code the server does not
#: run long enough to repay: with C1 alone, test_kill9.py and test_timeouts.py took a third less
#: CPU (2026-12-01: 237 → 153 CPU-s together on 5.26). Not for the session's servers
#: (tests/conftest.py), whose quarter of an hour of work repays C2 (a subset of the suite took
#: 944 CPU-s with it and 1,558 with C1 alone), and never for ``kbgraph server start``.
SHORT_LIVED_JIT = ("-XX:TieredStopAtLevel=1",)


class ThrowawayNeo4j:
    def __init__(self, home: Path):
        # The line the suite runs on (KBGRAPH_NEO4J_VERSION), as the session's server: faults are
        # recovered by each line's own store.
        settings = Settings()
        line = LINES[settings.neo4j_version]
        self.server = ManagedNeo4j(home=home, cache_dir=settings.cache_dir, bolt_port=free_port(),
                                   http_port=free_port(), heap="1g", pagecache="256m", quiet=True, assets_port=0,
                                   line=line, jvm_options=(*ClassDataArchive(settings.cache_dir, line).jvm_options(),
                                                           *SHORT_LIVED_JIT), dies_with_starter=True)

    @property
    def uri(self) -> str:
        return self.server.bolt_uri

    @property
    def auth(self) -> tuple[str, str]:
        return self.server.auth()

    def env(self, namespace: str, **extra: str) -> dict[str, str]:
        user, password = self.auth
        return {**os.environ, "NEO4J_URI": self.uri, "NEO4J_USERNAME": user, "NEO4J_PASSWORD": password,
                "KBGRAPH_NAMESPACE": namespace, "HF_HUB_OFFLINE": "1", **extra}

    def start(self) -> None:
        self.server.start()

    @property
    def pid(self) -> int:
        pid = self.server.status().pid
        assert pid is not None, "the throw-away Neo4j is not running"
        return pid

    def kill(self) -> None:
        """kill -9: no shutdown, no checkpoint; the next start recovers from the transaction log."""
        pid = self.pid
        os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:  # started by another process: wait until it is gone
            while Path(f"/proc/{pid}").exists():
                time.sleep(0.05)

    def freeze(self) -> int:
        """SIGSTOP, returning once every thread of the JVM has stopped (it takes a moment)."""
        pid = self.pid
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                states = [Path(f"/proc/{pid}/task/{t}/stat").read_text().rsplit(")", 1)[-1].split()[0]
                          for t in os.listdir(f"/proc/{pid}/task")]
            except OSError:  # a thread ended while being looked at
                continue
            if all(state in ("T", "t") for state in states):
                break
            time.sleep(0.02)
        return pid

    @staticmethod
    def thaw(pid: int) -> None:
        os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        self.server.stop()
