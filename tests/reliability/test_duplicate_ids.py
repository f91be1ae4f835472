"""One id, one record. The same id with the same content is a duplicate: skipped and counted.
The same id with other content — twice in one file, in a later run, or given again to
add_experiences — is an error naming where, and nothing is written."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.ingest.read import read_records
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from tests.conftest import Neo4jTarget

RUN: dict[str, Any] = {
    "id": "p-1", "domain": "retail", "task": "Cancel my pending order #W1 because I no longer need it.",
    "steps": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}},
              {"action": "cancel_pending_order", "arguments": {"order_id": "#W1", "reason": "no longer needed"}}],
    "outcome": {"success": True},
}
OTHER_RUN = RUN | {"task": "Return the delivered keyboard of order #W2 for a refund.",
                   "steps": [{"action": "return_delivered_order_items", "arguments": {"order_id": "#W2"}}]}


def jsonl(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_the_same_run_twice_in_one_file_is_ingested_once_and_counted(kb: KnowledgeBase, tmp_path: Path) -> None:
    report = kb.ingest([jsonl(tmp_path / "runs.jsonl", RUN, RUN)])
    assert report.duplicates_skipped == 1 and report.experiences_new == 1
    assert kb.count() == 1


def test_the_same_id_with_other_content_in_one_file_is_refused_by_line(kb: KnowledgeBase, tmp_path: Path) -> None:
    path = jsonl(tmp_path / "runs.jsonl", RUN, OTHER_RUN)
    with pytest.raises(InvalidInputError) as raised:
        kb.ingest([path])
    assert raised.value.problems == [f"{path}:2: id: 'p-1' was read at {path}:1 with different content "
                                     "(one id, one record: give the other run its own id)"]
    assert kb.stats().nodes == {}


def test_the_same_id_with_other_content_in_a_later_run_is_refused_not_dropped(kb: KnowledgeBase, tmp_path: Path) -> None:
    kb.ingest([jsonl(tmp_path / "first.jsonl", RUN)])
    before = kb.stats()
    again = kb.ingest([jsonl(tmp_path / "again.jsonl", RUN)])
    assert again.records_already_ingested == 1 and again.experiences_new == 0
    later = jsonl(tmp_path / "later.jsonl", OTHER_RUN)
    with pytest.raises(InvalidInputError, match=r"later.jsonl:1: id: 'p-1' was ingested before with different content"):
        kb.ingest([later])
    assert kb.stats() == before


EXPERIENCE = {"id": "x-1", "problem": "A customer wants to cancel a pending order.", "domain": "retail",
              "steps": [{"action": "cancel_pending_order", "text": "cancel <order_id>"}]}


def test_add_with_an_explicit_id_given_again_with_other_content_is_refused(kb: KnowledgeBase) -> None:
    assert kb.add_experiences([EXPERIENCE]).new == 1
    assert kb.add_experiences([EXPERIENCE | {"quality": 0.9}]).existing == 1  # the same content: a duplicate
    changed = EXPERIENCE | {"problem": "A customer wants a refund."}
    with pytest.raises(InvalidInputError, match=r"experiences\[0\]: id: 'x-1' is already stored with different content"):
        kb.add_experiences([changed])
    with pytest.raises(InvalidInputError, match=r"experiences\[1\]: id: 'x-1' was given at experiences\[0\]"):
        kb.add_experiences([EXPERIENCE, changed])
    stored = kb.get("x-1")
    assert stored is not None and stored.problem == EXPERIENCE["problem"]


def test_with_skip_invalid_a_record_reusing_an_id_is_skipped_and_listed_not_written(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    path = jsonl(tmp_path / "runs.jsonl", RUN, OTHER_RUN, RUN)
    report = kb.ingest([path], skip_invalid=True)
    assert report.records_rejected == 1 and report.rejected[0].startswith(f"{path}:2: id: 'p-1' was read at {path}:1")
    assert report.duplicates_skipped == 1 and report.experiences_new == 1
    [stored] = kb.get_many(list(kb.store.iter_ids()))
    assert stored.source_ids == ["p-1"] and stored.problem.startswith("Cancel")
    later = kb.ingest([jsonl(tmp_path / "later.jsonl", OTHER_RUN)], skip_invalid=True)
    assert later.records_rejected == 1 and later.records_already_ingested == 0
    assert "was ingested before with different content" in later.rejected[0]
    assert kb.count() == 1


def test_an_id_ingested_with_other_content_while_this_ingest_waited_for_the_lease_is_refused(
    kb: KnowledgeBase, tmp_path: Path
) -> None:
    """Validation runs before the lease is taken (a refused file writes nothing), so what another
    ingest wrote meanwhile is checked again once the lease is held."""
    now = datetime.now(UTC)
    assert kb.gateway.write("ingest_lease_acquire", kb=kb.namespace, owner="ingest-other", now=now,
                            until=now + timedelta(seconds=60))[0]["acquired"]
    waiting = threading.Event()
    outcome: list[BaseException | IngestReport] = []

    def on_progress(stage: str, done: int, total: int | None) -> None:
        if stage.startswith("another ingest"):
            waiting.set()

    def ingest() -> None:
        try:
            outcome.append(kb.ingest([jsonl(tmp_path / "later.jsonl", OTHER_RUN)], on_progress=on_progress))
        except BaseException as exc:  # the assertion below names it
            outcome.append(exc)

    thread = threading.Thread(target=ingest)
    thread.start()
    assert waiting.wait(30), "the ingest did not wait for the lease"
    # The lease holder ingests RUN under the same id (its marker keeps RUN's fingerprint), then lets go.
    [first] = read_records([jsonl(tmp_path / "first.jsonl", RUN)])
    kb.gateway.write("ingested_records_mark", kb=kb.namespace,
                     rows=[{"key": "trajectory:p-1", "fingerprint": first.fingerprint}])
    kb.gateway.write("ingest_lease_release", kb=kb.namespace, owner="ingest-other")
    thread.join(60)
    assert not thread.is_alive()
    [error] = outcome
    assert isinstance(error, InvalidInputError), error
    assert error.problems[0].startswith(f"{tmp_path / 'later.jsonl'}:1: id: 'p-1' was ingested before with different")
    assert kb.count() == 0


def test_a_marker_from_before_fingerprints_means_already_ingested_as_it_did(kb: KnowledgeBase, tmp_path: Path) -> None:
    """Namespaces ingested before markers kept a fingerprint: the content is unknown, so a record
    under a marked id is skipped as already ingested (the behaviour of those versions)."""
    kb.gateway.write("ingested_records_mark", kb=kb.namespace, rows=[{"key": "trajectory:p-1", "fingerprint": None}])
    report = kb.ingest([jsonl(tmp_path / "runs.jsonl", OTHER_RUN)])
    assert report.records_already_ingested == 1 and report.records_rejected == 0 and kb.count() == 0


def test_two_clients_adding_one_id_with_different_content_at_once_store_one_content(
    kb: KnowledgeBase, neo4j_target: Neo4jTarget
) -> None:
    """The check "is this id stored with other content?" and the write are one transaction (the
    namespace's state node is locked first), so of two clients racing one of them is refused."""
    clients = [KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, database=neo4j_target.database)
               for _ in range(2)]
    for round_ in range(6):
        key = f"race-{round_}"
        contents = [EXPERIENCE | {"id": key, "problem": f"A customer wants to cancel order #{round_}."},
                    EXPERIENCE | {"id": key, "problem": f"A customer wants a refund for order #{round_}.",
                                  "steps": [{"action": "refund_order", "text": "refund <order_id>"}]}]
        start = threading.Barrier(2)
        outcomes: list[str] = []

        def add(client: KnowledgeBase, content: dict[str, Any]) -> None:
            start.wait()
            try:
                client.add_experiences([content])
                outcomes.append(str(content["problem"]))
            except InvalidInputError as error:
                outcomes.append(f"refused: {error}")

        threads = [threading.Thread(target=add, args=pair) for pair in zip(clients, contents, strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        [winner] = [o for o in outcomes if not o.startswith("refused")]
        [refused] = [o for o in outcomes if o.startswith("refused")]
        assert f"id: '{key}' is already stored with different content" in refused
        stored = kb.get(key)
        expected = next(c for c in contents if c["problem"] == winner)
        assert stored is not None and stored.problem == winner
        assert [s.action for s in stored.steps] == [s["action"] for s in expected["steps"]]
