"""The package is mypy-clean (strict), checked as it is laid out once installed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_passes(tmp_path: Path) -> None:
    # mypy cannot follow the editable install's import hook, so assemble the installed layout.
    package = tmp_path / "kbgraph"
    shutil.copytree(ROOT / "kbgraph", package, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("ingest", "search"):
        shutil.copytree(ROOT / folder, package / folder, ignore=shutil.ignore_patterns("__pycache__"))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--no-incremental",
         "--python-version", "3.11", "-p", "kbgraph"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
