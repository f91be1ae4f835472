"""A corpus without the runs a set's queries were written from: the leave-one-out without the leak.

A leave-one-out query excludes its source run, but a merged experience may show that run's own text
(kbgraph.search.eval.shown_text). Building the namespace from a corpus that never held the sources
removes the leak at its root: the look-alikes then merge among themselves and show one of their own
texts, and the baselines index the same reduced corpus, so both sides see the same runs.
``kbgraph eval --suite --held-out`` answers each set with excluded runs that way as well; with
``--runs-fraction`` from a fixed share of the remaining runs too, for a learning curve (what the
memory's own history teaches, at 10 / 25 / 50 / 100 % of its runs).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kbgraph.core.ids import text_hash
from kbgraph.search.eval.derived import derived_corpus

__all__ = ["kept_in_fraction", "without_runs"]

#: Bumped when what is written changes, so an old folder in the cache is not reused.
VERSION = 1


def without_runs(source: Path, runs: Iterable[str], cache_dir: Path, fraction: float = 1.0) -> Path:
    """The folder holding ``source``'s ``*.jsonl`` files less the records whose ``id`` is in
    ``runs`` (and, with ``fraction`` < 1, less those outside that share: :func:`kept_in_fraction`),
    made under ``cache_dir`` if it is not there yet (named by the files' content and the runs left
    out). Blank lines are dropped; a line that is not a JSON object is kept as it is, for ingestion
    to report."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction {fraction!r}: must be in (0, 1]")
    left_out = sorted(set(runs))
    drop = set(left_out)
    salt = f"v{VERSION}\n{json.dumps(left_out)}" + (f"\nfraction {fraction!r}" if fraction < 1.0 else "")

    def kept(line: str) -> str | None:
        run = _id_of(line)
        if run in drop or (run is not None and not kept_in_fraction(run, fraction)):
            return None
        return line

    return derived_corpus(source, "without", salt, cache_dir, kept)


def kept_in_fraction(run: str, fraction: float) -> bool:
    """Whether run ``run`` is among the ``fraction`` of runs kept, by a hash of its id: the same
    runs for every set and every machine, and a run kept at 10 % is kept at 25 % (nested shares,
    so a learning curve adds runs, never swaps them)."""
    return fraction >= 1.0 or int(text_hash(run)[:8], 16) / 0x1_0000_0000 < fraction


def _id_of(line: str) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return str(record.get("id")) if isinstance(record, dict) and "id" in record else None
