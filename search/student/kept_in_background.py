"""A kept value of a large namespace read off the searches' path (:class:`KeptInBackground`), for
reads too long for a search to wait on, and brought forward by the change feed
(kbgraph.search.student.change_feed) where it can tell what the writes changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from threading import Lock
from typing import Any, Generic, NamedTuple, TypeVar

from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.change_feed import WritesKeptComing
from kbgraph.search.student.versioned import Follow, Kept, KeptByVersion, KeptPart, Patch, VersionedRead, sent

__all__ = ["SETTLE_PER_READ", "SETTLE_SECONDS", "FollowBase", "KeptInBackground"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")


class FollowBase(NamedTuple, Generic[R, V]):
    """What a follow of the change feed starts from: the version, the rows and the value kept, whether
    the rows of the write that made that version were read again since it was reached (a follow
    reads once: it may have seen part of that write's commit), and when it was reached."""

    version: str
    rows: R
    value: V
    confirmed: bool
    since: float


#: Seconds a version must have been the one searches see before :class:`KeptInBackground` reads it,
#: at least; and at least this many times as long as the last read took.
SETTLE_SECONDS = 1.0
SETTLE_PER_READ = 4.0


class KeptInBackground(Generic[K, V]):
    """Keeps the values of a :class:`KeptByVersion` current off the searches' path, for reads too
    long for a search to wait on (a large namespace's texts or vectors: ~0.2–0.6 s at 10,000
    experiences, seconds at 100,000). A search reads the namespace's version (one index seek) and
    asks :meth:`current`: the kept value when it was read at that version (a whole read once
    confirmed, see below); else None (the search asks the indexes, as it would without it) and a background read
    starts once the version has been the one searches see for ``settle_seconds``, and for
    ``settle_per_read`` times as long as the last read took, one per key at a time. While writes
    keep changing the version no read is spent on one about to change: under mixed traffic (bench
    concurrent, 10 % adds, 8 clients) the reads of versions that stayed a second cost ~10 % of the
    searches per second (18.2 against 20.2 with nothing kept), a read of ~0.7 s at 10,000
    experiences then waits for ~3 s of quiet. A part the change feed follows does not wait for
    quiet: its whole read is confirmed by following the feed from the version it read (see
    :meth:`current`): it waits as long from when it was first wanted, and its first not at all.
    A followed value is given at once; the rows of the write that made its version are read again
    by the next follow from it: the next write's, or, once the version has stayed
    ``settle_seconds``, one the next search starts, which confirms them. ``submit`` runs a read in
    a thread of the caller's. Thread-safe."""

    def __init__(self, kept: KeptByVersion[K, V], submit: Callable[[Callable[[], None]], Any],
                 settle_seconds: float = SETTLE_SECONDS, settle_per_read: float = SETTLE_PER_READ,
                 follows_confirm: bool = False):
        self.kept = kept
        #: Whether a follow's value is confirmed as given (its feed reads until two reads agree:
        #: kbgraph.search.student.change_feed.ChangeFeed.reads).
        self.follows_confirm = follows_confirm
        self._submit = submit
        self.settle_seconds = settle_seconds
        self.settle_per_read = settle_per_read
        self._last_read_s = 0.0
        self._lock = Lock()
        self._seen: dict[K, tuple[str, float]] = {}
        self._running: dict[K, Future[None]] = {}
        #: By key, the version, rows and value a follow starts from (kbgraph.search.student.change_feed),
        #: and whether the rows of the write that made that version were read again since (a follow
        #: read them once: it may have seen part of that write's commit); and the version of the rows
        #: a follow could not bring forward (the feed could not tell what a write since changed).
        self._rows: BoundedMap[K, FollowBase[Any, V]] = BoundedMap(kept.size)
        self._unfollowed: BoundedMap[K, str] = BoundedMap(kept.size)
        self._following: set[K] = set()  # the keys a follow is bringing forward now

    def current(self, key: K | None, version: str | None, read: Callable[[str | None], VersionedRead[R]],
                make: Callable[[R], V], wait: bool = False, follow: Follow[R] | None = None,
                patch: Patch[V, R] | None = None) -> V | None:
        """The value kept for ``key`` when it was read at ``version`` (the version a search just
        read; a whole read once confirmed, a follow at once); else None, and ``make`` of ``read``'s rows is kept in the background
        (see the class docstring). With ``wait``, it is read now in the caller's thread instead,
        twice as the background does, and given when confirmed at ``version`` (a write in between:
        None). A ``key`` of None or a namespace without a version: None.
        With ``follow`` (the change feed: kbgraph.search.student.change_feed), a value kept at an
        older version is brought to the new one at once, in the background, from its rows and the
        rows the writes since changed (the value made by ``patch`` of the one before when given, else
        by ``make``); where the feed cannot tell, the whole read above, confirmed by a follow from
        its version, the rows of the write that made it read again too (it may have seen part of a
        commit under way), else by a second whole read (at one version: writes must pause)."""
        if key is None or version is None:
            return None
        kept = self.kept.kept(key)
        if kept is not None and kept[2] and kept[0] == version:
            if follow is not None:
                self._confirm_once_settled(key, version, follow, make, patch)
            return kept[1]
        if wait:
            made, last = self._holding(make, follow)
            for _ in range(2):  # the second read of a version confirms the first
                self.kept.get(key, read, made)
            kept = self._held(key, last)
            return kept[1] if kept is not None and kept[2] and kept[0] == version else None
        now = time.monotonic()
        with self._lock:
            base = self._rows.get(key) if follow is not None else None
            if base is not None and (base.version == version or self._unfollowed.get(key) == base.version):
                # Its rows are this version's (the value is being confirmed), or the feed cannot
                # bring them forward (a write that could not say what it changed): a whole read.
                base = None
            if base is not None and follow is not None:
                self._start_follow(key, version, base, follow, make, patch)
                return None
            # A read the feed then follows is never wasted: it waits no longer for a longer last read.
            settle = self.settle_seconds if follow is not None else max(self.settle_seconds,
                                                                        self.settle_per_read * self._last_read_s)
            seen = self._seen.get(key)
            # A whole read waits for its version to stay a while; one the feed then follows (it is
            # never wasted: writes during it are read again) waits as long from when it was first
            # wanted, whatever the writes meanwhile (under steady writes a version never stays),
            # and not at all when nothing is kept yet (a process's first searches).
            if seen is None or (seen[0] != version and follow is None):
                self._seen[key] = (version, now)
                if settle > 0 and (follow is None or kept is not None):
                    return None
            elif now - seen[1] < settle:
                return None
            if key in self._running:
                return None
            done: Future[None] = Future()  # set when the read is over, whatever its end
            self._running[key] = done
        self._start(key, done, lambda: self._refresh(key, read, *self._holding(make, follow), done, follow, patch))
        return None

    def current_of(self, key: K | None, version: str | None, part: KeptPart[R, V], wait: bool = False) -> V | None:
        """:meth:`current` with ``part``'s read, make, follow and patch."""
        return self.current(key, version, part.read, part.make, wait, part.follow, part.patch)

    def _confirm_once_settled(self, key: K, version: str, follow: Follow[R], make: Callable[[R], V],
                              patch: Patch[V, R] | None) -> None:
        """A value followed to ``version`` and not confirmed by a later write since: once the version
        has stayed ``settle_seconds``, a follow reads the rows of its own write again."""
        with self._lock:
            base = self._rows.get(key)
            if (base is not None and base.version == version and not base.confirmed
                    and time.monotonic() - base.since >= self.settle_seconds):
                self._start_follow(key, version, base, follow, make, patch)

    def _start_follow(self, key: K, version: str, base: FollowBase[R, V], follow: Follow[R],
                      make: Callable[[R], V], patch: Patch[V, R] | None) -> None:
        """Starts a follow from ``base`` unless one is under way, or the feed could not bring ``base``
        forward (called with the lock held)."""
        if key not in self._running and self._unfollowed.get(key) != base.version:
            following: Future[None] = Future()
            self._running[key] = following
            self._following.add(key)
            self._start(key, following, lambda: self._follow(key, version, base, follow, make, patch, following))

    def _start(self, key: K, done: Future[None], job: Callable[[], None]) -> None:
        try:
            submitted = self._submit(job)
        except RuntimeError:  # the pool was shut down (the retriever closed)
            self._finish(key, done)
            return
        if isinstance(submitted, Future):  # dropped unrun when the retriever closes: nobody waits for it
            submitted.add_done_callback(lambda job_run: self._finish(key, done) if job_run.cancelled() else None)

    @staticmethod
    def _holding(make: Callable[[R], V], follow: Follow[R] | None) -> tuple[Callable[[R], V], list[tuple[R, V]] | None]:
        """``make`` and, with ``follow``, a ``make`` that also notes the last rows and value it made
        (see :meth:`_held`)."""
        if follow is None:
            return make, None
        last: list[tuple[R, V]] = []

        def made(rows: R) -> V:
            value = make(rows)
            last[:] = [(rows, value)]
            return value

        return made, last

    def _held(self, key: K, last: list[tuple[R, V]] | None) -> Kept[V] | None:
        """What is kept for ``key`` after reads with :meth:`_holding`'s ``make``: once confirmed, and
        made by it, its rows are what a follow starts from."""
        kept = self.kept.kept(key)
        if kept is not None and kept[2] and last and last[0][1] is kept[1]:
            self._rows.put(key, FollowBase(kept[0], last[0][0], kept[1], True, time.monotonic()))
        return kept

    def _follow(self, key: K, version: str, base: FollowBase[R, V], follow: Follow[R], make: Callable[[R], V],
                patch: Patch[V, R] | None, done: Future[None]) -> None:
        try:
            # From rows not confirmed, the write that made their version is read again too.
            try:
                followed = follow(base.version, base.rows, inclusive=not base.confirmed)
            except WritesKeptComing:
                return  # the next search follows again from the same rows
            if followed is None:  # the feed cannot tell: a whole read (see current)
                self._unfollowed.put(key, base.version)
                return
            self._hold_followed(key, base, followed, make, patch)
        finally:
            self._finish(key, done)

    def _hold_followed(self, key: K, base: FollowBase[R, V], followed: tuple[str, R, list[str]],
                       make: Callable[[R], V], patch: Patch[V, R] | None) -> None:
        """Keeps the value a follow from ``base`` brought its value to, to be given at once, and its
        rows for the next follow: confirmed when they are ``base``'s version's, read again (no write
        came since), else to be confirmed by the next follow."""
        at, rows, changed = followed
        value = patch(base.value, rows, changed) if patch is not None else make(rows)
        self.kept.hold(key, at, value)
        self._rows.put(key, FollowBase(at, rows, value, at == base.version or self.follows_confirm, time.monotonic()))

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
                 last: list[tuple[R, V]] | None, done: Future[None], follow: Follow[R] | None = None,
                 patch: Patch[V, R] | None = None) -> None:
        started = time.monotonic()
        try:
            for _ in range(2):  # the second read at a version confirms the first
                kept = self.kept.kept(key)
                self.kept.take(key, kept, read(sent(kept)), make)
                held = self._held(key, last)
                if held is not None and held[2]:
                    break
                if follow is not None and self._confirmed_by_feed(key, last, follow, make, patch):
                    break
        finally:
            self._last_read_s = time.monotonic() - started
            with self._lock:
                self._seen.pop(key, None)  # the next whole read waits from when it is wanted
            self._finish(key, done)

    def _confirmed_by_feed(self, key: K, last: list[tuple[R, V]] | None, follow: Follow[R], make: Callable[[R], V],
                           patch: Patch[V, R] | None) -> bool:
        """Confirms a whole read not confirmed yet by following the feed from its version, the write
        that made it included: every row a commit under way could have changed is read again (a
        second whole read needs the writes to pause). False: cannot tell."""
        kept = self.kept.kept(key)
        if kept is None or kept[2] or not last or last[0][1] is not kept[1]:
            return False
        base = FollowBase(kept[0], last[0][0], kept[1], False, time.monotonic())
        try:
            followed = follow(base.version, base.rows, inclusive=True)
        except WritesKeptComing:
            return False
        if followed is not None:
            self._hold_followed(key, base, followed, make, patch)
        return followed is not None

    def await_follows(self, seconds: float) -> None:
        """Waits up to ``seconds`` for the follows under way (a search that would otherwise ask the
        indexes: the server's CPU is the scarcer under mixed traffic)."""
        with self._lock:
            running = [self._running[key] for key in self._following if key in self._running]
        deadline = time.monotonic() + seconds
        for job in running:
            try:
                job.result(max(deadline - time.monotonic(), 0.0))
            except TimeoutError:
                return

    def following(self) -> bool:
        """Whether a follow of the change feed is bringing a kept value to a newer version now (it
        takes a few requests: a search soon after may find the value current)."""
        with self._lock:
            return bool(self._following)

    def _finish(self, key: K, done: Future[None]) -> None:
        with self._lock:
            self._running.pop(key, None)
            self._following.discard(key)
        done.set_result(None)
