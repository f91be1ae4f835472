"""A pytest plugin that measures what ``LONGEST_FILES`` (tests/conftest.py) is ordered by: each test
file's worker-seconds, set-up and tear-down included (so a module's fixtures and a worker's first
server start count where they happen), its CPU-seconds, and the files each worker ran last.

    ./kb test -p tests.file_durations            # the first part's files; -m neo4j … for the second
    PYTEST_ADDOPTS="-p tests.file_durations" ./kb test    # both parts
    ./kb test -p tests.file_durations --file-durations-json=runs.jsonl   # also appends the figures

pytest's ``--durations`` lists single tests; the order that keeps both workers busy to the end is
by whole files, since ``--dist loadfile`` hands each worker whole files.

Worker-seconds are wall clock, and grow with whatever else the machine runs; CPU-seconds much
less, so they are what compares two runs on a shared machine. A file's CPU-seconds are those its
worker process and every process under it spent while the file ran: the worker's Neo4j server,
the throw-away servers of tests/reliability, the commands a test runs in a subprocess (each
counted once reaped, as the kernel counts a child's time). A process that leaves the worker's
tree while alive (a daemon whose parent exited) counts only while it was in it.

The JSON line is the run's arguments, its Neo4j line (``KBGRAPH_NEO4J_VERSION``) and, per file, its
worker-seconds and CPU-seconds, for comparing two runs file by file.

The figures belong to one :class:`FileDurations`, registered when pytest configures, so that the
tests of this plugin (tests/test_file_durations.py) work on instances of their own while it measures.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from typing import Any

import psutil
import pytest

#: How many files the summary lists, and how many each worker ran last.
LONGEST, LAST = 30, 4


def tree_cpu_seconds(process: psutil.Process | None = None) -> float:
    """The CPU-seconds (user and system) of ``process`` (this one) and every process under it, the
    children each has reaped included."""
    process = process or psutil.Process()
    total = 0.0
    for member in (process, *process.children(recursive=True)):
        try:
            times = member.cpu_times()
        except psutil.Error:  # it ended while being looked at: its reaper counts it from now on
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--file-durations-json", metavar="PATH", default=None,
                     help="append each file's worker-seconds and CPU-seconds to PATH as one JSON line")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(FileDurations(config), "file-durations")


class FileDurations:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.order: defaultdict[str, list[str]] = defaultdict(list)
        #: CPU-seconds per file: measured in this process (a worker, or a run without workers),
        #: or, on the controller of a run with workers, gathered from them as each finishes.
        self.cpu: defaultdict[str, float] = defaultdict(float)
        #: The file this process is running and the CPU-seconds of its tree when that file started.
        self.current: tuple[str, float] | None = None
        self.read_cpu = tree_cpu_seconds

    def measures_here(self) -> bool:
        """False on the controller of a run with workers: its tests run in the workers, which measure."""
        return not self.config.pluginmanager.has_plugin("dsession")

    def _file_ended(self, now: float) -> None:
        if self.current is not None:
            path, started = self.current
            self.cpu[path] += now - started
            self.current = None

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        """Where this process moves to another file, the file before it ended: its module's
        tear-down ran in its last test's tear-down, before this test's start."""
        if not self.measures_here():
            return
        path = nodeid.split("::", 1)[0]
        if self.current is not None and self.current[0] == path:
            return
        now = self.read_cpu()
        self._file_ended(now)
        self.current = (path, now)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.measures_here():
            return
        self._file_ended(self.read_cpu())
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # a worker: its figures go to the controller with its other output
            workeroutput["file_cpu_seconds"] = dict(self.cpu)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """On the controller: a worker finished; add its files' CPU-seconds."""
        for path, seconds in getattr(node, "workeroutput", {}).get("file_cpu_seconds", {}).items():
            self.cpu[path] += seconds

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] += report.duration
        # Under xdist the report names the worker it came from; without, everything ran in this process.
        node = getattr(report, "node", None)
        worker = str(node.workerinput["workerid"]) if node is not None else "this process"
        files = self.order[worker]
        if not files or files[-1] != path:
            files.append(path)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        seconds, cpu = self.seconds, self.cpu
        terminalreporter.write_sep("=", "worker-seconds and CPU-seconds per test file, longest first "
                                        "(tests/file_durations.py)")
        terminalreporter.write_line("worker-s     CPU-s  file")
        for path, spent in sorted(seconds.items(), key=lambda item: -item[1])[:LONGEST]:
            terminalreporter.write_line(f"{spent:8.1f}  {cpu.get(path, 0.0):8.1f}  {path}")
        terminalreporter.write_line(f"{sum(seconds.values()):8.1f}  {sum(cpu.values()):8.1f}  "
                                    f"in all, {len(seconds)} files")
        for worker, files in sorted(self.order.items()):
            terminalreporter.write_line(f"{worker} ran last: " + ", ".join(
                f"{path} ({seconds[path]:.0f} s)" for path in files[-LAST:]))
        target = self.config.getoption("file_durations_json", None)
        if target and not hasattr(self.config, "workerinput"):
            with open(target, "a", encoding="utf-8") as out:
                out.write(json.dumps({
                    "args": sys.argv[1:], "line": os.environ.get("KBGRAPH_NEO4J_VERSION"),
                    "files": {path: {"worker_s": round(spent, 2), "cpu_s": round(cpu.get(path, 0.0), 2)}
                              for path, spent in sorted(seconds.items())},
                    "last": {worker: files[-LAST:] for worker, files in sorted(self.order.items())}}) + "\n")
