"""Progress of long operations: bars on a terminal, plain lines everywhere else.

Rich draws its bars only on a terminal; with stderr in a file or a pipe (CI logs, ``nohup``, a
service manager) it prints the final state when the operation ends, so a 30-minute benchmark was
silent until it was over. :func:`progress_display` gives rich's bars on a terminal and otherwise
a :class:`LineProgress`, which takes the same calls and prints ``description: done/total
(elapsed)`` for each task at most every ``interval_s`` seconds, when a task completes, and at the
end for tasks left unfinished.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

__all__ = ["LineProgress", "ProgressDisplay", "StageReporter", "progress_display", "stage_reporter", "with_prefix"]

#: (stage, done, total): how pipelines and benchmarks report progress.
StageReporter = Callable[[str, float, float | None], None]


class ProgressDisplay(Protocol):
    """What kbgraph's commands call on a progress display (a subset of rich's ``Progress``)."""

    def __enter__(self) -> ProgressDisplay: ...

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None: ...

    def add_task(self, description: str, *, total: float | None = ...) -> TaskID: ...

    def update(self, task_id: TaskID, *, total: float | None = ..., completed: float | None = ...,
               description: str | None = ...) -> None: ...

    def advance(self, task_id: TaskID, advance: float = ...) -> None: ...


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float = 0.0
    started: float = 0.0
    shown_at: float = 0.0
    finished: bool = False


def _count(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


class LineProgress:
    """Rich ``Progress``'s calls, written as lines (see the module docstring)."""

    def __init__(self, console: Console, interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.console = console
        self.interval_s = interval_s
        self._now = clock
        self._tasks: dict[int, _Task] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            for task in self._tasks.values():
                if not task.finished and task.shown_at:
                    self._show(task)

    def add_task(self, description: str, *, total: float | None = None) -> TaskID:
        now = self._now()
        task_id = TaskID(len(self._tasks))
        self._tasks[task_id] = _Task(description, total, started=now)
        return task_id

    def update(self, task_id: TaskID, *, total: float | None = None, completed: float | None = None,
               description: str | None = None) -> None:
        task = self._tasks[task_id]
        if total is not None:
            task.total = total
        if completed is not None:
            task.completed = completed
        if description is not None:
            task.description = description
        self._maybe_show(task)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        task = self._tasks[task_id]
        task.completed += advance
        self._maybe_show(task)

    def _maybe_show(self, task: _Task) -> None:
        done = task.total is not None and task.completed >= task.total
        if task.finished:
            return
        if done or self._now() - max(task.shown_at, task.started) >= self.interval_s:
            self._show(task)
            task.finished = done

    def _show(self, task: _Task) -> None:
        task.shown_at = self._now()
        of = f"/{_count(task.total)}" if task.total is not None else ""
        self.console.print(f"{task.description}: {_count(task.completed)}{of} ({task.shown_at - task.started:.0f} s)",
                           markup=False, highlight=False)


def progress_display(console: Console, interval_s: float = 10.0) -> ProgressDisplay:
    """Bars on a terminal, :class:`LineProgress` elsewhere."""
    if console.is_terminal:
        return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, transient=False)
    return LineProgress(console, interval_s)


def stage_reporter(progress: ProgressDisplay) -> StageReporter:
    """A ``(stage, done, total)`` callback that shows each stage as a task of ``progress``
    (created the first time the stage reports)."""
    tasks: dict[str, TaskID] = {}

    def on_progress(stage: str, done: float, total: float | None) -> None:
        if stage not in tasks:
            tasks[stage] = progress.add_task(stage, total=total)
        progress.update(tasks[stage], completed=done, total=total)

    return on_progress


def with_prefix(report: StageReporter | None, prefix: str) -> StageReporter:
    """``report`` with every stage named ``<prefix>: <stage>`` (nothing when ``report`` is None)."""
    def prefixed(stage: str, done: float, total: float | None) -> None:
        if report is not None:
            report(f"{prefix}: {stage}", done, total)

    return prefixed
