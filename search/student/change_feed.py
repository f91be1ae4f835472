"""How what a process keeps of a namespace follows its writes: the change feed
(kbgraph.store.search_version) says which experiences the writes since a version changed, and only
their rows are read again.

Without it, every write left the kept rows (texts, vectors, scoring facts, what feedback changes) of
a large namespace stale until a read of the whole namespace, ~0.1–0.2 s of the server's time each
at 10,000 experiences, which :class:`~kbgraph.search.student.kept_in_background.KeptInBackground` starts
only once writes have paused for a second. Under mixed traffic (an add every half second) they never
paused, and every search asked the indexes: ~50 ms of the server's CPU a search at 10,000.

With it, a search that reads a newer version than the kept one starts a *follow*: the ids changed
since the kept version (``search_changes_since``), then those experiences' rows at the new version
(the part's own read, given ``$ids``), merged into the kept rows as a read of the whole namespace
would give them (the other rows as they were, in id order): the value made of them is the one a
whole read makes. Where the feed cannot tell (a write that cannot say what it changed, an import,
a kept version older than the feed's last 32) the part reads the whole namespace, as before.

A follow reads once and its value is used at once. Neo4j reads at read committed: a read that
overlaps the commit of the version it reaches may see part of that write (the only rows it can
have changed are the ones the feed lists for it). So the next follow from that version reads those
rows again with the later ones (``inclusive``), and, while no write comes, the next search at that
version starts one that reads only them: a value is what a read at that moment gives (as the
indexes' answers are) and exact once confirmed. Followed values were held back until two reads
agreed at one version: under steady writes (an add every 0.3 s) the pair rarely finished before
the next write, and a third of the searches asked the indexes instead.
"""

from __future__ import annotations

import operator
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from kbgraph.search.student.versioned import Follow, RowsRead
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.search_version import CHANGE_SEPARATOR

__all__ = ["MOVED", "Changes", "ChangeFeed", "Feed", "between_writes", "changes_since", "feedback_changes", "first_id",
           "follow", "following", "following_feedback", "merged_rows", "position", "rows_changed", "rows_of", "until_two_agree", "without",
           "WritesKeptComing"]

Row = TypeVar("Row")
K = TypeVar("K")
V = TypeVar("V")
#: How many times a follow reads before it gives up (a write in between each time).
FOLLOW_READS = 3


@dataclass(frozen=True)
class Changes:
    """What the change feed says of the writes since a version: the version now (in the part's
    terms: the search version, or the feedback version) and the ids changed, None when it cannot
    tell."""

    version: str | None
    changed: list[str] | None
    #: The feedback version read with it (None when not read).
    feedback: str | None = None


@dataclass(frozen=True)
class ChangeFeed(Generic[Row]):
    """How one kept part follows the writes: the feed (``changes`` since a version), the part's own
    read of some experiences' rows, and the id of a row."""

    changes: Feed
    read: RowsRead[list[Row]]
    row_id: Callable[[Row], str]
    #: Reads that must agree at one version before a follow is given: 1, its value confirmed by the
    #: next follow (inclusive); 2 for a feed that cannot tell what the write that made a version
    #: changed (the feedback version's).
    reads: int = 1
    #: Whether the part's value is made of its rows alone, so that an experience whose row reads as
    #: it was kept is left out of the ids a follow gives (:func:`rows_changed`). Not the vectors (read
    #: beside the rows: a read may have overlapped the commit that wrote them) nor what feedback
    #: changes (its outcomes' vectors, the same way).
    rows_alone: bool = False


class Feed(Protocol):
    """What the writes since a version changed (:class:`Changes`); with ``inclusive``, the write that
    made that version too (a whole read at it may have seen part of its commit)."""

    def __call__(self, since: str, inclusive: bool = False) -> Changes: ...


def changes_since(gateway: Neo4jGateway, namespace: str) -> Feed:
    """The change feed of ``namespace`` in search versions."""
    def changes(since: str, inclusive: bool = False) -> Changes:
        answer = _read(gateway, namespace, since, inclusive)
        return Changes(answer["version"], _ids(answer["changed"]), answer["feedback"])

    return changes


def feedback_changes(gateway: Neo4jGateway, namespace: str) -> Feed:
    """The change feed of ``namespace`` in feedback versions (the search version, then the tokens of
    the feedback stripes, kbgraph.store.search_version): a feedback write names no ids, so the feed
    tells only while the stripes are the ones of the version since, and never what the write that
    made a version changed (``inclusive``: it cannot tell)."""
    def changes(since: str, inclusive: bool = False) -> Changes:
        if inclusive:
            return Changes(None, None)
        search, _, stripes = since.partition("|")
        answer = _read(gateway, namespace, search)
        version = answer["feedback"]
        same_stripes = version is not None and str(version).partition("|")[2] == stripes
        return Changes(version, _ids(answer["changed"]) if same_stripes else None)

    return changes


def _read(gateway: Neo4jGateway, namespace: str, since: str, inclusive: bool = False) -> Mapping[str, Any]:
    return gateway.read("search_changes_since", kb=namespace, since=since, inclusive=inclusive,
                        separator=CHANGE_SEPARATOR)[0]


def _ids(changed: Sequence[Any] | None) -> list[str] | None:
    return None if changed is None else sorted({str(i) for i in changed})


#: Up to how many changed ids (beyond one in sixteen of the kept rows) :func:`merged_rows` places
#: each by bisection; more, and it sorts the whole list once.
_PLACED_MAX = 64


def merged_rows(rows: Sequence[Row], changed: Sequence[str], fresh: Sequence[Row], row_id: Callable[[Row], str]) -> list[Row]:
    """``rows`` (a whole read's, in id order: ids are ASCII, IdText, so Neo4j's order is Python's)
    without those of ``changed``, with ``fresh`` (the rows of
    ``changed`` that are there now), in id order: what a whole read gives now. A follow brings a
    write's few ids: each is found and placed by bisection (a few ``row_id`` calls, and list moves in
    C), not by sorting every kept row with ``row_id`` (~6 % of the client's CPU under bench online's
    mixed round at 10,000 experiences, five parts following every add)."""
    gone = set(changed)
    if not _few(len(gone) + len(fresh), rows):
        return sorted([*(row for row in rows if row_id(row) not in gone), *fresh], key=row_id)
    merged = list(rows)
    for exp_id in gone:
        if (at := position(merged, exp_id, row_id)) is not None:
            del merged[at]
    for row in fresh:
        # After any rows of its id already there (none but a row of an id not in ``changed``): as
        # the stable sort placed it.
        merged.insert(bisect_right(merged, row_id(row), key=row_id), row)
    return merged


def rows_of(rows: Sequence[Row], ids: Iterable[str], row_id: Callable[[Row], str]) -> list[Row]:
    """The rows of ``rows`` (in id order, ids unique) whose id is one of ``ids``, in id order: each
    found by bisection (a patch's few changed ids, not a pass over every kept row); a pass when
    they are many."""
    wanted = set(ids)
    if not _few(len(wanted), rows):
        return [row for row in rows if row_id(row) in wanted]
    return [rows[at] for exp_id in sorted(wanted) if (at := position(rows, exp_id, row_id)) is not None]


def rows_changed(rows: Sequence[Row], changed: Sequence[str], fresh: Sequence[Row], row_id: Callable[[Row], str]
                 ) -> list[str]:
    """The ids of ``changed`` whose row in ``fresh`` (read now) is not the one in ``rows`` (kept, in
    id order; ids unique): gone, new or of other values. A write the feed lists changes the part's
    rows of only some of its ids (an add's workflow counters are not its texts), and a follow from
    rows not confirmed reads the write that made them again, mostly unchanged: a patch of only
    these does less, and none keeps the value before, with what its searches worked out of it
    (for a value made of its rows alone: :attr:`ChangeFeed.rows_alone`)."""
    now = {row_id(row): row for row in fresh}
    return [exp_id for exp_id in changed
            if now.get(exp_id) != (rows[at] if (at := position(rows, exp_id, row_id)) is not None else None)]


def without(values: dict[K, V], keys: Iterable[K]) -> dict[K, V]:
    """A copy of ``values`` without ``keys``, in its order: a patch's copy of what it keeps (a copy
    is C's work, a comprehension over every entry Python's)."""
    kept = dict(values)
    for key in keys:
        kept.pop(key, None)
    return kept


def _few(count: int, rows: Sequence[Any]) -> bool:
    """Whether ``count`` ids are few enough among ``rows`` to be placed or found one by one."""
    return count <= _PLACED_MAX + len(rows) // 16


def position(rows: Sequence[Row], exp_id: str, row_id: Callable[[Row], str]) -> int | None:
    """Where the row of ``exp_id`` is in ``rows`` (in id order), by bisection; None: not there."""
    at = bisect_left(rows, exp_id, key=row_id)
    return at if at < len(rows) and row_id(rows[at]) == exp_id else None


class WritesKeptComing(Exception):
    """A follow's every attempt had a write come between its requests: the feed can tell what
    changed, and the next search follows again from the same rows (:func:`follow`)."""


#: What an attempt of :func:`until_two_agree` gives when a write came between its requests.
MOVED = object()


def between_writes(attempt: Callable[[], Any]) -> Any:
    """The answer of ``attempt`` when no write came between its requests (it gives :data:`MOVED`:
    it is made again), at most :data:`FOLLOW_READS` times; None when an attempt gives None (the
    feed cannot tell) or writes kept coming between."""
    for _ in range(FOLLOW_READS):
        now = attempt()
        if now is not MOVED:
            return now
    return None


def until_two_agree(attempt: Callable[[], Any], same: Callable[[Any, Any], bool] = operator.eq,
                    settled: Callable[[Any], bool] = lambda _: False) -> Any:
    """The answer of ``attempt`` once two attempts in a row give the ``same`` one (a read may overlap
    a commit being applied: the second confirms the first), at most :data:`FOLLOW_READS` attempts;
    None when an attempt gives None (the feed cannot tell) or none agree. An attempt that gives
    :data:`MOVED` starts the pair again; one that is ``settled`` (nothing read that could be part
    of a commit) is the answer at once."""
    seen: Any = None
    for _ in range(FOLLOW_READS):
        now = attempt()
        if now is None:
            return None
        if now is MOVED:
            seen = None
            continue
        if settled(now):
            return now
        if seen is not None and same(seen, now):
            return now
        seen = now
    return None


def follow(feed: ChangeFeed[Row], version: str, rows: Sequence[Row],
           inclusive: bool = False) -> tuple[str, list[Row], list[str]] | None:
    """The rows at the namespace's version now, from ``rows`` read at ``version`` and the change
    feed, with the ids whose rows changed (None: the feed cannot tell), read once or until two
    reads agree (``feed.reads``). With ``inclusive``, the rows of the write that made ``version``
    are read again too (``rows`` not confirmed yet:
    :class:`~kbgraph.search.student.kept_in_background.KeptInBackground`). Raises
    :class:`WritesKeptComing` when writes came between its requests every time: not a reason for a
    whole read, which under steady writes is never confirmed where the feed cannot tell what the
    write that made its version changed (what feedback changes: one race sent it into a whole read
    after every write, ~10 a 15 s round of bench online's mixed traffic)."""
    told = [True]

    def attempt() -> Any:
        changes = feed.changes(version, inclusive)
        if changes.changed is None or changes.version is None:
            told[0] = False
            return None
        fresh = feed.read(None, changes.changed) if changes.changed else None
        if fresh is not None and fresh.version != changes.version:
            return MOVED  # a write between the two requests
        fresh_rows = fresh.rows if fresh is not None else []
        moved = rows_changed(rows, changes.changed, fresh_rows, feed.row_id) if feed.rows_alone else changes.changed
        if len(moved) < len(changes.changed):
            kept_out = set(moved)
            fresh_rows = [row for row in fresh_rows if feed.row_id(row) in kept_out]
        return changes.version, merged_rows(rows, moved, fresh_rows, feed.row_id), moved

    followed: tuple[str, list[Row], list[str]] | None = (
        between_writes(attempt) if feed.reads == 1 else until_two_agree(attempt))
    if followed is None and told[0]:
        raise WritesKeptComing(version)
    return followed


def following(gateway: Neo4jGateway, namespace: str, read: RowsRead[list[Row]],
              rows_alone: bool = False) -> Follow[list[Row]]:
    """How rows of ``read`` (a versioned read by search version, each row's first value its
    experience's id) follow the writes to ``namespace``: for :meth:`KeptInBackground.current`
    (``rows_alone``: :attr:`ChangeFeed.rows_alone`)."""
    feed = ChangeFeed(changes_since(gateway, namespace), read, first_id, rows_alone=rows_alone)
    return partial(follow, feed)


def following_feedback(gateway: Neo4jGateway, namespace: str, read: RowsRead[list[Row]]) -> Follow[list[Row]]:
    """:func:`following` for a read by feedback version."""
    feed = ChangeFeed(feedback_changes(gateway, namespace), read, first_id, reads=2)
    return partial(follow, feed)


def first_id(row: Any) -> str:
    """The id of a whole-namespace read's row: its first value."""
    return str(row[0])
