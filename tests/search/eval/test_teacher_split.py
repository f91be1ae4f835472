"""The teacher benchmark's split (pure): which runs are the memory and which errored steps ask."""

from __future__ import annotations

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.models import Trajectory
from kbgraph.search.eval.teacher import memory_runs, teacher_queries


def run(run_id: str, task: str, error: str | None = None, success: bool = True) -> Trajectory:
    steps = [{"action": "book_reservation", "arguments": {"amount": 5}, **({"error": error} if error else {})},
             {"action": "book_reservation", "arguments": {"amount": 55}}]
    return Trajectory.model_validate({"id": run_id, "domain": "airline", "task": task, "steps": steps,
                                      "outcome": {"success": success}})


RUNS = [run("a-0", "task A"), run("b-0", "task B"), run("a-1", "task A"), run("c-0", "task C"), run("b-1", "task B")]


def test_tasks_are_halved_by_their_position_of_first_appearance() -> None:
    assert memory_runs(RUNS, "even") == {"a-0", "a-1", "c-0"}
    assert memory_runs(RUNS, "odd") == {"b-0", "b-1"}
    assert memory_runs(RUNS, None) == {r.id for r in RUNS}


def test_an_unknown_split_is_refused_by_name() -> None:
    with pytest.raises(InvalidInputError) as caught:
        memory_runs(RUNS, "thirds")  # type: ignore[arg-type]
    assert "split 'thirds'" in caught.value.problems[0]


def test_each_errored_step_carries_its_error_class_and_its_runs_outcome() -> None:
    (query,) = teacher_queries([run("x", "task X", "Error: payment method certificate_12 not found", success=False)])
    assert query.error_class == "payment method not found" and query.run_succeeded is False
    assert query.useful and not query.run_succeeded  # a concrete retry that went through, in a run that failed
    assert query.same_class("payment method not found") and not query.same_class(None)
