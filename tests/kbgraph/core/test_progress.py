"""Progress of long operations where stderr is not a terminal: plain lines, at most one per task
every interval, one when a task completes, one at the end for tasks left unfinished (pure)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from kbgraph.core.progress import LineProgress, progress_display


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _console() -> tuple[Console, io.StringIO]:
    sink = io.StringIO()
    return Console(file=sink, width=200, force_terminal=False), sink


def test_lines_at_most_every_interval_and_when_a_task_completes() -> None:
    console, sink = _console()
    clock = Clock()
    with LineProgress(console, interval_s=10.0, clock=clock) as progress:
        build = progress.add_task("10,000: build", total=10_000)
        for done in range(1000, 10_001, 1000):
            clock.now += 3.0  # an update every 3 s: a line every 10 s or more
            progress.update(build, completed=done)
        progress.update(build, completed=10_000)  # already shown as complete: not again
        ingest = progress.add_task("ingest")  # no total: shown by time only
        clock.now += 11.0
        progress.advance(ingest, 5)
        clock.now += 1.0
        progress.advance(ingest, 2)  # within the interval: shown at the end
    assert sink.getvalue().splitlines() == [
        "10,000: build: 4,000/10,000 (12 s)",
        "10,000: build: 8,000/10,000 (24 s)",
        "10,000: build: 10,000/10,000 (30 s)",
        "ingest: 5 (11 s)",
        "ingest: 7 (12 s)",
    ]


def test_a_task_that_never_reached_its_interval_prints_nothing_until_it_completes() -> None:
    console, sink = _console()
    clock = Clock()
    with LineProgress(console, interval_s=10.0, clock=clock) as progress:
        quick = progress.add_task("embed", total=3)
        progress.update(quick, completed=1)
        clock.now += 1.0
        progress.update(quick, completed=3, description="embed (done)")
    assert sink.getvalue().splitlines() == ["embed (done): 3/3 (1 s)"]


def test_bars_on_a_terminal_lines_elsewhere() -> None:
    console, _ = _console()
    assert isinstance(progress_display(console), LineProgress)
    assert isinstance(progress_display(Console(file=io.StringIO(), force_terminal=True)), Progress)
