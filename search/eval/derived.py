"""A corpus derived from a shared one, written once into the cache (never into the project), under
a name that changes with the source files' content and with how it is derived."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["derived_corpus"]


def derived_corpus(source: Path, kind: str, salt: str, cache_dir: Path, rewrite: Callable[[str], str | None]) -> Path:
    """The folder ``<cache_dir>/dev-corpora/<source folder>-<kind>-<hash>`` holding ``source``'s
    ``*.jsonl`` files with ``rewrite`` applied to every non-blank line (None drops the line), made if
    it is not there yet. ``salt`` says how it is derived: it goes into the hash with the files."""
    files = sorted(source.glob("*.jsonl"))
    content = hashlib.sha256(salt.encode())
    for path in files:
        content.update(path.name.encode())
        content.update(path.read_bytes())
    target = cache_dir / "dev-corpora" / f"{source.resolve().name}-{kind}-{content.hexdigest()[:12]}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Written beside, then renamed: a run stopped half-way leaves no half corpus under the name.
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for path in files:
            with path.open(encoding="utf-8") as lines, (building / path.name).open("w", encoding="utf-8") as out:
                for line in lines:
                    written = rewrite(line.rstrip("\n")) if line.strip() else None
                    if written is not None:
                        out.write(written + "\n")
        os.replace(building, target)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
        if not target.is_dir():  # (else another run made it first)
            raise
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return target
