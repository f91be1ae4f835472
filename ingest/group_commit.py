"""Adds of one process that wait for its turn are committed together (group commit).

An add holds its process's turn at the namespace (kbgraph.ingest.lease.process_turn) for its one
write transaction; the adds of the other threads queue behind it. With 8 agent threads adding and
searching, an add held the turn 250–340 ms (its own CPU ~10 ms: the rest is the GIL and the
server, shared with the searches) and the turn was busy 90 % of the time, so an add waited about a
second and the threads spent close to half their time waiting in adds.

So the adds of one KnowledgeBase that queue behind the turn are taken together by the first of
them to get it (the group's *leader*): each writes its runs (pass 1), then ONE consolidation
covers them all, then one commit — one facts version, one follow for the searches. The others
wait for the leader's outcome instead of the turn. What each gets back is its own: its records,
its experiences; the consolidation's figures are the group's (the report says how many adds
shared it, ``committed_with``).

A group that fails is not the members' failure: each add is then committed alone, in turn, and
gets its own outcome — a record found ingested with other content fails its add only. Neo4j
unreachable is every member's (trying each again would only repeat the wait).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kbgraph.core.errors import Neo4jUnavailableError

__all__ = ["MAX_GROUP", "AddQueue", "AddWork", "Outcome", "queue_of"]

logger = logging.getLogger(__name__)
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

#: The most adds committed in one transaction: a transaction's size grows with its adds, and one
#: failing makes the others wait for a second round alone.
MAX_GROUP = 8


class AddWork(Protocol[T_co]):
    """An add in three steps, all in one write transaction it may share with other adds: its own
    writes, the group's consolidation (run by the leader's), then its result."""

    def write(self, context: Any) -> None:
        """Pass 1 of this add's runs in ``context`` (the transaction); run again from the start
        when the transaction is."""

    def consolidate(self, context: Any) -> None:
        """Pass 2 for every add of the group (called on the leader's only)."""

    def finish(self, context: Any, leader: Any, group_size: int, growth: tuple[int, int]) -> T_co:
        """This add's result after the group's consolidation; ``leader`` is the add that ran it,
        ``growth`` the growth total (before, after) to check for maintenance: the leader's is the
        group's, the others' cross nothing (one check, one maintenance run)."""


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What an add ended with: its result, or the exception it raised."""

    result: T | None = None
    failure: BaseException | None = None

    def unwrapped(self) -> T:
        if self.failure is not None:
            raise self.failure
        return self.result  # type: ignore[return-value]  # None only when T admits it


def is_shared(failure: BaseException) -> bool:
    """A failure every add of a group would meet alone: Neo4j gone."""
    return isinstance(failure, Neo4jUnavailableError)


def outcomes_of_group(works: Sequence[AddWork[T]], commit: Callable[[Sequence[AddWork[T]]], list[T]]) -> list[Outcome[T]]:
    """``works`` committed together by ``commit``; should that fail, each alone, in turn (unless
    the failure is every one's, :func:`is_shared`)."""
    try:
        return [Outcome(result=r) for r in commit(works)]
    except Exception as failure:  # pylint: disable=broad-except  # handed to each add's caller
        if len(works) == 1 or is_shared(failure):
            return [Outcome(failure=failure) for _ in works]
        logger.info("a group of %d adds failed (%s: %s); committing each alone", len(works),
                    type(failure).__name__, str(failure).splitlines()[0][:200] if str(failure) else "")
    alone: list[Outcome[T]] = []
    for work in works:
        try:
            alone.append(Outcome(result=commit([work])[0]))
        except Exception as failure:  # pylint: disable=broad-except
            alone.append(Outcome(failure=failure))
    return alone


@dataclass(eq=False)
class _Waiting(Generic[T]):
    work: AddWork[T]
    outcome: Outcome[T] | None = None
    told: bool = False


class AddQueue:
    """The adds of one KnowledgeBase waiting to be committed: the first to find nobody
    committing leads a group of those waiting (itself first), the others wait for its outcome."""

    def __init__(self, max_group: int = MAX_GROUP):
        self.max_group = max_group
        self._changed = threading.Condition()
        self._leading = False
        self._waiting: list[_Waiting[Any]] = []
        # What was committed (benchmarks and tests read them): groups, the adds in them, the last one's size.
        self.groups_committed = 0
        self.adds_committed = 0
        self.last_group = 0

    def run(self, work: AddWork[T], turn: Callable[[], AbstractContextManager[Any]],
            commit_group: Callable[[Sequence[AddWork[T]]], list[Outcome[T]]],
            on_wait: Callable[[str], None] | None = None, waiting_message: str = "") -> T:
        """``work``'s result: led (the process's ``turn`` taken, then the adds waiting by then
        committed by ``commit_group``, one outcome each) or committed by another add's lead."""
        me: _Waiting[T] = _Waiting(work)
        with self._changed:
            self._waiting.append(me)
            try:
                while self._leading and me.outcome is None:
                    if not me.told and on_wait is not None:
                        me.told = True
                        on_wait(waiting_message)
                    self._changed.wait()
            except BaseException:
                # Interrupted while queued (e.g. Ctrl-C): not committed later behind its caller's
                # back. Once a leader has taken it, its outcome is the group's, whatever it is.
                if me in self._waiting:
                    self._waiting.remove(me)
                raise
            if me.outcome is not None:
                return me.outcome.unwrapped()
            self._leading = True
        group: list[_Waiting[T]] = [me]
        try:
            with turn():
                # Taken once the turn is this add's: what queued while it waited for it goes too.
                with self._changed:
                    self._waiting.remove(me)
                    group += self._waiting[: self.max_group - 1]
                    del self._waiting[: self.max_group - 1]
                outcomes = commit_group([w.work for w in group])
            for waiting, outcome in zip(group, outcomes, strict=True):
                waiting.outcome = outcome
            self.groups_committed += 1
            self.adds_committed += len(group)
            self.last_group = len(group)
        finally:
            with self._changed:
                self._leading = False
                if me in self._waiting:  # interrupted before it took its group
                    self._waiting.remove(me)
                # Interrupted (the leader's own BaseException): the others wait on, first in line.
                self._waiting[:0] = [w for w in group[1:] if w.outcome is None]
                self._changed.notify_all()
        assert me.outcome is not None
        return me.outcome.unwrapped()

    def waiting(self) -> int:
        """Adds queued and not yet taken into a group (the leader's own until it has the turn)."""
        with self._changed:
            return len(self._waiting)


_QUEUES: weakref.WeakKeyDictionary[object, AddQueue] = weakref.WeakKeyDictionary()
_QUEUES_GUARD = threading.Lock()


def queue_of(owner: object) -> AddQueue:
    """The add queue of ``owner`` (a KnowledgeBase: its adds share a namespace, settings and
    embedder, so one transaction can hold them); an owner that cannot be referenced weakly gets
    a queue of its own each time (its adds are not grouped)."""
    with _QUEUES_GUARD:
        try:
            return _QUEUES.setdefault(owner, AddQueue())
        except TypeError:
            return AddQueue()
