"""The kbgraph command line run inside the test's own process, for the tests that check what a
command does rather than how its process starts or ends.

``run_kbgraph`` goes through :func:`kbgraph.cli.run`, what ``python -m kbgraph.cli`` and the
installed ``kbgraph`` run (``main`` is ``sys.exit(run(argv))``): the same app, the same one-line
errors and exit codes. What a subprocess would have to itself is set for the call and put back
after it: the environment (replaced whole, as ``subprocess.run(env=…)`` replaces it), argv, the
working directory, the driver's log (which ``run`` quiets for the whole process), standard input,
and standard output and error, which are real files here so that a command writing to their file
descriptors (``kbgraph export -``) is captured too. A new process costs seconds (Python, kbgraph's imports,
the model when it loads); this costs the command itself. The session's MiniLM (``embedder``)
stands for the one ``KnowledgeBase.from_settings`` would load.

The environment, argv and standard streams belong to the whole process: calls must not overlap
(no threads). What needs a process of its own — the exit status of the real entry point, a
signal, a stderr holding one line and no traceback — keeps a subprocess test.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import pytest

from kbgraph.embedders import Embedder


@contextmanager
def _captured(name: str) -> Iterator[TextIO]:
    """``sys.<name>`` replaced by a temporary file (one with a file descriptor) for the duration."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as file:
        saved = getattr(sys, name)
        saved.flush()
        setattr(sys, name, file)
        try:
            yield file
        finally:
            setattr(sys, name, saved)


def _read(file: TextIO) -> str:
    file.flush()
    file.seek(0)
    return file.read()


def run_kbgraph(env: Mapping[str, str], *args: str, embedder: Embedder | None = None,
                cwd: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` run in this process with the environment ``env`` (in ``cwd``, ``stdin`` as its
    standard input): its exit status and what it printed, as ``subprocess.run(...,
    capture_output=True, text=True)`` gives them."""
    from kbgraph.cli import run  # on the first call, not when pytest collects the files importing this

    with pytest.MonkeyPatch.context() as patch, _captured("stdout") as stdout, _captured("stderr") as stderr:
        for name in set(os.environ) - set(env):
            patch.delenv(name)
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setattr(sys, "argv", ["kbgraph", *args])
        patch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
        patch.setattr(sys, "excepthook", sys.excepthook)  # typer sets it
        if cwd is not None:
            patch.chdir(cwd)
        driver_log = logging.getLogger("neo4j")
        patch.setattr(driver_log, "handlers", list(driver_log.handlers))
        patch.setattr(driver_log, "propagate", driver_log.propagate)
        if embedder is not None:
            for module in ("kbgraph.kb", "kbgraph.async_kb"):
                patch.setattr(f"{module}.embedder_from_settings", lambda settings: embedder)
        code = run(list(args))
        return subprocess.CompletedProcess(["kbgraph", *args], code, _read(stdout), _read(stderr))
