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

A value kept at an older version is brought to a newer one without reading the namespace again
when the change feed can tell which experiences the writes since changed (:mod:`.change_feed`,
:meth:`KeptInBackground.current`'s ``follow``).

Kept per set of filters (:func:`filter_key`: namespace, statuses, domains, kinds, success and quality
floors, the calling agent, whose own experiences it sees), so a tenant's or an agent's rows are never
another's; the vectors are kept per namespace and filtered in the process, per search. Feedback changes an experience's quality without a new version (a burst of feedback must
not queue on the namespace's state node): a search with a quality floor above 0 reads its rows
every time (:func:`version_applies`); quality is in [0, 1], so a floor of 0 filters nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kbgraph.search.student.bounded import BoundedMap

__all__ = ["Follow", "Kept", "KeptByVersion", "KeptPart", "NamespaceVersions",
           "Patch", "RowsRead", "VersionedRead", "filter_key", "kept_key", "sent", "version_applies"]

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


class RowsRead(Protocol[R]):
    """A versioned whole-namespace read (``known``: the version the caller kept its rows with), of
    experiences ``ids`` only when given (the change feed: kbgraph.search.student.change_feed)."""

    def __call__(self, known: str | None, ids: list[str] | None = None) -> VersionedRead[R]: ...


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


class Follow(Protocol[R]):
    """How a kept value follows the writes (kbgraph.search.student.change_feed.follow): from the
    version its rows were read at and those rows, the version now, its rows and the ids whose rows
    changed (None: the feed cannot tell). With ``inclusive``, the rows the write that made that
    version changed are read again too (rows of a whole read not yet confirmed)."""

    def __call__(self, version: str, rows: R, inclusive: bool = False) -> tuple[str, R, list[str]] | None: ...

#: A kept value made anew from the one before it, the rows now and the ids whose rows changed: the
#: value ``make`` makes of those rows, made with less work.
Patch = Callable[[V, R, list[str]], V]

@dataclass(frozen=True)
class KeptPart(Generic[R, V]):
    """How one kept part of a namespace is read and made (kbgraph.search.student.kept_parts): its
    versioned read, the value made of its rows and, where the change feed applies, how its rows
    follow the writes and how a value is made from the one before."""

    read: Callable[[str | None], VersionedRead[R]]
    make: Callable[[R], V]
    follow: Follow[R] | None = None
    patch: Patch[V, R] | None = None


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

    def hold(self, key: K, version: str, value: V) -> None:
        """Keeps ``value`` for ``key`` as read at ``version``, to be given (a follow of the change
        feed: kbgraph.search.student.change_feed)."""
        self._kept.put(key, (version, value, True))

    def __len__(self) -> int:
        return len(self._kept)
