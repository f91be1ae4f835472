"""tests/file_durations.py: each file's worker-seconds, set-up and tear-down included, longest first,
its CPU-seconds, and the files each worker ran last. Each test has a FileDurations of its own (the
plugin may be measuring this very run)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from tests.file_durations import FileDurations, tree_cpu_seconds


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, _sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def plugin(json_path: Path | None = None, controller: bool = False, worker: bool = False) -> FileDurations:
    """A FileDurations for a run with workers (``controller``, or a ``worker`` of one) or without."""
    config = SimpleNamespace(pluginmanager=SimpleNamespace(has_plugin=lambda name: controller and name == "dsession"),
                             getoption=lambda name, default=None: json_path)
    if worker:
        config.workerinput, config.workeroutput = {"workerid": "gw0"}, {}
    return FileDurations(config)


def report(nodeid: str, when: str, seconds: float, worker: str | None) -> pytest.TestReport:
    made = pytest.TestReport(nodeid, (nodeid, 0, ""), {}, "passed", None, when, duration=seconds)
    if worker is not None:  # what pytest-xdist adds to the reports it hands over
        setattr(made, "node", SimpleNamespace(workerinput={"workerid": worker}))
    return made


def test_files_are_summed_over_set_up_call_and_tear_down_and_listed_longest_first() -> None:
    durations = plugin(controller=True)
    reports = [("tests/a.py::t1", "setup", 30.0, "gw0"), ("tests/a.py::t1", "call", 1.0, "gw0"),
               ("tests/b.py::t1", "call", 20.0, "gw1"), ("tests/a.py::t2", "teardown", 2.0, "gw0"),
               ("tests/c.py::t1", "call", 5.0, "gw0")]
    for nodeid, when, seconds, worker in reports:
        durations.pytest_runtest_logreport(report(nodeid, when, seconds, worker))
    # Two workers finish, each with the CPU-seconds of the files it ran.
    durations.pytest_testnodedown(SimpleNamespace(workeroutput={"file_cpu_seconds": {"tests/a.py": 12.5,
                                                                                    "tests/c.py": 2.0}}), None)
    durations.pytest_testnodedown(SimpleNamespace(workeroutput={"file_cpu_seconds": {"tests/b.py": 7.25}}), None)
    out = Lines()
    durations.pytest_terminal_summary(out)  # type: ignore[arg-type]
    assert out.lines[2:5] == ["    33.0      12.5  tests/a.py", "    20.0       7.2  tests/b.py",
                              "     5.0       2.0  tests/c.py"]
    assert out.lines[5].startswith("    58.0      21.8  in all, 3 files")
    assert out.lines[6:] == ["gw0 ran last: tests/a.py (33 s), tests/c.py (5 s)", "gw1 ran last: tests/b.py (20 s)"]


def test_without_workers_everything_ran_in_this_process() -> None:
    durations = plugin()
    durations.pytest_runtest_logreport(report("tests/a.py::t", "call", 1.0, None))
    assert dict(durations.order) == {"this process": ["tests/a.py"]}


def test_a_files_cpu_seconds_are_those_of_the_process_tree_between_its_first_test_and_the_next_file() -> None:
    """Read where the process moves to another file, and once more at the end of the session."""
    durations = plugin(worker=True)
    readings = iter([10.0, 25.0, 26.5])
    durations.read_cpu = lambda: next(readings)
    for nodeid in ("tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t1"):
        durations.pytest_runtest_logstart(nodeid, ("", None, ""))
    durations.pytest_sessionfinish(SimpleNamespace(config=durations.config))  # type: ignore[arg-type]
    assert durations.config.workeroutput["file_cpu_seconds"] == {"tests/a.py": 15.0, "tests/b.py": 1.5}


def test_the_controller_of_a_run_with_workers_measures_nothing_itself() -> None:
    durations = plugin(controller=True)
    durations.read_cpu = lambda: pytest.fail("the controller read its CPU")
    durations.pytest_runtest_logstart("tests/a.py::t1", ("", None, ""))
    durations.pytest_sessionfinish(SimpleNamespace(config=durations.config))  # type: ignore[arg-type]
    assert durations.current is None and not durations.cpu


def test_the_tree_counts_a_child_alive_and_one_reaped() -> None:
    """A child's CPU counts while it runs, and still counts once it ended and was reaped."""
    burn = [sys.executable, "-c", "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"]
    before = tree_cpu_seconds()
    subprocess.run(burn, check=True)  # reaped
    alive = subprocess.Popen([*burn[:2], burn[2] + "\nimport sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        child = psutil.Process(alive.pid)
        deadline = time.monotonic() + 30
        while sum(child.cpu_times()[:2]) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tree_cpu_seconds() - before >= 1.0
    finally:
        alive.communicate(b"")


def test_the_figures_are_appended_as_one_json_line(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("KBGRAPH_NEO4J_VERSION", "2026.09")
    target = tmp_path / "runs.jsonl"
    durations = plugin(target, controller=True)
    durations.pytest_runtest_logreport(report("tests/a.py::t", "call", 3.0, "gw0"))
    durations.cpu["tests/a.py"] = 2.5
    for _ in range(2):
        durations.pytest_terminal_summary(Lines())  # type: ignore[arg-type]
    first, second = (json.loads(line) for line in target.read_text().splitlines())
    assert first == second
    assert first["line"] == "2026.09" and first["files"] == {"tests/a.py": {"worker_s": 3.0, "cpu_s": 2.5}}
    assert first["last"] == {"gw0": ["tests/a.py"]}


def test_a_worker_appends_no_json_line_of_its_own(tmp_path: Path) -> None:
    target = tmp_path / "runs.jsonl"
    plugin(target, worker=True).pytest_terminal_summary(Lines())  # type: ignore[arg-type]
    assert not target.exists()
