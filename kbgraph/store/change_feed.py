"""The write side of the change feed (kbgraph.store.search_version): what a write transaction
changed, noted once, just before it commits.

The bump that gives a namespace a new search version starts its entry as "cannot say" ('*'). As
the transaction's writes run, what each changes (:data:`~kbgraph.store.search_version.CHANGED_IDS`)
is gathered here, in the process, with the ABSTRACTION neighbours its joined experiences have
before it runs (one read, only for a write that changes an experience's status, existence or
edges). The transaction's owner (the gateway's ``write_all``, an open transaction) writes the entry
with :func:`flush_notes` before it commits, adding the neighbours the joined experiences have then:
one statement a transaction, not one a write (each rewrote the state node; at 100,000 experiences
an add took 35 ms longer). A transaction whose owner does not flush (a caller's own) leaves
"cannot say": the searches read the namespace whole, as before the feed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from threading import Lock
from typing import Any
from weakref import WeakKeyDictionary

import neo4j

from kbgraph.store.queries import query
from kbgraph.store.search_version import (CHANGE_MAX_CHARS, CHANGE_SEPARATOR, CHANGES_SEARCHED, NOTE, Returned,
                                          changed_ids)

__all__ = ["NEIGHBOURS", "flush_notes", "flush_notes_async", "note_after", "note_before", "note_before_async"]

#: The read that gives the ABSTRACTION neighbours of experiences ``$ids`` of namespace ``$kb``.
NEIGHBOURS = "search_change_neighbours"


@dataclass
class _Noted:
    """What one transaction's writes changed of one namespace so far (``ids`` None: cannot say)."""

    ids: set[str] | None = field(default_factory=set)
    joined: set[str] = field(default_factory=set)


# By transaction (a transaction is one thread's), by namespace.
_pending: WeakKeyDictionary[Any, dict[str, _Noted]] = WeakKeyDictionary()
_lock = Lock()


def _noted(runner: Any, kb: str) -> _Noted:
    with _lock:
        return _pending.setdefault(runner, {}).setdefault(kb, _Noted())


def _fed(runner: Any, name: str, params: Mapping[str, Any]) -> str | None:
    """The namespace whose feed named write ``name`` goes to, or None: it changes nothing searched,
    or it runs outside a transaction (its bump said "cannot say")."""
    kb = params.get("kb")
    in_transaction = not isinstance(runner, (neo4j.Session, neo4j.AsyncSession))
    return kb if name in CHANGES_SEARCHED and isinstance(kb, str) and in_transaction else None


def _before(runner: Any, name: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Notes a write that cannot say; the neighbours read to run first for one that joins (else None)."""
    if (kb := _fed(runner, name, params)) is None:
        return None
    changed = changed_ids(name, params)
    noted = _noted(runner, kb)
    if changed is None:
        noted.ids = None
        return None
    return {"kb": kb, "ids": changed[1]} if changed[1] and noted.ids is not None else None


def _add(runner: Any, kb: str, ids: Any) -> None:
    noted = _noted(runner, kb)
    if noted.ids is not None:
        noted.ids.update(str(i) for i in ids)


def note_before(runner: neo4j.Transaction | neo4j.ManagedTransaction | neo4j.Session, name: str,
                params: Mapping[str, Any]) -> None:
    """Before named write ``name`` runs in ``runner``: a write that cannot say is noted so; one that
    changes its experiences' status, existence or edges has their neighbours now noted."""
    if (read := _before(runner, name, params)) is not None:
        _add(runner, read["kb"], (row["id"] for row in runner.run(query(NEIGHBOURS), read)))


async def note_before_async(runner: Any, name: str, params: Mapping[str, Any]) -> None:
    """:func:`note_before` on the async driver."""
    if (read := _before(runner, name, params)) is not None:
        result = await runner.run(query(NEIGHBOURS), read)
        _add(runner, read["kb"], [row["id"] async for row in result])


def note_after(runner: Any, name: str, params: Mapping[str, Any], rows: Returned) -> None:
    """After named write ``name`` ran in ``runner`` and returned ``rows``: what it changed is noted."""
    if (kb := _fed(runner, name, params)) is None:
        return
    changed = changed_ids(name, params, rows)
    noted = _noted(runner, kb)
    if changed is None:
        noted.ids = None
    elif noted.ids is not None:
        noted.ids.update(changed[0])
        noted.joined.update(changed[1])


def _statements(runner: Any) -> list[dict[str, Any]]:
    with _lock:
        pending = _pending.pop(runner, {})
    return [{"kb": kb, "ids": None if noted.ids is None else sorted(noted.ids), "joined": sorted(noted.joined),
             "separator": CHANGE_SEPARATOR, "max_chars": CHANGE_MAX_CHARS} for kb, noted in pending.items()]


def flush_notes(runner: neo4j.Transaction) -> None:
    """Writes what ``runner``'s writes changed as its version's entry: run just before it commits."""
    for params in _statements(runner):
        runner.run(query(NOTE), params).consume()


async def flush_notes_async(runner: neo4j.AsyncTransaction) -> None:
    """:func:`flush_notes` on the async driver."""
    for params in _statements(runner):
        await (await runner.run(query(NOTE), params)).consume()
