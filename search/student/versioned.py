"""What a search makes of a whole-namespace read, kept with the namespace's search version
(kbgraph.store.search_version), so that the next search with the same filters skips the read.

Three channels read the namespace as a whole: the intent channel every workflow's operations and, in
the same request, the history of requests of the query's domain (``search_workflow_operations``; one
answer serves both kept reads, :meth:`KeptByVersion.kept` / :meth:`KeptByVersion.take`), the lexical
scan every experience's text (``search_experience_texts``), and above ``exact_scan_max`` the
semantic and structural channels every experience's vectors (``search_experience_vector_rows``,
kbgraph.search.student.vector_model). Each request first reads the namespace's search version, a
token on its state node that every write changing those rows replaces in its own transaction, and is
sent the version the caller kept its rows with (``$known``): when the two are equal the server reads
nothing and answers ``unchanged``. The version is read before the rows, so rows are at worst kept
under an older version than theirs (the next search reads them again). Neo4j reads at read
committed, and a read that overlaps a commit being applied may see part of it: so the rows of a
version are read twice, by the first two searches that see it, and only the second read is trusted
(the kept value is the same object when the rows are, see ``KeptByContent``).

Kept per set of filters (:func:`filter_key`: namespace, statuses, domains, kinds, success and quality
floors, the calling agent, whose own experiences it sees), so a tenant's or an agent's rows are never
another's; the vectors are kept per namespace and filtered in the process, per search. Feedback changes an experience's quality without a new version (a burst of feedback must
not queue on the namespace's state node): a search with a quality floor above 0 reads its rows
every time (:func:`version_applies`); quality is in [0, 1], so a floor of 0 filters nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from threading import Lock
from typing import Any, Generic, TypeVar

from kbgraph.search.student.bounded import BoundedMap

__all__ = ["SETTLE_SECONDS", "Kept", "KeptByVersion", "KeptInBackground", "NamespaceVersions", "VersionedRead",
           "filter_key", "kept_key", "sent", "version_applies"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")


@dataclass(frozen=True)
class VersionedRead(Generic[R]):
    """One answer of a versioned whole-namespace read: the namespace's search version (None: the
    namespace has none yet, nothing is kept), whether it was the one sent, and the rows (empty when
    ``unchanged``)."""

    version: str | None
    unchanged: bool
    rows: R


@dataclass(frozen=True)
class NamespaceVersions:
    """What a search read of its namespace's versions (search_version_of, or the intent channel's
    request): the search version, and the feedback version (the search version and the token of
    each feedback stripe, kbgraph.store.search_version; None when there is no search version)."""

    search: str | None
    feedback: str | None

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> NamespaceVersions:
        """From an answer's ``version`` and ``feedback``."""
        search, feedback = answer["version"], answer["feedback"]
        return cls(None if search is None else str(search), None if feedback is None else str(feedback))


def version_applies(params: Mapping[str, Any]) -> bool:
    """Whether rows read with these filters may be kept by the search version: not with a quality
    floor above 0, which feedback's quality changes (no new version) can cross."""
    return float(params["min_quality"]) <= 0.0


def kept_key(params: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What a whole-namespace read with ``params`` is kept by, or None when it is read every time."""
    return filter_key(params) if version_applies(params) else None


def filter_key(params: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the rows of a whole-namespace read depend on besides the namespace's contents."""
    return (params["kb"], tuple(params["statuses"]), _tuple(params["domains"]), _tuple(params["kinds"]),
            float(params["min_success"]), float(params["min_quality"]), params["agent"])


def _tuple(values: Any) -> tuple[Any, ...] | None:
    return None if values is None else tuple(values)


#: What :class:`KeptByVersion` holds for one key: the version the rows were read at, what was made
#: of them, and whether a second read at that version confirmed them.
Kept = tuple[str, V, bool]


def sent(kept: Kept[V] | None) -> str | None:
    """The version to send with a read for which ``kept`` is held: its own once confirmed, else None
    (the rows are read)."""
    return kept[0] if kept is not None and kept[2] else None


class KeptByVersion(Generic[K, V]):
    """What was made of one whole-namespace read per key (a set of filters), with the search version
    it was read at and whether a second read at that version confirmed it. Holds the last ``size``
    keys; thread-safe. Two searches that read at once both keep theirs, the last one stays: an older
    version than the server's is only read again."""

    def __init__(self, size: int):
        self._kept: BoundedMap[K, Kept[V]] = BoundedMap(size)

    @property
    def size(self) -> int:
        return self._kept.size

    def get(self, key: K | None, read: Callable[[str | None], VersionedRead[R]], make: Callable[[R], V]) -> V:
        """What ``make`` made of the rows ``read(known)`` returns, ``known`` being the confirmed
        version kept for ``key`` (else None: the rows are read); the kept value itself when the server
        says it is unchanged. A ``key`` of None keeps nothing (filters :func:`version_applies` refuses)."""
        kept = self.kept(key)
        return self.take(key, kept, read(sent(kept)), make)

    def kept(self, key: K | None) -> Kept[V] | None:
        """What is kept for ``key`` now: (version, value, confirmed), to send its version with
        :func:`sent` and to hand to :meth:`take` with the answer (a read that serves several keys
        at once, as the intent channel's does)."""
        return self._kept.get(key) if key is not None else None

    def take(self, key: K | None, kept: Kept[V] | None, answer: VersionedRead[R], make: Callable[[R], V]) -> V:
        """:meth:`get`'s value from an answer to a read sent :func:`sent` of ``kept``."""
        if kept is not None and answer.unchanged:
            return kept[1]
        value = make(answer.rows)
        if key is not None and answer.version is not None:
            self._kept.put(key, (answer.version, value, kept is not None and kept[0] == answer.version))
        return value

    def __len__(self) -> int:
        return len(self._kept)


#: Seconds a version must have been the one searches see before :class:`KeptInBackground` reads it,
#: at least; and at least this many times as long as the last read took.
SETTLE_SECONDS = 1.0
SETTLE_PER_READ = 4.0


class KeptInBackground(Generic[K, V]):
    """Keeps the values of a :class:`KeptByVersion` current off the searches' path, for reads too
    long for a search to wait on (a large namespace's texts or vectors: ~0.2–0.6 s at 10,000
    experiences, seconds at 100,000). A search reads the namespace's version (one index seek) and
    asks :meth:`current`: the kept value when it was read, and confirmed by a second read, at that
    version; else None (the search asks the indexes, as it would without it) and a background read
    starts once the version has been the one searches see for ``settle_seconds``, and for
    ``settle_per_read`` times as long as the last read took, one per key at a time. While writes
    keep changing the version no read is spent on one about to change: under mixed traffic (bench
    concurrent, 10 % adds, 8 clients) the reads of versions that stayed a second cost ~10 % of the
    searches per second (18.2 against 20.2 with nothing kept), a read of ~0.7 s at 10,000
    experiences then waits for ~3 s of quiet.
    ``submit`` runs a read in a thread of the caller's. Thread-safe."""

    def __init__(self, kept: KeptByVersion[K, V], submit: Callable[[Callable[[], None]], Any],
                 settle_seconds: float = SETTLE_SECONDS, settle_per_read: float = SETTLE_PER_READ):
        self.kept = kept
        self._submit = submit
        self.settle_seconds = settle_seconds
        self.settle_per_read = settle_per_read
        self._last_read_s = 0.0
        self._lock = Lock()
        self._seen: dict[K, tuple[str, float]] = {}
        self._running: dict[K, Future[None]] = {}

    def current(self, key: K | None, version: str | None, read: Callable[[str | None], VersionedRead[R]],
                make: Callable[[R], V], wait: bool = False) -> V | None:
        """The value kept for ``key`` when it was read and confirmed at ``version`` (the version a
        search just read); else None, and ``make`` of ``read``'s rows is kept in the background
        (see the class docstring). With ``wait``, it is read now in the caller's thread instead,
        twice as the background does, and given when confirmed at ``version`` (a write in between:
        None). A ``key`` of None or a namespace without a version: None."""
        if key is None or version is None:
            return None
        kept = self.kept.kept(key)
        if kept is not None and kept[2] and kept[0] == version:
            return kept[1]
        if wait:
            for _ in range(2):  # the second read of a version confirms the first
                self.kept.get(key, read, make)
            kept = self.kept.kept(key)
            return kept[1] if kept is not None and kept[2] and kept[0] == version else None
        now = time.monotonic()
        with self._lock:
            settle = max(self.settle_seconds, self.settle_per_read * self._last_read_s)
            seen = self._seen.get(key)
            if seen is None or seen[0] != version:
                self._seen[key] = (version, now)
                if settle > 0:
                    return None
            elif now - seen[1] < settle:
                return None
            if key in self._running:
                return None
            done: Future[None] = Future()  # set when the read is over, whatever its end
            self._running[key] = done
        try:
            self._submit(lambda: self._refresh(key, read, make, done))
        except RuntimeError:  # the pool was shut down (the retriever closed)
            self._finish(key, done)
        return None

    def confirmed(self, key: K | None) -> tuple[str, V] | None:
        """The version and value kept for ``key`` when they were read and confirmed, whatever
        version searches see now, and without starting a read: a search works with it while it
        reads the version, and keeps that work only when :meth:`current` then gives it the same
        value at that version (kbgraph.search.student.channels)."""
        kept = self.kept.kept(key)
        return (kept[0], kept[1]) if kept is not None and kept[2] else None

    def settle(self) -> None:
        """Waits for the background reads under way (tests, benchmarks)."""
        with self._lock:
            running = list(self._running.values())
        for job in running:
            job.result()

    def _refresh(self, key: K, read: Callable[[str | None], VersionedRead[R]], make: Callable[[R], V],
                 done: Future[None]) -> None:
        started = time.monotonic()
        try:
            for _ in range(2):  # the second read at a version confirms the first
                kept = self.kept.kept(key)
                self.kept.take(key, kept, read(sent(kept)), make)
                held = self.kept.kept(key)
                if held is not None and held[2]:
                    break
        finally:
            self._last_read_s = time.monotonic() - started
            self._finish(key, done)

    def _finish(self, key: K, done: Future[None]) -> None:
        with self._lock:
            self._running.pop(key, None)
        done.set_result(None)
