"""Rebuilding experiences from query rows (kbgraph.store.experiences)."""

from __future__ import annotations

from typing import Any

from kbgraph.store.experiences import experience_from_record


def _record(steps: list[dict[str, Any]], failure_modes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "experience": {"id": "exp-1", "problem": "Cancel order {id}", "goal": "Get done: cancel order",
                       "domain": "retail", "kind": "concrete", "source_ids": ["run-1"]},
        "steps": steps, "failure_modes": failure_modes, "relations": [None],
    }


def test_a_step_or_failure_deleted_while_the_query_read_it_is_left_out() -> None:
    # What `s {.*, embedding: null, observation: null}` gives for a node another transaction
    # deleted between the match and the projection: only the projection's own keys.
    gone_step = {"embedding": None, "observation": None}
    gone_failure = {"embedding": None}
    experience = experience_from_record(_record(
        [{"order": 1, "action": "find_user", "text": "find the user"}, gone_step,
         {"order": 2, "action": "cancel_order", "text": "cancel it"}],
        [gone_failure, {"description": "order already shipped", "step_order": 2}],
    ))
    assert [s.action for s in experience.steps] == ["find_user", "cancel_order"]
    assert [f.description for f in experience.failure_modes] == ["order already shipped"]
