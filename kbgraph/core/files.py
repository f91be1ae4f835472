"""Writing a file whole or not at all, and only over a file.

Export and report write beside the target, then rename over it: a reader never sees half a
file. A rename replaces whatever has the name, though: ``/dev/full``, a FIFO another process
reads, a socket, a symbolic link (replaced by the file, not written through). So a target that
exists must be a regular file, not a link, and a write that fails (a full disk, a file-size
limit) is a one-line failure, with nothing left behind.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

from kbgraph.core.errors import InvalidInputError, KbgraphError

T = TypeVar("T")


def _kind(mode: int) -> str:
    return ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")


def _looked_at(path: Path) -> int | str | None:
    """``path``'s mode (through links), None when nothing is there, or why it cannot be seen."""
    try:
        return path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"{path}: {error.strerror or error}"


def _not_regular(path: Path, mode: int) -> str | None:
    if stat.S_ISDIR(mode):
        return f"{path}: is a folder"
    return None if stat.S_ISREG(mode) else f"{path}: is {_kind(mode)}, not a regular file"


def source_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file that is read more than once (an export: checked
    whole, then imported), None when it can: missing, a folder, or a device or FIFO (/dev/zero
    exists; "no such file" would be wrong, and it never ends)."""
    mode = _looked_at(path)
    if mode is None:
        return f"{path}: no such file"
    return mode if isinstance(mode, str) else _not_regular(path, mode)


def _link_problem(path: Path) -> str | None:
    # The rename would put the file where the link was and leave its target as it was: neither
    # "write through the link" nor "refuse", so refused, saying what the link points at.
    if not path.is_symlink():
        return None
    try:
        pointed = os.readlink(path)
    except OSError:
        pointed = "?"
    return f"{path}: is a symbolic link (to {pointed}), which the write would replace; name the file itself"


def target_problem(path: Path) -> str | None:
    """Why ``path`` may not be replaced by a written file (None when it may): a folder, a device,
    a FIFO, a socket or a symbolic link is refused; a missing file or a regular one is fine."""
    if problem := _link_problem(path):
        return problem
    mode = _looked_at(path)
    if mode is None:
        return None if path.parent.is_dir() else f"{path}: no folder {path.parent} to write it in"
    if isinstance(mode, str):
        return mode
    problem = _not_regular(path, mode)
    return None if problem is None else f"{problem}; name the regular file to write"


def check_target(path: Path) -> None:
    """Raises InvalidInputError when :func:`target_problem` finds one."""
    if problem := target_problem(path):
        raise InvalidInputError([problem])


def _refuse_non_regular(path: Path) -> None:
    # What only a write can tell (a missing folder, no permission) is left to it: an OSError.
    if problem := _link_problem(path):
        raise InvalidInputError([problem])
    mode = _looked_at(path)
    if isinstance(mode, int) and (problem := _not_regular(path, mode)):
        raise InvalidInputError([f"{problem}; name the regular file to write"])


def write_whole(path: Path, write: Callable[[IO[str]], T], *, what: str, mode: int = 0o600) -> T:
    """Calls ``write`` with a text file beside ``path`` (created with ``mode``: 0600 keeps a
    namespace's task texts to its owner from the first byte), flushes it to disk and renames it
    over ``path``; returns what ``write`` returned. An OSError on the way (a full disk, EFBIG) is
    a KbgraphError naming ``what`` and the file; the partial file is removed in every case."""
    _refuse_non_regular(path)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with open(descriptor, "w", encoding="utf-8", newline="\n") as sink:
            result = write(sink)
            sink.flush()
            os.fsync(sink.fileno())  # a full disk may only say so here
        _refuse_non_regular(path)  # it may have become a FIFO meanwhile
        partial.replace(path)
        return result
    except OSError as error:
        raise KbgraphError(f"cannot write {what} to {path}: {error.strerror or error}") from None
    finally:
        partial.unlink(missing_ok=True)
