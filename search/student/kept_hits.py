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

Kept: the rows of the last :data:`HELD` experiences read, under one version (a new version
replaces them all). Thread-safe.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from threading import Lock

from kbgraph.store.gateway import Row

__all__ = ["HELD", "KeptHits"]

#: Experiences' rows kept, at most (~4 KB each: ~16 MB).
HELD = 4096


class KeptHits:
    """The rows of ``search_hits_get`` read at one feedback version, by experience id."""

    def __init__(self, held: int = HELD):
        self.held = held
        self._version: str | None = None
        self._rows: OrderedDict[str, Row] = OrderedDict()
        self._lock = Lock()

    def rows(self, version: str | None, ids: Sequence[str]) -> dict[str, Row] | None:
        """The kept rows of ``ids`` when every one of them was read at ``version`` (the feedback
        version the search read), else None: the search reads them."""
        if version is None:
            return None
        with self._lock:
            if version != self._version or any(i not in self._rows for i in ids):
                return None
            for i in ids:
                self._rows.move_to_end(i)
            return {i: self._rows[i] for i in ids}

    def keep(self, version: str | None, rows: Iterable[Row]) -> None:
        """Keeps ``rows``, read after ``version`` (the feedback version the same request read
        first); rows of another version are dropped."""
        if version is None:
            return
        with self._lock:
            if version != self._version:
                self._version = version
                self._rows.clear()
            for row in rows:
                exp_id = row["experience"].get("id")
                if exp_id is not None:
                    self._rows[str(exp_id)] = row
                    self._rows.move_to_end(str(exp_id))
            while len(self._rows) > self.held:
                self._rows.popitem(last=False)

    def __len__(self) -> int:
        return len(self._rows)
