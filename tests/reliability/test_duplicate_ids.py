"""One id, one record. The same id with the same content is a duplicate: skipped and counted.
The same id with other content — twice in one file, in a later run, or given again to
add_experiences — is an error naming where, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase

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
