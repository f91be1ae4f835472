"""The package is mypy-clean (strict), checked as it is laid out once installed."""

from __future__ import annotations

import fcntl
import filecmp
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import mypy.version

from kbgraph.core.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
#: The folders that make up the installed package ``kbgraph`` (ingest and search are its subpackages).
PACKAGE_FOLDERS = {"kbgraph": ROOT / "kbgraph", "kbgraph/ingest": ROOT / "ingest", "kbgraph/search": ROOT / "search"}


def mirror_installed_layout(tree: Path) -> None:
    """Makes ``tree/kbgraph`` the package as installed: every source file copied where it differs
    (an unchanged file keeps its copy, so mypy's cache stays valid for it), and files that are
    gone from the repository removed."""
    wanted: set[Path] = set()
    for target, source in PACKAGE_FOLDERS.items():
        for file in source.rglob("*"):
            if file.is_dir() or "__pycache__" in file.parts:
                continue
            copy = tree / target / file.relative_to(source)
            wanted.add(copy)
            if not copy.exists() or not filecmp.cmp(file, copy, shallow=False):
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, copy)
    for file in (tree / "kbgraph").rglob("*"):
        if file.is_file() and file not in wanted:
            file.unlink()


def test_mypy_strict_passes() -> None:
    # mypy cannot follow the editable install's import hook, so check a copy laid out as installed.
    # The copy and mypy's incremental cache live in kbgraph's cache, keyed by mypy and Python, so a
    # later run re-checks only what changed (~15 s instead of ~2 min), whichever checkout it comes
    # from (CI clones afresh); mypy's own cache tracks which modules depend on a changed one.
    key = hashlib.sha256(f"{mypy.version.__version__} {sys.version}".encode()).hexdigest()[:12]
    work = Settings().cache_dir / "mypy" / key
    work.mkdir(parents=True, exist_ok=True)
    with open(work / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # runs take turns: each makes the copy its own checkout's
        mirror_installed_layout(work / "tree")
        result = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--cache-dir", str(work / "cache"),
             "--python-version", "3.11", "-p", "kbgraph"],
            cwd=work / "tree", capture_output=True, text=True, timeout=600,
        )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_checked_copy_follows_the_repository(tmp_path: Path) -> None:
    mirror_installed_layout(tmp_path)
    stale = tmp_path / "kbgraph" / "search" / "gone.py"
    stale.write_text("x: int = 'not an int'\n")
    (tmp_path / "kbgraph" / "core" / "settings.py").write_text("# edited\n")
    mirror_installed_layout(tmp_path)
    assert not stale.exists()
    assert filecmp.cmp(tmp_path / "kbgraph" / "core" / "settings.py", ROOT / "kbgraph" / "core" / "settings.py",
                       shallow=False)
    assert (tmp_path / "kbgraph" / "ingest" / "pipeline.py").exists()
