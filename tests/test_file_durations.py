"""tests/file_durations.py: each file's worker-seconds, set-up and tear-down included, longest first,
and the files each worker ran last."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests import file_durations


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, _sep: str, title: str) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def report(nodeid: str, when: str, seconds: float, worker: str | None) -> pytest.TestReport:
    made = pytest.TestReport(nodeid, (nodeid, 0, ""), {}, "passed", None, when, duration=seconds)
    if worker is not None:  # what pytest-xdist adds to the reports it hands over
        setattr(made, "node", SimpleNamespace(workerinput={"workerid": worker}))
    return made


def test_files_are_summed_over_set_up_call_and_tear_down_and_listed_longest_first(monkeypatch: Any) -> None:
    monkeypatch.setattr(file_durations, "_seconds", file_durations.defaultdict(float))
    monkeypatch.setattr(file_durations, "_order", file_durations.defaultdict(list))
    reports = [("tests/a.py::t1", "setup", 30.0, "gw0"), ("tests/a.py::t1", "call", 1.0, "gw0"),
               ("tests/b.py::t1", "call", 20.0, "gw1"), ("tests/a.py::t2", "teardown", 2.0, "gw0"),
               ("tests/c.py::t1", "call", 5.0, "gw0")]
    for nodeid, when, seconds, worker in reports:
        file_durations.pytest_runtest_logreport(report(nodeid, when, seconds, worker))
    out = Lines()
    file_durations.pytest_terminal_summary(out)  # type: ignore[arg-type]
    assert out.lines[1:4] == ["    33.0  tests/a.py", "    20.0  tests/b.py", "     5.0  tests/c.py"]
    assert out.lines[4].startswith("    58.0  in all, 3 files")
    assert out.lines[5:] == ["gw0 ran last: tests/a.py (33 s), tests/c.py (5 s)", "gw1 ran last: tests/b.py (20 s)"]


def test_without_workers_everything_ran_in_this_process(monkeypatch: Any) -> None:
    monkeypatch.setattr(file_durations, "_seconds", file_durations.defaultdict(float))
    monkeypatch.setattr(file_durations, "_order", file_durations.defaultdict(list))
    file_durations.pytest_runtest_logreport(report("tests/a.py::t", "call", 1.0, None))
    assert dict(file_durations._order) == {"this process": ["tests/a.py"]}
