"""What ``kbgraph server reset-password`` sets aside while it runs, and how a reset killed midway
is finished on the next start or reset (kbgraph.store.managed.server.ManagedNeo4j.reset_password)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

#: The folder of run/ where reset_password keeps what it set aside until the new start is up.
RESET_ASIDE_PREFIX = "before-reset-password."


def reset_parts(home: Path, password_file: Path) -> tuple[Path, ...]:
    """What a reset sets aside: the system database and its transactions, the auth file, and the
    password file."""
    data = home / "data"
    return (data / "databases" / "system", data / "transactions" / "system", data / "dbms" / "auth.ini",
            password_file)


def put_back(home: Path, password_file: Path, aside: Path) -> None:
    """Everything set aside in ``aside`` back in its place (any half-made new one removed), and
    ``aside`` gone: the server as it was before the reset."""
    for part in reversed(reset_parts(home, password_file)):
        kept = aside / part.relative_to(home)
        if not kept.exists():
            continue
        if part.is_dir():
            shutil.rmtree(part)
        else:
            part.unlink(missing_ok=True)
        os.rename(kept, part)
    shutil.rmtree(aside, ignore_errors=True)


def finish_interrupted_resets(home: Path, password_file: Path, running: bool, say: Callable[[str], None],
                              but: Path | None = None) -> None:
    """What a reset killed midway (kill -9, a power cut) left in ``run/`` (except ``but``, the
    reset under way): with the server stopped, the reset is undone (the old system database and
    password come back: run it again); with the server running, it had started on the new
    password, and what was set aside is removed. Either way it is said."""
    for aside in sorted((home / "run").glob(f"{RESET_ASIDE_PREFIX}*")):
        if aside == but or not aside.is_dir():
            continue
        if running:
            shutil.rmtree(aside, ignore_errors=True)
            say(f"kbgraph: an interrupted `kbgraph server reset-password` had started Neo4j on its new password; "
                f"removed what it set aside ({aside})")
        else:
            put_back(home, password_file, aside)
            say(f"kbgraph: an interrupted `kbgraph server reset-password` was undone: the password before it is "
                f"back in {password_file}; run it again for a new one")
