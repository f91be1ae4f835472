"""A throw-away server dies with the process that started it.

The managed Neo4j runs in a session of its own, so that it outlives the command that started it.
A server started for one test run must not: when pytest is killed from outside (a ``timeout``,
Ctrl-C twice, ``kill -9``) its servers would keep running, 3 GiB of heap each, until a handful of
them drove the machine out of memory. So a throw-away server (``ManagedNeo4j(dies_with_starter=True)``)
is started with a watchdog: a small process of its own (``python -I watchdog.py``, standard library
only) that waits on the starter and on the processes it guards, and kills what still runs when the
starter is gone.

Why a process and not ``prctl(PR_SET_PDEATHSIG)`` in the JVM: that signal fires when the *thread*
that forked the child ends, so a server started from a worker thread would die with the thread; and
the Browser asset server beside it would need the same. Why not a thread of the starter: a process
killed with SIGKILL runs none of its threads.

It waits without polling, on pidfds (Linux 5.3; the managed server already reads ``/proc``): one of
the starter, readable when the starter exits, and one per guarded process, readable when that one
exits. It leaves once every guarded process is gone (the server stopped normally), and a pidfd
names one process for its whole life, so a recycled pid is never signalled. The guarded processes
are killed with SIGKILL, their process group with them when they lead one: a throw-away server has
nothing to shut down cleanly, and its memory is what matters.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

_SCRIPT = Path(__file__).resolve()


def watch(pids: Sequence[int]) -> subprocess.Popen[bytes]:
    """Starts a watchdog that kills ``pids`` when this process dies; it exits by itself once they
    have all exited. Keep the handle to reap it (:func:`reap`)."""
    # A session of its own: Ctrl-C in the terminal reaches the starter, not the watchdog.
    return subprocess.Popen([sys.executable, "-I", str(_SCRIPT), str(os.getpid()), *map(str, pids)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def reap(watchdog: subprocess.Popen[bytes] | None, timeout_s: float = 5.0) -> None:
    """Waits for a watchdog whose processes were stopped (it exits on its own), so that it leaves no
    zombie; one that does not exit in time is killed."""
    if watchdog is None:
        return
    try:
        watchdog.wait(timeout_s)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def _kill(pidfd: int, pid: int) -> None:
    """SIGKILL to a guarded process that still runs, and to its process group when it leads one."""
    try:
        group = os.getpgid(pid)
        # Still running after its group was read: the pid, and so the group, were its own.
        signal.pidfd_send_signal(pidfd, 0)
        if group == pid:
            os.killpg(group, signal.SIGKILL)
        else:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:  # it exited meanwhile
        pass


def main(argv: Sequence[str]) -> int:
    starter, guarded = int(argv[0]), [int(a) for a in argv[1:]]
    fds = {fd: pid for pid in guarded if (fd := _pidfd(pid)) is not None}
    starter_fd = _pidfd(starter)
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    if starter_fd is not None:
        poller.register(starter_fd, select.POLLIN)
    # The starter may have died before its pidfd was opened: then this process has another parent.
    starter_gone = starter_fd is None or os.getppid() != starter
    while fds and not starter_gone:
        for fd, _ in poller.poll():
            if fd == starter_fd:
                starter_gone = True
            elif fd in fds:
                poller.unregister(fd)
                os.close(fd)
                del fds[fd]
    for fd, pid in fds.items():
        _kill(fd, pid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
