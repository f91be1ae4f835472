"""Local processes and ports: what the managed Neo4j and the Browser asset server both need to
start, find and stop the processes kbgraph runs on this machine."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie does not count; our own exited child is reaped)."""
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (OSError, IndexError):
        return False


def is_stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (state T in /proc): it cannot answer until resumed."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] in ("T", "t")


def terminate(pid: int, timeout_s: float, poll_s: float = 0.05) -> None:
    """SIGTERM, then SIGKILL after ``timeout_s``; returns once the process is gone (or ~1 s after
    the SIGKILL, which is not instant)."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(poll_s)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    for _ in range(20):
        if not pid_alive(pid):
            return
        time.sleep(0.05)


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """True when something listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def free_port(reserved: tuple[int, ...] = (), host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on right now, other than the ``reserved`` ones."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in reserved:
            return port
