"""The intent channel's kept rows follow the writes (the change feed, :mod:`.change_feed`).

The intent channel reads every workflow of the namespace and the history of requests of the query's
domain in one request (``search_workflow_operations``, ~100–150 ms of the server's CPU at 10,000
experiences). Kept with the search version, it was read again after every write: under mixed
traffic (an add every half second) it was the largest part of the server's work, even with the
searches taking turns at it (:mod:`.read_turns`). Here the rows kept at an older version are
brought to the new one from the change feed: the ids the writes changed, then the same request for
those experiences only, merged into the kept rows as a whole read would give them (same rows, same
order: the values made of them are the ones a whole read makes, and a workflow table whose rows did
not change is the one kept, :class:`~kbgraph.search.student.bounded.KeptByContent`).

A follow reads once and its answer is used at once, as the other kept parts' follows
(:mod:`.change_feed`): a read may overlap the commit of the version it reaches, so the rows it
starts the next follow from are not confirmed, and that follow reads the write that made their
version again (``inclusive``); while no write comes, the first search once the version has stayed
``settle_seconds`` reads only that write's rows, which confirms them. A whole read's rows are a
base to follow from at once, not confirmed either. (Follows were given only when two agreed at one
version, and a whole read's rows were followed only once a second whole read confirmed them: under
steady writes, an add every 0.25 s, the pair rarely agreed, and a whole read of ~100 ms of the
server's CPU answered one search in ten, a third of the server's work in ``bench online``'s mixed
round.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple, TypeVar

from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.change_feed import MOVED, Changes, between_writes, changes_since, first_id, merged_rows
from kbgraph.search.student.kept_in_background import SETTLE_SECONDS, FollowBase
from kbgraph.search.student.versioned import Kept, KeptByVersion, NamespaceVersions, VersionedRead
from kbgraph.search.student.workflow_operations import IntentRows, read_intent_rows
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["Followed", "IntentBase", "IntentBases", "followed_intent_rows"]

T = TypeVar("T")
#: Rows of one whole-namespace read of the intent channel, each with its experience's id first.
Rows = tuple[tuple[Any, ...], ...]


#: What a follow of one key starts from (:class:`FollowBase`: version, rows, whether the write that
#: made the version was read again since it was reached, when it was reached); no value is kept
#: with the rows (the values are kept by version: :class:`KeptByVersion`).
IntentBase = FollowBase[Rows, None]


class Followed(NamedTuple):
    """A follow's answer, and whether its rows are confirmed (see the module docstring)."""

    rows: IntentRows
    confirmed: bool


class IntentBases:
    """By key (the workflows' filters, or the history's with its domain), what the intent channel's
    follows start from (:class:`IntentBase`). Thread-safe (the last put stays)."""

    def __init__(self, size: int, settle_seconds: float = SETTLE_SECONDS):
        self._rows: BoundedMap[Hashable, IntentBase] = BoundedMap(size)
        #: How long a version must have stayed before a follow reads its write again to confirm it.
        self.settle_seconds = settle_seconds

    def get(self, key: Hashable) -> IntentBase | None:
        return self._rows.get(key)

    def put(self, key: Hashable, base: IntentBase) -> None:
        self._rows.put(key, base)

    def take(self, kept_by: KeptByVersion[Any, T], key: Hashable | None, kept: Kept[T] | None, read: VersionedRead[Any],
             make: Callable[[Any], T], followed: Followed | None) -> T:
        """:meth:`KeptByVersion.take`, keeping the rows as what the next follow starts from: a
        follow's (given at once: :meth:`KeptByVersion.hold`), or a whole read's, confirmed when it
        was read at the version kept (a second read of it)."""
        value = kept_by.take(key, kept, read, make)
        if key is None or read.version is None or read.unchanged:
            return value
        if followed is not None:
            kept_by.hold(key, read.version, value)
            confirmed = followed.confirmed
        else:
            confirmed = kept is not None and kept[0] == read.version
        base = self.get(key)
        since = base.since if base is not None and base.version == read.version else time.monotonic()
        self.put(key, FollowBase(read.version, read.rows, None, confirmed, since))
        return value


def followed_intent_rows(gateway: Neo4jGateway, params: Mapping[str, Any], bases: IntentBases,
                         operations_key: Hashable | None, history_key: Hashable | None,
                         operations_kept: Kept[Any] | None = None, history_kept: Kept[Any] | None = None) -> Followed | None:
    """The intent channel's answer at the namespace's version now, from the workflows' rows kept by
    ``operations_key`` and, when the search asks for the history, its rows kept by ``history_key``
    (each at the version it was read at: a domain's history is read by that domain's searches), and
    the change feed since each; None when nothing is kept, the feed cannot tell, or writes kept
    coming in between (the whole read answers). ``operations_kept`` and ``history_kept`` are the
    values kept for those keys: an answer that nothing was written since stands for them, so it is
    given only when they are of the version it says."""
    operations = bases.get(operations_key) if operations_key is not None else None
    history = bases.get(history_key) if history_key is not None else None
    if operations is None or (history_key is not None and history is None):
        return None
    kept = [base for base in (operations, history) if base is not None]
    changes = changes_since(gateway, str(params["kb"]))

    def attempt() -> Any:
        since: dict[tuple[str, bool], Changes] = {}
        for base in kept:
            if (base.version, not base.confirmed) not in since:
                since[base.version, not base.confirmed] = changes(base.version, not base.confirmed)
        if len({c.version for c in since.values()}) != 1:
            return MOVED  # a write between the two feed reads
        if any(c.changed is None or c.version is None for c in since.values()):
            return None
        latest = next(iter(since.values()))
        assert latest.version is not None
        versions = NamespaceVersions(latest.version, latest.feedback)
        written = any(base.version != latest.version for base in kept)
        settled = all(base.confirmed or time.monotonic() - base.since < bases.settle_seconds for base in kept)
        if not written and settled:  # nothing written since, nothing to confirm yet: as a whole read sent it
            values = [operations_kept, *([history_kept] if history is not None else [])]
            if any(value is None or value[0] != latest.version for value in values):
                return None  # what this answer stands for is not kept (dropped, or kept by a read in between)
            return Followed(IntentRows(VersionedRead(latest.version, True, ()), None if history is None else
                                       VersionedRead(latest.version, True, ()), versions), True)
        ids = sorted({i for c in since.values() for i in c.changed or ()})
        answer = read_intent_rows(gateway, params, None, history is not None, None, ids) if ids else None
        if answer is not None and answer.versions.search != latest.version:
            return MOVED  # a write between the two requests
        # Read again the write that made the version it stayed at: confirmed; a newer version's not.
        return Followed(_merged(latest.version, operations, history, since, answer, versions), not written)

    followed: Followed | None = between_writes(attempt)
    return followed


def _merged(version: str, operations: IntentBase, history: IntentBase | None,
            since: Mapping[tuple[str, bool], Changes], answer: IntentRows | None, versions: NamespaceVersions) -> IntentRows:
    """The answer a whole read at ``version`` gives, from the kept rows (each with the version it was
    read at) and ``answer``: the rows of the experiences changed since either version."""
    def brought(kept: IntentBase, fresh: Rows) -> tuple[tuple[Any, ...], ...]:
        changed = since[kept.version, not kept.confirmed].changed or []
        wanted = set(changed)
        return tuple(merged_rows(kept.rows, changed, [row for row in fresh if first_id(row) in wanted], first_id))

    merged = brought(operations, answer.operations.rows if answer is not None else ())
    merged_history = None
    if history is not None:
        fresh = answer.history.rows if answer is not None and answer.history is not None else ()
        merged_history = VersionedRead(version, False, brought(history, fresh))
    return IntentRows(VersionedRead(version, False, merged), merged_history, versions)
