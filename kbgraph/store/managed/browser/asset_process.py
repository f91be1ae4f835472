"""Runs kbgraph's Browser asset server next to a managed Neo4j instance, as a detached process.

The managed Neo4j outlives the command that started it, so the asset server does too: it is a
process of its own (``python -I asset_server.py``, standard library only), recorded in the
instance's ``run/`` folder and stopped with the server. Its files are written into the instance's
``browser/`` folder at every start, with the URLs they are actually served at.

Nothing here may stop Neo4j from starting: a busy port moves the assets to a free one, and an
asset server that cannot start only costs the Browser its style and guide (with a warning).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kbgraph.store.managed.browser import asset_server
from kbgraph.store.managed.browser.assets import BrowserAssets
from kbgraph.core.processes import free_port, pid_alive, port_in_use, terminate

HOST = "127.0.0.1"
DEFAULT_PORT = 7475
_SCRIPT = Path(asset_server.__file__).resolve()


def _ignore(message: str) -> None:
    return None


@dataclass
class BrowserAssetServer:
    """The asset server of the managed instance in ``home``."""

    home: Path
    say: Callable[[str], None] = field(default=_ignore)
    start_timeout_s: float = 10.0

    @property
    def directory(self) -> Path:
        return self.home / "browser"

    @property
    def state_file(self) -> Path:
        return self.home / "run" / "kbgraph-browser-assets.json"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "browser-assets.log"

    # -- what runs -----------------------------------------------------------------------------

    def running(self) -> BrowserAssets | None:
        """The assets being served right now, or None."""
        pid, port = self._recorded()
        if pid is None or port is None or not self._is_ours(pid):
            return None
        return BrowserAssets(f"http://{HOST}:{port}")

    def running_pid(self) -> int | None:
        """The asset server's process while it runs, or None."""
        pid, _ = self._recorded()
        return pid if pid is not None and self._is_ours(pid) else None

    def recorded_port(self) -> int | None:
        """The port the last start used (still in neo4j.conf while that server runs)."""
        return self._recorded()[1]

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, preferred_port: int, reserved: tuple[int, ...] = ()) -> BrowserAssets | None:
        """(Re)starts the server, on ``preferred_port`` when free, otherwise on any free port
        other than the ``reserved`` ones (Neo4j's own, not bound yet). Returns where the assets
        are served, or None (after saying why) if that failed."""
        self.stop()
        port = preferred_port
        if port in reserved or port_in_use(port, HOST):
            port = free_port(reserved, HOST)
            why = "is one of Neo4j's own ports" if preferred_port in reserved else "is in use"
            self.say(f"kbgraph: port {preferred_port} {why}, so the Neo4j Browser style and guide are served "
                     f"on port {port} instead (choose another with KBGRAPH_MANAGED_ASSETS_PORT).")
        return self._launch(port)

    def ensure_running(self) -> BrowserAssets | None:
        """Restarts the server on its recorded port if it died while Neo4j kept running (the
        Browser settings of that Neo4j name this port, so no other port would do)."""
        current = self.running()
        if current is not None:
            return current
        port = self.recorded_port()
        if port is None:
            return None
        if port_in_use(port, HOST):
            self.say(f"kbgraph: the Neo4j Browser style and guide cannot be served: port {port} was taken by "
                     "another program. Restart the server (`kbgraph server stop`, then `start`) to move them.")
            return None
        return self._launch(port)

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stops the server if it runs. False if it was not running."""
        pid, _ = self._recorded()
        if pid is None or not self._is_ours(pid):
            return False
        terminate(pid, timeout_s)
        return True

    # -- internals ------------------------------------------------------------------------------

    def _launch(self, port: int) -> BrowserAssets | None:
        assets = BrowserAssets(f"http://{HOST}:{port}")
        try:
            assets.write_to(self.directory)
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_file, "ab") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-I", str(_SCRIPT), f"--directory={self.directory}", f"--port={port}",
                     f"--host={HOST}"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True, cwd=self.home,
                )
        except OSError as exc:
            self.say(f"kbgraph: the Neo4j Browser style and guide cannot be served: {exc}")
            return None
        self._record(proc.pid, port)
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.say(f"kbgraph: the Neo4j Browser asset server exited with code {proc.returncode} "
                         f"(see {self.log_file}); the Browser opens without kbgraph's style and guide.")
                return None
            if port_in_use(port, HOST):
                return assets
            time.sleep(0.05)
        terminate(proc.pid, 2.0)
        self.say(f"kbgraph: the Neo4j Browser asset server did not answer on port {port} within "
                 f"{self.start_timeout_s:.0f} s (see {self.log_file}); the Browser opens without kbgraph's style.")
        return None

    def _record(self, pid: int, port: int) -> None:
        self.state_file.write_text(json.dumps({"pid": pid, "port": port}))

    def _recorded(self) -> tuple[int | None, int | None]:
        try:
            state = json.loads(self.state_file.read_text())
            return int(state["pid"]), int(state["port"])
        except (OSError, ValueError, KeyError, TypeError):
            return None, None

    def _is_ours(self, pid: int) -> bool:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            return False
        # A recycled pid belongs to someone else: only our script serving our folder counts — from any
        # checkout, since checkouts share the managed server's folder in the cache.
        script = str(Path(*_SCRIPT.parts[-3:]))
        return (any(arg.endswith(script) for arg in cmdline) and f"--directory={self.directory}" in cmdline
                and pid_alive(pid))
