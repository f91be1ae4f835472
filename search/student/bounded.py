"""A small thread-safe map that keeps the last entries put: what the search caches of a namespace
(:class:`KeptByContent`,
:class:`~kbgraph.search.student.versioned.KeptByVersion`,
:class:`~kbgraph.search.student.text_vectors.IntentVectors`) hold their entries in."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from threading import Lock
from typing import Generic, TypeVar

__all__ = ["BoundedMap", "KeptByContent"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedMap(Generic[K, V]):
    """At most ``size`` entries: putting one more drops the oldest put. Thread-safe; nothing is
    computed under the lock, so a caller that makes a value does so outside it."""

    def __init__(self, size: int):
        self.size = size
        self._entries: dict[K, V] = {}
        self._lock = Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._entries.get(key)

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The entries of ``keys`` that are kept, under one hold of the lock."""
        with self._lock:
            return {key: value for key in keys if (value := self._entries.get(key)) is not None}

    def put(self, key: K, value: V) -> None:
        """Keeps ``value`` for ``key`` as the newest entry."""
        self.put_many({key: value})

    def put_many(self, entries: Mapping[K, V]) -> None:
        """Keeps each of ``entries`` as the newest, in their order."""
        with self._lock:
            for key, value in entries.items():
                self._entries.pop(key, None)
                self._entries[key] = value
            while len(self._entries) > self.size:
                del self._entries[next(iter(self._entries))]

    def items(self) -> list[tuple[K, V]]:
        """The entries, oldest put first (a copy: taken under one hold of the lock)."""
        with self._lock:
            return list(self._entries.items())

    def __len__(self) -> int:
        return len(self._entries)


class KeptByContent(Generic[K, V]):
    """What was made from what the namespace holds, kept by that content (the rows one search read):
    the same rows give back the same object, other rows (a write changed them) another, so nothing
    kept can be stale. Holds the last ``size`` keys; thread-safe, an object two searches ask for at
    once may be made twice (outside the lock)."""

    def __init__(self, size: int):
        self._kept: BoundedMap[K, V] = BoundedMap(size)

    @property
    def size(self) -> int:
        return self._kept.size

    def get(self, key: K, make: Callable[[], V]) -> V:
        kept = self._kept.get(key)
        if kept is None:
            kept = make()
            self._kept.put(key, kept)
        return kept

    def __len__(self) -> int:
        return len(self._kept)
