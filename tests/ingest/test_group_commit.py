"""Adds of one process waiting for its turn are committed together (ingest/group_commit.py): the
queue's rules with plain works, then adds of real runs into a real Neo4j (real MiniLM)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from kbgraph.core.errors import InvalidInputError, Neo4jUnavailableError
from kbgraph.ingest.group_commit import AddQueue, AddWork, Outcome, outcomes_of_group, queue_of
from kbgraph.ingest.lease import process_turn
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from tests.ingest.test_add_trajectories import run
from tests.ingest.test_incremental import relations, runs  # noqa: F401  # runs: the fixture
from tests.reliability.snapshots import canonical


class Named:
    """A work whose result is its name (the queue never calls its steps: ``commit`` does)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def write(self, context: Any) -> None: ...

    def consolidate(self, context: Any) -> None: ...

    def finish(self, context: Any, leader: Any, group_size: int, growth: tuple[int, int]) -> str:
        return self.name


def until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class Turn:
    """The process's turn as a plain lock the test can hold."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    @contextmanager
    def taken(self) -> Iterator[None]:
        with self.lock:
            yield


def queued_behind_the_turn(queue: AddQueue, hold: AbstractContextManager[Any],
                           adds: Sequence[Callable[[], Any]]) -> list[Outcome[Any]]:
    """Each of ``adds`` started in its own thread, in order, each once the one before is queued,
    while ``hold`` is held; then released: what each ended with."""
    outcomes: list[Outcome[Any] | None] = [None] * len(adds)

    def start(index: int) -> None:
        try:
            outcomes[index] = Outcome(result=adds[index]())
        except BaseException as failure:  # pylint: disable=broad-except
            outcomes[index] = Outcome(failure=failure)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(adds))]
    with hold:
        for index, thread in enumerate(threads):
            thread.start()
            until(lambda: queue.waiting() == index + 1)
    for thread in threads:
        thread.join(120)
    assert all(o is not None for o in outcomes)
    return [o for o in outcomes if o is not None]


def commit_each(log: list[list[str]], failing: frozenset[str] = frozenset(),
                failure: Exception | None = None) -> Callable[[Sequence[AddWork[str]]], list[Outcome[str]]]:
    """A commit that logs each group it is given and fails any group holding a name of ``failing``."""
    def commit(works: Sequence[AddWork[str]]) -> list[str]:
        names = [w.finish(None, works[0], len(works), (0, 0)) for w in works]
        log.append(names)
        if failing & set(names):
            raise failure or ValueError(f"{sorted(failing & set(names))} is bad")
        return names

    return lambda works: outcomes_of_group(works, commit)


def test_adds_queued_behind_the_turn_are_committed_as_one_group_led_by_the_first_each_getting_its_own_result() -> None:
    queue, turn, log = AddQueue(), Turn(), []
    names = ["a", "b", "c"]
    outcomes = queued_behind_the_turn(queue, turn.lock, [
        lambda name=name: queue.run(Named(name), turn.taken, commit_each(log)) for name in names])
    assert [o.unwrapped() for o in outcomes] == names
    assert log == [names] and (queue.groups_committed, queue.adds_committed, queue.last_group) == (1, 3, 3)


def test_a_group_is_at_most_max_group_adds_and_the_rest_are_led_by_the_next() -> None:
    queue, turn, log = AddQueue(max_group=2), Turn(), []
    names = ["a", "b", "c", "d", "e"]
    outcomes = queued_behind_the_turn(queue, turn.lock, [
        lambda name=name: queue.run(Named(name), turn.taken, commit_each(log)) for name in names])
    assert [o.unwrapped() for o in outcomes] == names
    assert sorted(len(group) for group in log) == [1, 2, 2] and log[0] == ["a", "b"]


def test_a_failing_group_is_committed_add_by_add_and_only_the_bad_add_fails() -> None:
    queue, turn, log = AddQueue(), Turn(), []
    outcomes = queued_behind_the_turn(queue, turn.lock, [
        lambda name=name: queue.run(Named(name), turn.taken, commit_each(log, frozenset({"b"}))) for name in "abc"])
    assert outcomes[0].unwrapped() == "a" and outcomes[2].unwrapped() == "c"
    with pytest.raises(ValueError, match="'b'"):
        outcomes[1].unwrapped()
    assert log == [["a", "b", "c"], ["a"], ["b"], ["c"]]


def test_neo4j_gone_is_every_add_s_failure_without_trying_each_again() -> None:
    queue, turn, log = AddQueue(), Turn(), []
    gone = Neo4jUnavailableError("Neo4j is unreachable")
    outcomes = queued_behind_the_turn(queue, turn.lock, [
        lambda name=name: queue.run(Named(name), turn.taken, commit_each(log, frozenset({"a"}), gone)) for name in "ab"])
    assert all(o.failure is gone for o in outcomes)
    assert log == [["a", "b"]]


class Interrupted(BaseException):
    """What a leader's thread may be stopped with (KeyboardInterrupt, SystemExit)."""


def test_an_interrupted_leader_leaves_the_others_to_be_committed_by_the_next() -> None:
    queue, turn, log = AddQueue(), Turn(), []

    def commit(works: Sequence[AddWork[str]]) -> list[Outcome[str]]:
        names = [w.finish(None, works[0], len(works), (0, 0)) for w in works]
        log.append(names)
        if names[0] == "a":
            raise Interrupted()
        return [Outcome(result=n) for n in names]

    outcomes = queued_behind_the_turn(queue, turn.lock, [
        lambda name=name: queue.run(Named(name), turn.taken, commit) for name in "abc"])
    assert isinstance(outcomes[0].failure, Interrupted)
    assert [o.unwrapped() for o in outcomes[1:]] == ["b", "c"]
    # Whichever of them wakes first leads them both.
    assert log[0] == ["a", "b", "c"] and sorted(log[1]) == ["b", "c"] and len(log) == 2
    assert queue.waiting() == 0


def test_an_add_interrupted_while_queued_is_not_committed_behind_its_caller_s_back() -> None:
    queue, turn, log = AddQueue(), Turn(), []
    outcomes: dict[str, Outcome[str]] = {}

    def add(name: str, on_wait: Callable[[str], None] | None = None) -> threading.Thread:
        def go() -> None:
            try:
                outcomes[name] = Outcome(result=queue.run(Named(name), turn.taken, commit_each(log), on_wait))
            except BaseException as failure:  # pylint: disable=broad-except
                outcomes[name] = Outcome(failure=failure)
        thread = threading.Thread(target=go)
        thread.start()
        return thread

    def interrupt(_message: str) -> None:  # as Ctrl-C in the thread while it waits for the leader
        raise Interrupted()

    with turn.lock:
        leader = add("a")
        until(lambda: queue.waiting() == 1)
        add("b", interrupt).join(30)
        assert isinstance(outcomes["b"].failure, Interrupted) and queue.waiting() == 1
        other = add("c")
        until(lambda: queue.waiting() == 2)
    leader.join(30)
    other.join(30)
    assert outcomes["a"].unwrapped() == "a" and outcomes["c"].unwrapped() == "c"
    assert log == [["a", "c"]]


# -- real runs, real Neo4j -------------------------------------------------------------------------


def test_adds_of_many_threads_commit_in_one_group_and_end_where_one_ingest_does(
        kb: KnowledgeBase, runs: list[str], tmp_path: Path) -> None:  # noqa: F811
    whole = tmp_path / "all.jsonl"
    whole.write_text("\n".join(runs) + "\n")
    kb.ingest([whole])
    at_once, at_once_relations = canonical(kb), relations(kb)

    kb.clear()
    items = [json.loads(line) for line in runs]
    kb.add_trajectories(items[:5])  # the process's first consolidation plans from scratch
    slices = [items[5 + i::6] for i in range(6)]
    assert all(0 < len(s) <= kb.settings.write_batch_size for s in slices)
    queue = queue_of(kb)
    outcomes = queued_behind_the_turn(queue, process_turn(kb.gateway, kb.namespace), [
        lambda part=part: kb.add_trajectories(part) for part in slices])
    reports: list[IngestReport] = [o.unwrapped() for o in outcomes]
    assert queue.last_group == len(slices)
    assert all(r.committed_with == len(slices) - 1 for r in reports)
    assert [r.records_read for r in reports] == [len(s) for s in slices]  # each report its own records
    assert {r.consolidated for r in reports} == {"incremental"}
    assert len({json.dumps(r.relations, sort_keys=True) for r in reports}) == 1  # the group's consolidation
    assert canonical(kb) == at_once
    assert relations(kb) == at_once_relations


def test_an_add_found_bad_in_its_group_fails_alone_and_the_other_is_committed(kb: KnowledgeBase) -> None:
    kb.add_trajectories([run(0)])
    # Two adds of one id with other content: each is valid when validated (nothing has the id
    # yet); in one group, the second finds the first's record under the namespace's lock.
    first, second = run(1, success=True), run(1, success=False)
    outcomes = queued_behind_the_turn(queue_of(kb), process_turn(kb.gateway, kb.namespace), [
        lambda item=item: kb.add_trajectories([item]) for item in (first, second)])
    report = outcomes[0].unwrapped()
    assert report.experiences_new == 1 and report.committed_with == 0  # committed alone once the group failed
    assert isinstance(outcomes[1].failure, InvalidInputError)
    assert "'mem-1'" in str(outcomes[1].failure) and "different content" in str(outcomes[1].failure)
    # What is stored is the first's: it is found ingested, the second is refused again.
    assert kb.add_trajectories([first]).records_already_ingested == 1
    with pytest.raises(InvalidInputError, match="ingested before with different content"):
        kb.add_trajectories([second])
