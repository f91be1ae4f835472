"""The gold trajectories as another agent meets them: half the runs hit a transient tool error
("503 Service Unavailable") on one call and retried it.

Real agents' runs are full of calls that failed for reasons of the moment — an overloaded service,
a timeout — and went through when retried. Such a run did the same things as a clean one, so a
memory must find it for the same requests. The ``transient`` development set asks the short
requests of ``data/dev`` of this corpus: a figure below the clean sets' says that a failed call
changed how a run is grouped, shaped or ranked.

The corpus is derived, not stored: :func:`transient_corpus` writes it once into the cache, under a
name that changes with the gold files' content, so shared data is never copied into the project.
Which run fails, and at which call, follows from its id alone (a hash), so every machine builds
the same corpus.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from kbgraph.search.eval.derived import derived_corpus

__all__ = ["TRANSIENT_ERROR", "transient_corpus", "with_transient_error"]

TRANSIENT_ERROR = "503 Service Unavailable: the upstream service is temporarily unavailable, please retry"
#: Runs of these domains are left as they are (webarena's records are intents without tool calls).
UNTOUCHED_DOMAINS = frozenset({"webarena"})
#: Bump when the way errors are put in changes: the cached corpus is then built again.
VERSION = 1


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)


def with_transient_error(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (a trajectory as JSON) with, for every second run by the hash of its id, a failed
    copy of one of its calls (chosen by the same hash) put right before that call; other runs
    unchanged. The failed copy carries :data:`TRANSIENT_ERROR` and no observation."""
    steps = record.get("steps") or []
    if record.get("domain") in UNTOUCHED_DOMAINS or not steps:
        return record
    digest = _digest(str(record.get("id", "")))
    if digest % 2:
        return record
    at = (digest // 2) % len(steps)
    failed = {key: value for key, value in steps[at].items() if key != "observation"}
    failed["error"] = TRANSIENT_ERROR
    return {**record, "steps": [*steps[:at], failed, *steps[at:]]}


def transient_corpus(source: Path, cache_dir: Path) -> Path:
    """The folder holding ``source``'s ``*.jsonl`` files with :func:`with_transient_error` applied to
    every record, made under ``cache_dir`` if it is not there yet (named by the files' content)."""
    return derived_corpus(source, "transient", f"v{VERSION}", cache_dir,
                          lambda line: json.dumps(with_transient_error(json.loads(line)), ensure_ascii=False))
