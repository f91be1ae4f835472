"""A pytest plugin that measures what ``LONGEST_FILES`` (tests/conftest.py) is ordered by: each test
file's worker-seconds, set-up and tear-down included (so a module's fixtures and a worker's first
server start count where they happen), and the files each worker ran last.

    ./kb test -p tests.file_durations            # the first part's files; -m neo4j … for the second

pytest's ``--durations`` lists single tests; the order that keeps both workers busy to the end is
by whole files, since ``--dist loadfile`` hands each worker whole files.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

#: How many files the summary lists, and how many each worker ran last.
LONGEST, LAST = 30, 4

_seconds: defaultdict[str, float] = defaultdict(float)
_order: defaultdict[str, list[str]] = defaultdict(list)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _seconds[path] += report.duration
    # Under xdist the report names the worker it came from; without, everything ran in this process.
    node = getattr(report, "node", None)
    worker = str(node.workerinput["workerid"]) if node is not None else "this process"
    files = _order[worker]
    if not files or files[-1] != path:
        files.append(path)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_sep("=", "worker-seconds per test file, longest first (tests/file_durations.py)")
    for path, seconds in sorted(_seconds.items(), key=lambda item: -item[1])[:LONGEST]:
        terminalreporter.write_line(f"{seconds:8.1f}  {path}")
    terminalreporter.write_line(f"{sum(_seconds.values()):8.1f}  in all, {len(_seconds)} files")
    for worker, files in sorted(_order.items()):
        terminalreporter.write_line(f"{worker} ran last: " + ", ".join(
            f"{path} ({_seconds[path]:.0f} s)" for path in files[-LAST:]))
