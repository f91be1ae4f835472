"""While writes keep changing a namespace's workflows, the searches of one set of filters take turns
at the intent channel's read (kbgraph.search.student.read_turns): each follows from the rows the one
before it kept, so a write's rows are read once (and once more to confirm them when the version
stays), not once per search in flight; and each still sees every write that ended before it began. A quiet namespace is read
without turns, and a turn is never waited for longer than ``wait_seconds``. Real Neo4j, real MiniLM
for the storage test."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.search.student import StudentRetriever
from kbgraph.search.student.read_turns import ReadTurns
from kbgraph.store.aio import AsyncGateway
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.search.student.versioned import filter_key, kept_key

from tests.search.test_vector_model import experience, params


@contextmanager
def turn_held(turns: ReadTurns, key: str) -> Iterator[None]:
    """Another thread takes ``key``'s turn (a read under way) and keeps it until the block ends."""
    release, entered = threading.Event(), threading.Event()

    def holder() -> None:
        with turns.turn(key):
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    assert entered.wait(5)
    try:
        yield
    finally:
        release.set()
        thread.join(5)


def test_a_quiet_key_is_read_without_waiting_for_anyone() -> None:
    turns = ReadTurns(wait_seconds=5)
    with turn_held(turns, "filters"):
        began = time.monotonic()
        with turns.turn("filters") as saw:  # no read returned rows yet: no turns
            saw(False)
        assert time.monotonic() - began < 1
        assert not turns.in_turns("filters")


def test_once_a_read_returned_rows_the_next_search_waits_for_the_one_reading() -> None:
    turns = ReadTurns(wait_seconds=5)
    with turns.turn("filters") as saw:
        saw(True)
    assert turns.in_turns("filters") and not turns.in_turns("other filters")
    order: list[str] = []

    def next_search() -> None:
        with turns.turn("filters"):
            order.append("next")

    waiting = threading.Thread(target=next_search, daemon=True)
    with turn_held(turns, "filters"):
        waiting.start()
        time.sleep(0.2)
        assert order == [], "it waits for the turn being taken"
        with turns.turn("other filters"):  # another set of filters is not held up
            order.append("other")
        order.append("released")
    waiting.join(5)
    assert order == ["other", "released", "next"]


def test_a_turn_is_waited_for_at_most_wait_seconds() -> None:
    turns = ReadTurns(wait_seconds=0.2)
    with turns.turn("filters") as saw:
        saw(True)
    with turn_held(turns, "filters"):  # a read that hangs
        began = time.monotonic()
        with turns.turn("filters"):
            waited = time.monotonic() - began
    assert 0.15 < waited < 2


def test_turns_end_when_reads_have_returned_no_rows_for_churn_seconds() -> None:
    turns = ReadTurns(churn_seconds=0.2)
    with turns.turn("filters") as saw:
        saw(True)
    assert turns.in_turns("filters")
    time.sleep(0.3)
    assert not turns.in_turns("filters")


def test_while_writes_change_the_workflows_their_rows_are_read_once_and_every_search_sees_the_write(
    kb: KnowledgeBase, searcher: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb.add_experiences([experience(n) for n in range(1, 12)])
    context = searcher.student.context
    context.intent_bases.settle_seconds = 60.0  # nothing is confirmed until the test says so
    filters = params(searcher)
    answers: list[tuple[bool, int | None]] = []  # (unchanged, how many experiences asked for: None, all)
    read = searcher.gateway.read

    def recording_read(name: str, **values: Any) -> list[dict[str, Any]]:
        rows = read(name, **values)
        if name == "search_workflow_operations":
            answers.append((bool(rows[0]["unchanged"]), None if values["ids"] is None else len(values["ids"])))
        return rows

    monkeypatch.setattr(searcher.gateway, "read", recording_read)
    for _ in range(3):  # read whole, then kept (the change feed says nothing was written): in turns now
        context.namespace_workflows(filters)
    assert answers == [(False, None)]
    assert context.intent_turns is not None and context.intent_turns.in_turns(filter_key(filters))

    added = kb.add_experiences([experience(13)]).ids[0]
    answers.clear()
    start = threading.Barrier(6)
    seen: list[bool] = []

    def search() -> None:
        start.wait(5)
        workflows = context.namespace_workflows(filters)
        seen.append(any(added in members for members in workflows.members.values()))

    threads = [threading.Thread(target=search, daemon=True) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert seen == [True] * 6, "every search began after the write, and sees it"
    # The rows kept follow the change feed, read once: the written experience's, with those of the
    # write the whole read was made at (it may have overlapped that commit); the searches after
    # that one's turn find nothing written since.
    assert answers == [(False, 12)], "the 11 experiences of the first write and the one of the second"

    # Once the version has stayed settle_seconds, one search reads its write's rows again, which
    # confirms them; the next reads nothing.
    context.intent_bases.settle_seconds = 0.0
    answers.clear()
    for _ in range(2):
        context.namespace_workflows(filters)
    assert answers == [(False, 1)]
    base = context.intent_bases.get(kept_key(filters))
    assert base is not None and base.confirmed


class OneThreadGateway(Neo4jGateway):
    """A gateway whose calls must not wait on a lock (AsyncGateway's rule: one event loop's thread)."""

    background_reads = False


def test_searches_that_run_on_an_event_loop_take_no_turns(kb: KnowledgeBase, embedder: CachedEmbedder) -> None:
    # A lock held across a request would stall the loop (kbgraph.store.aio): no turns there.
    assert AsyncGateway.background_reads is False
    on_a_loop = StudentRetriever(OneThreadGateway(kb.driver, kb.gateway.database), embedder, kb.namespace)
    in_threads = StudentRetriever(kb.gateway, embedder, kb.namespace)
    assert on_a_loop.context.intent_turns is None and isinstance(in_threads.context.intent_turns, ReadTurns)
