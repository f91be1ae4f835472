"""Adding a run is one write transaction (issue 53, point 2): the reads, then one commit holding
the records, counters, marks and the namespace's lock (real Neo4j, real MiniLM).

The commits are counted where the driver makes them: every explicit transaction's ``commit``
(sync and async driver) and every auto-commit query sent in write mode, whatever kbgraph code
path led there.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import neo4j
import pytest

from kbgraph.kb import KnowledgeBase
from tests.ingest.test_add_trajectories import run


class Commits:
    def __init__(self) -> None:
        self.count = 0


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> Iterator[Commits]:
    counted = Commits()
    commit = neo4j.Transaction.commit
    run_query = neo4j.Session.run

    def counting_commit(self: neo4j.Transaction) -> None:
        counted.count += 1
        commit(self)

    def counting_run(self: neo4j.Session, *args: Any, **kwargs: Any) -> neo4j.Result:
        # A session's own run is an auto-commit transaction; one in write mode may write.
        if self._config.default_access_mode == neo4j.WRITE_ACCESS:
            counted.count += 1
        return run_query(self, *args, **kwargs)

    monkeypatch.setattr(neo4j.Transaction, "commit", counting_commit)
    monkeypatch.setattr(neo4j.Session, "run", counting_run)
    yield counted


def counted_add(kb: KnowledgeBase, commits: Commits, item: dict[str, Any]) -> int:
    before = commits.count
    kb.add_trajectories([item])
    return commits.count - before


def test_adding_one_run_commits_once(kb: KnowledgeBase, commits: Commits) -> None:
    kb.add_trajectories([run(0), run(1, success=False)])  # the process's first consolidation: from scratch
    added = [counted_add(kb, commits, run(i, success=i % 3 != 0)) for i in range(2, 6)]
    assert added == [1, 1, 1, 1], added
    again = counted_add(kb, commits, run(3, success=False))  # already ingested: nothing to write
    assert again <= 1, again
    assert kb.count() >= 1


def test_the_first_add_of_a_process_commits_once_too(kb: KnowledgeBase, commits: Commits) -> None:
    kb.add_trajectories([run(0)])
    kb.link_state.clear()  # as a fresh process: the consolidation reads and plans the namespace
    assert counted_add(kb, commits, run(7)) == 1


def test_adds_from_two_drivers_at_once_take_turns_and_count_exactly(
    kb: KnowledgeBase, neo4j_target: Any, embedder: Any
) -> None:
    """Six adds at once through two drivers (two processes' worth of connections and local locks):
    each run lands in exactly one experience's provenance, once marked, once counted."""
    from kbgraph.store.connection import open_driver

    drivers = [open_driver(neo4j_target.uri, (neo4j_target.username, neo4j_target.password), neo4j_target.database)
               for _ in range(2)]
    try:
        clients = [KnowledgeBase(d, embedder, namespace=kb.namespace, database=neo4j_target.database) for d in drivers]
        failures: list[BaseException] = []
        start = threading.Barrier(6)

        def add(client: KnowledgeBase, i: int) -> None:
            start.wait()
            try:
                client.add_trajectories([run(100 + i, success=i % 2 == 0)])
            except BaseException as exc:  # reported below
                failures.append(exc)

        threads = [threading.Thread(target=add, args=(clients[i % 2], i)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, [f"{type(f).__name__}: {f}" for f in failures]
    finally:
        for d in drivers:
            d.close()
    for i in range(6):
        assert len(kb.gateway.read("experiences_by_source", kb=kb.namespace, source_id=f"mem-{100 + i}")) == 1
    assert kb.gateway.read("kb_state_unlinked", kb=kb.namespace)[0]["marks"] == []
    one_by_one = KnowledgeBase(kb.driver, embedder, namespace=f"{kb.namespace}-seq", database=neo4j_target.database)
    try:
        for i in range(6):
            one_by_one.add_trajectories([run(100 + i, success=i % 2 == 0)])
        counted = [k.gateway.read("kb_state_get", kb=k.namespace)[0]["added_total"] for k in (kb, one_by_one)]
        assert counted[0] == counted[1], counted
        assert kb.count() == one_by_one.count()
    finally:
        one_by_one.clear()


def test_an_add_neo4j_refuses_in_one_transaction_is_rolled_back_whole_written_under_the_lease_and_counted(
    kb: KnowledgeBase, commits: Commits, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """Should Neo4j refuse a statement that reaches a node its own transaction deleted
    (EntityNotFound), the add is rolled back whole and done batch by batch; the report and a warning
    say so, and the process counts it."""
    import kbgraph.ingest.pipeline as pipeline
    from kbgraph.ingest.one_transaction import REFUSALS

    kb.add_trajectories([run(0)])
    refused = {"times": 0}
    one_transaction = pipeline.add_in_one_transaction

    class ThenRefused:
        def __init__(self, work: Any) -> None:
            self.work = work

        def write(self, context: Any) -> None:
            self.work.write(context)

        def consolidate(self, context: Any) -> None:
            self.work.consolidate(context)

        def finish(self, context: Any, leader: Any, group_size: int, growth: tuple[int, int]) -> Any:
            # Everything written in the transaction, then Neo4j's refusal.
            refused["times"] += 1
            raise neo4j.exceptions.Neo4jError._hydrate_neo4j(
                code="Neo.ClientError.Statement.EntityNotFound", message="Node with id 1 has been deleted in this transaction")

    def refusing(context_kb: Any, work: Any, on_wait: Any = None) -> Any:
        return one_transaction(context_kb, ThenRefused(work), on_wait)

    monkeypatch.setattr(pipeline, "add_in_one_transaction", refusing)
    before, counted = commits.count, REFUSALS.count
    report = kb.add_trajectories([run(1)])
    assert refused["times"] == 1
    assert commits.count - before > 1  # the lease path: a transaction per step
    assert report.records_read == 1 and report.records_already_ingested == 0
    assert report.one_transaction_refused == 1 and REFUSALS.count == counted + 1
    assert "written under the lease instead" in caplog.text
    monkeypatch.undo()
    # Written once, exactly: adding it again finds it ingested.
    assert kb.add_trajectories([run(1)]).records_already_ingested == 1


def cancelled(run_id: str, looked_up_first: bool) -> dict[str, Any]:
    """A run of one task: cancel reservation R00001, after looking it up or straight away (the same
    workflow: runs of one task differ in how often they look things up)."""
    steps = [{"action": "cancel_reservation", "arguments": {"reservation_id": "R00001"},
              "observation": '{"status": "cancelled"}'}]
    if looked_up_first:
        steps.insert(0, {"action": "get_reservation_details", "arguments": {"reservation_id": "R00001"}})
    return {"id": run_id, "domain": "airline", "steps": steps, "outcome": {"success": True},
            "task": "You want to cancel reservation number R00001 and get a refund to the original payment."}


def test_an_add_that_merges_away_an_experience_it_gave_a_new_run_commits_in_its_one_transaction(
    kb: KnowledgeBase, commits: Commits,
) -> None:
    """The learning simulation's re-ingest on 5.26: a stored experience gains a run (its `unlinked`
    mark is written again) and the same add's merge folds it into a shorter way of the same task,
    deleting it. The consolidation's last write, clearing the marks, still finds it by its key's
    index and not as a node the transaction deleted: the add commits once, Neo4j refuses nothing."""
    kb.add_trajectories([cancelled("run-1", looked_up_first=True)])
    before = commits.count
    report = kb.add_trajectories([cancelled("run-2", looked_up_first=True), cancelled("run-3", looked_up_first=False)])
    assert report.experiences_merged == 1, report
    assert report.one_transaction_refused == 0 and commits.count - before == 1
    [survivor] = kb.get_many([r["id"] for r in kb.gateway.read("experience_ids_page", kb=kb.namespace,
                                                                after="", limit=10)])
    assert sorted(survivor.source_ids) == ["run-1", "run-2", "run-3"]
    assert kb.gateway.read("kb_state_unlinked", kb=kb.namespace)[0]["marks"] == []
