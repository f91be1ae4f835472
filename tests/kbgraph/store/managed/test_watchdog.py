"""A throw-away server dies with the process that started it (kbgraph/store/managed/watchdog.py).

A pytest killed from outside (a ``timeout``, Ctrl-C twice, ``kill -9``) left its servers running,
3 GiB of heap each, until they drove the machine out of memory. The managed default server is
the opposite case: it outlives the command that started it
(test_managed_server.py::test_two_processes_starting_it_at_once_share_one_server finds it running
after its starters exited).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kbgraph.core.processes import pid_alive
from kbgraph.core.settings import Settings
from kbgraph.store.managed.server import ManagedNeo4j
from kbgraph.store.managed.watchdog import watch
from tests.kbgraph.store.managed.test_managed_server import short_lived

#: A SIGKILLed JVM is gone in well under a second; the bound leaves room for a busy machine.
DIES_WITHIN_S = 30.0


def _gone_within(pids: list[int], timeout_s: float, since: float | None = None) -> float | None:
    """Seconds from ``since`` (a time.monotonic(); now by default) until none of ``pids`` runs, or
    None when one still runs after ``timeout_s``."""
    start = time.monotonic() if since is None else since
    while time.monotonic() - start < timeout_s:
        if not any(pid_alive(pid) for pid in pids):
            return time.monotonic() - start
        time.sleep(0.05)
    return None


@contextmanager
def killed_starter(script: str) -> Iterator[tuple[list[int], float]]:
    """Runs ``script``, which prints the pids it starts and waits; kills it with SIGKILL, so that none
    of its own clean-up runs, and gives those pids and when it was killed (time.monotonic()).
    Whatever still runs afterwards is killed."""
    starter = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        assert starter.stdout is not None
        pids = [int(pid) for pid in starter.stdout.readline().split()]
        assert pids and all(pid_alive(pid) for pid in pids), f"the starter did not start them: {pids}"
        killed = time.monotonic()
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait()
        yield pids, killed
    finally:
        starter.kill()
        starter.wait()
        for pid in pids:  # what a failed test left behind
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.neo4j  # starts a managed server of its own
def test_a_throwaway_server_dies_with_the_process_that_started_it_when_that_is_killed(tmp_path: Path) -> None:
    # The starter starts a throw-away server (with its Browser asset server), says their pids and waits.
    script = (
        "import sys, time; from pathlib import Path; from kbgraph.core.settings import Settings; "
        "from kbgraph.store.managed.server import ManagedNeo4j, free_port; "
        f"s = ManagedNeo4j(home=Path({str(tmp_path / 'instance')!r}), cache_dir=Settings().cache_dir, "
        "bolt_port=free_port(), http_port=free_port(), heap='512m', pagecache='64m', quiet=True, "
        f"assets_port=free_port(), jvm_options={short_lived()!r}, dies_with_starter=True); "
        "print(s.start().pid, s.browser_assets.running_pid(), flush=True); time.sleep(600)"
    )
    with killed_starter(script) as (pids, killed):
        assert len(pids) == 2
        took = _gone_within(pids, DIES_WITHIN_S, since=killed)
        assert took is not None, f"the server (pids {pids}) still runs {DIES_WITHIN_S:.0f} s after its starter died"
        print(f"the throw-away server was gone {took:.2f} s after its starter's kill -9")


def test_the_managed_default_server_has_no_watchdog() -> None:
    # `kbgraph server start` and `./kb demo` start it to outlive them.
    assert not ManagedNeo4j.from_settings(Settings()).dies_with_starter


def test_the_watchdog_kills_what_it_guards_once_its_starter_is_killed() -> None:
    # Without Neo4j: the starter guards a process of its own session, as the server is.
    script = (
        "import subprocess, time; from kbgraph.store.managed.watchdog import watch; "
        "guarded = subprocess.Popen(['sleep', '600'], start_new_session=True); "
        "print(guarded.pid, watch([guarded.pid]).pid, flush=True); time.sleep(600)"
    )
    with killed_starter(script) as (pids, _):
        assert _gone_within(pids, DIES_WITHIN_S) is not None, "the guarded process or the watchdog still runs"


def test_the_watchdog_leaves_once_what_it_guards_has_exited() -> None:
    # A throw-away server stopped normally leaves no watchdog behind.
    guarded = subprocess.Popen(["sleep", "600"], start_new_session=True)
    watchdog = watch([guarded.pid])
    guarded.kill()
    guarded.wait()
    assert watchdog.wait(timeout=DIES_WITHIN_S) == 0
