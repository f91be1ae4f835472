"""The facts log: what each incremental consolidation changed in the link state, so that a process
whose remembered state is a few consolidations behind follows them instead of planning from
scratch.

A consolidation sets the namespace's facts version from ``from`` to ``to`` (a compare-and-set,
kb_state_facts_version_set) and appends an entry to ``KbState.facts_log`` in the same write: the
experiences whose facts it changed — those written since the last consolidation (their
``unlinked`` marks), those its merges deleted and the survivors of the merges — and the relation
totals after it. Whether it planned incrementally or from scratch, those are all the facts that
changed between the two versions. Another process whose state is remembered at version ``from``
reads the facts of those ids as they are now: the active ones are upserted into its state, the
others removed (``LinkState.update``, the update an incremental writer makes), and it is at
``to``. Without the log, two processes adding runs to one namespace each planned from scratch at
every add (3 s of CPU at 10,000 experiences; an add waited ~25 s behind the other threads'
searches). Every other writer of the facts version (delete, maintenance, restore, import, clear)
writes no entry: the chain breaks there, and a state behind it starts from scratch as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Entries kept on the state node: a process more consolidations behind starts from scratch.
LOG_ENTRIES = 16
#: A consolidation that changed more experiences than this logs nothing (a bulk ingest's:
#: following it would cost about what a plan from scratch does, and the entry would be large on a
#: node every add rewrites).
LOG_IDS_MAX = 500


@dataclass(frozen=True)
class FollowedChanges:
    """What the consolidations between two facts versions changed: every experience whose facts
    they changed (read again as they are now), and the relation totals after the last of them."""

    ids: tuple[str, ...]
    totals: dict[str, int]
    consolidations: int


def log_entry(since: str | None, to: str, changed: Iterable[str], totals: Mapping[str, int]) -> str | None:
    """The entry a consolidation from facts version ``since`` to ``to`` that changed the facts of
    ``changed`` appends, or None when no follower could start from it (no version before) or it is
    too large."""
    ids = sorted(set(changed))
    if since is None or len(ids) > LOG_IDS_MAX:
        return None
    return json.dumps({"from": since, "to": to, "ids": ids, "totals": dict(sorted(totals.items()))},
                      separators=(",", ":"))


def changes_since(log: Sequence[str] | None, held: str, current: str) -> FollowedChanges | None:
    """The changes from facts version ``held`` to ``current`` by the entries of ``log``, or None
    when no chain of entries leads there (a writer that logs nothing came between, or the entries
    were dropped)."""
    if held == current:
        return FollowedChanges((), {}, 0)
    entries: dict[str, dict[str, Any]] = {}
    for text in log or ():
        try:
            entry = json.loads(text)
        except (TypeError, ValueError):
            continue
        if isinstance(entry, dict) and isinstance(entry.get("from"), str):
            entries[entry["from"]] = entry
    ids: dict[str, None] = {}
    at, steps, totals = held, 0, None
    while at != current:
        entry = entries.get(at)
        if entry is None or steps >= len(entries):
            return None
        ids.update(dict.fromkeys(str(i) for i in entry.get("ids") or ()))
        totals, at, steps = entry.get("totals"), str(entry.get("to")), steps + 1
    if not isinstance(totals, dict):
        return None
    return FollowedChanges(tuple(ids), {str(k): int(v) for k, v in totals.items()}, steps)
