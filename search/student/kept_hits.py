"""The experiences a search returned, as read, kept by the namespace's feedback version, so that a
later search returning them again reads nothing.

``search_hits_get`` reads the k chosen experiences in full (steps, failure modes, relations, how
often their workflow worked): the last request of a settled search, ~2.5 ms of waiting at 10,000
experiences. What it reads changes only in writes that give the namespace a new search version or
a new feedback version (kbgraph.store.search_version: experiences, steps, relations, failure modes,
counters, step rewards), and the feedback version carries the search version. The request reads the
feedback version before the experiences, and its rows are kept under that version; a search that
read the same version (:class:`~kbgraph.search.student.versioned.NamespaceVersions`) takes the rows
of experiences kept under it instead of asking, when every experience it returns is kept. A row
read while a write was being applied (Neo4j reads at read committed) is kept under the version
before that write, which no search reads once the write is visible: what is kept is what a read at
that moment gives.

A write moves the version on, but leaves most kept rows as they are: a search at the new version
sends the versions its hits' rows were kept at, and ``search_hits_get`` reads again only those the
change feed says a write since touched (the experience, an experience its row shows, its
workflow's instances; kbgraph.store.search_version), the others coming back as their ids alone
(:meth:`KeptHits.carried`). Under mixed traffic (an add every few hundred milliseconds) the rows
were read again after every write.

Kept: the rows of the last :data:`HELD` experiences read, each with the version it was read at
(or carried to). Thread-safe.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from threading import Lock
from typing import Any

from kbgraph.store.gateway import Row

__all__ = ["HELD", "KeptHits", "shown_ids"]

#: Experiences' rows kept, at most (~4 KB each: ~16 MB).
HELD = 4096


def shown_ids(row: Row) -> list[str]:
    """The experiences a row of ``search_hits_get`` shows besides its own: its relations' targets
    and its workflow."""
    shown = [str(r["target_id"]) for r in row.get("relations") or () if r is not None]
    workflow = row.get("workflow")
    return shown + ([str(workflow["id"])] if workflow is not None else [])


class KeptHits:
    """The rows of ``search_hits_get``, by experience id, each with the feedback version it was read at."""

    def __init__(self, held: int = HELD):
        self.held = held
        self._rows: OrderedDict[str, tuple[str, Row]] = OrderedDict()
        self._lock = Lock()

    def rows(self, version: str | None, ids: Sequence[str]) -> dict[str, Row] | None:
        """The kept rows of ``ids`` when every one of them is kept at ``version`` (the feedback
        version the search read), else None: the search reads them."""
        if version is None:
            return None
        with self._lock:
            if any((kept := self._rows.get(i)) is None or kept[0] != version for i in ids):
                return None
            for i in ids:
                self._rows.move_to_end(i)
            return {i: self._rows[i][1] for i in ids}

    def sent(self, ids: Sequence[str]) -> tuple[list[str], list[list[Any]]]:
        """What ``search_hits_get`` is sent of the rows of ``ids`` kept: the versions they were read
        at (``known``) and, for each, [id, its version's position in them, :func:`shown_ids`]
        (``kept``)."""
        known: dict[str, int] = {}
        kept: list[list[Any]] = []
        with self._lock:
            for i in dict.fromkeys(ids):
                if (found := self._rows.get(i)) is not None:
                    kept.append([i, known.setdefault(found[0], len(known)), shown_ids(found[1])])
        return list(known), kept

    def keep(self, version: str | None, rows: Iterable[Row]) -> None:
        """Keeps ``rows``, read after ``version`` (the feedback version the same request read first)."""
        if version is None:
            return
        with self._lock:
            for row in rows:
                exp_id = row["experience"].get("id")
                if exp_id is not None:
                    self._rows[str(exp_id)] = (version, row)
                    self._rows.move_to_end(str(exp_id))
            while len(self._rows) > self.held:
                self._rows.popitem(last=False)

    def carried(self, version: str, ids: Sequence[str], sent: Mapping[str, str]) -> dict[str, Row] | None:
        """The kept rows of ``ids``, which the read at ``version`` found unchanged since the
        versions ``sent`` (by id), now kept at ``version``; None when one of them is no longer
        kept at the version sent (another search kept a newer row or dropped it meanwhile)."""
        with self._lock:
            found = {i: self._rows.get(i) for i in ids}
            if any(kept is None or kept[0] not in (sent.get(i), version) for i, kept in found.items()):
                return None
            out: dict[str, Row] = {}
            for i, kept in found.items():
                assert kept is not None
                self._rows[i] = (version, kept[1])
                self._rows.move_to_end(i)
                out[i] = kept[1]
            return out

    def __len__(self) -> int:
        return len(self._rows)
