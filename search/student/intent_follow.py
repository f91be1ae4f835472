"""The intent channel's kept rows follow the writes (the change feed, :mod:`.change_feed`).

The intent channel reads every workflow of the namespace and the history of requests of the query's
domain in one request (``search_workflow_operations``, ~150 ms of the server's CPU at 10,000
experiences). Kept with the search version, it was read again after every write: under mixed
traffic (an add every half second) it was the largest part of the server's work, even with the
searches taking turns at it (:mod:`.read_turns`). Here the rows kept at an older version are
brought to the new one from the change feed: the ids the writes changed, then the same request for
those experiences only, merged into the kept rows as a whole read would give them (same rows, same
order: the values made of them are the ones a whole read makes, and a workflow table whose rows did
not change is the one kept, :class:`~kbgraph.search.student.bounded.KeptByContent`). Read twice and
given only when both reads agree at one version, as every kept read.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.change_feed import MOVED, Changes, changes_since, first_id, merged_rows, until_two_agree
from kbgraph.search.student.versioned import Kept, KeptByVersion, NamespaceVersions, VersionedRead
from kbgraph.search.student.workflow_operations import IntentRows, read_intent_rows
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["IntentBases", "followed_intent_rows"]

T = TypeVar("T")
#: Rows of one whole-namespace read of the intent channel, each with its experience's id first.
Rows = tuple[tuple[Any, ...], ...]


class IntentBases:
    """By key (the workflows' filters, or the history's with its domain), the version and rows of the
    intent channel's last read confirmed at a version: what a follow starts from. Thread-safe
    (the last put stays)."""

    def __init__(self, size: int):
        self._rows: BoundedMap[Hashable, tuple[str, Rows]] = BoundedMap(size)

    def get(self, key: Hashable) -> tuple[str, Rows] | None:
        return self._rows.get(key)

    def put(self, key: Hashable, version: str, rows: Rows) -> None:
        self._rows.put(key, (version, rows))

    def take(self, kept_by: KeptByVersion[Any, T], key: Hashable | None, kept: Kept[T] | None, read: VersionedRead[Any],
             make: Callable[[Any], T], followed: bool) -> T:
        """:meth:`KeptByVersion.take`, noting the rows a follow may start from once they are confirmed
        (a followed answer is: it was read twice)."""
        value = kept_by.take(key, kept, read, make)
        if key is not None and read.version is not None and not read.unchanged:
            if followed:
                kept_by.hold(key, read.version, value)
            if (now := kept_by.kept(key)) is not None and now[2] and now[0] == read.version:
                self.put(key, read.version, read.rows)
        return value


def followed_intent_rows(gateway: Neo4jGateway, params: Mapping[str, Any], bases: IntentBases,
                         operations_key: Hashable | None, history_key: Hashable | None) -> IntentRows | None:
    """The intent channel's answer at the namespace's version now, from the workflows' rows kept by
    ``operations_key`` and, when the search asks for the history, its rows kept by ``history_key``
    (each at the version it was read at: a domain's history is read by that domain's searches), and
    the change feed since each; None when nothing is kept, the feed cannot tell, or writes kept
    coming in between (the whole read answers)."""
    operations = bases.get(operations_key) if operations_key is not None else None
    history = bases.get(history_key) if history_key is not None else None
    if operations is None or (history_key is not None and history is None):
        return None
    changes = changes_since(gateway, str(params["kb"]))

    def attempt() -> Any:
        since = {operations[0]: changes(operations[0])}
        if history is not None and history[0] not in since:
            since[history[0]] = changes(history[0])
        if len({c.version for c in since.values()}) != 1:
            return MOVED  # a write between the two feed reads
        if any(c.changed is None or c.version is None for c in since.values()):
            return None
        latest = since[operations[0]]
        assert latest.version is not None
        versions = NamespaceVersions(latest.version, latest.feedback)
        if all(version == latest.version for version in since):  # nothing written since: as a whole read sent it (settled)
            return IntentRows(VersionedRead(latest.version, True, ()), None if history is None else
                              VersionedRead(latest.version, True, ()), versions)
        ids = sorted({i for c in since.values() for i in c.changed or ()})
        answer = read_intent_rows(gateway, params, None, history is not None, None, ids) if ids else None
        if answer is not None and answer.versions.search != latest.version:
            return MOVED  # a write between the two requests
        return _merged(latest.version, operations, history, since, answer, versions)

    # The rows agree; the feedback version read beside them may have moved (it is not kept by them).
    followed: IntentRows | None = until_two_agree(
        attempt, lambda a, b: bool(a.operations == b.operations and a.history == b.history),
        lambda rows: bool(rows.operations.unchanged))
    return followed


def _merged(version: str, operations: tuple[str, Rows], history: tuple[str, Rows] | None,
            since: Mapping[str, Changes], answer: IntentRows | None, versions: NamespaceVersions) -> IntentRows:
    """The answer a whole read at ``version`` gives, from the kept rows (each with the version it was
    read at) and ``answer``: the rows of the experiences changed since either version."""
    def brought(kept: tuple[str, Rows], fresh: Rows) -> tuple[tuple[Any, ...], ...]:
        changed = since[kept[0]].changed or []
        wanted = set(changed)
        return tuple(merged_rows(kept[1], changed, [row for row in fresh if first_id(row) in wanted], first_id))

    merged = brought(operations, answer.operations.rows if answer is not None else ())
    merged_history = None
    if history is not None:
        fresh = answer.history.rows if answer is not None and answer.history is not None else ()
        merged_history = VersionedRead(version, False, brought(history, fresh))
    return IntentRows(VersionedRead(version, False, merged), merged_history, versions)
