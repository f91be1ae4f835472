"""A corpus without the runs a set's queries were written from: the leave-one-out without the leak.

A leave-one-out query excludes its source run, but a merged experience may show that run's own text
(kbgraph.search.eval.shown_text). Building the namespace from a corpus that never held the sources
removes the leak at its root: the look-alikes then merge among themselves and show one of their own
texts, and the baselines index the same reduced corpus, so both sides see the same runs.
``kbgraph eval --suite --held-out`` answers each set with excluded runs that way as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kbgraph.search.eval.derived import derived_corpus

__all__ = ["without_runs"]

#: Bumped when what is written changes, so an old folder in the cache is not reused.
VERSION = 1


def without_runs(source: Path, runs: Iterable[str], cache_dir: Path) -> Path:
    """The folder holding ``source``'s ``*.jsonl`` files less the records whose ``id`` is in
    ``runs``, made under ``cache_dir`` if it is not there yet (named by the files' content and the
    runs left out). Blank lines are dropped; a line that is not a JSON object is kept as it is, for
    ingestion to report."""
    left_out = sorted(set(runs))
    drop = set(left_out)
    return derived_corpus(source, "without", f"v{VERSION}\n{json.dumps(left_out)}", cache_dir,
                          lambda line: None if _id_of(line) in drop else line)


def _id_of(line: str) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return str(record.get("id")) if isinstance(record, dict) and "id" in record else None
