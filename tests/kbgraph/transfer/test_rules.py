"""The import's rules hold an Outcome's task and agent, and a LangGraph store item's value, to what
feedback and the store write: they were imported whole, whatever their length."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbgraph.core.models import MAX_NAME_CHARS, MAX_TEXT_CHARS, STORED_OUTCOME_TASK_CHARS
from kbgraph.core.value_bounds import MAX_STORE_VALUE_CHARS
from kbgraph.integrations.store_values import MAX_VALUE_CHARS
from kbgraph.learning.feedback import FeedbackEvent
from kbgraph.transfer._rules import NODE_RULES, property_problems

CYPHER = Path(__file__).resolve().parents[3] / "cypher" / "queries"


@pytest.mark.parametrize(("label", "name", "limit"), [
    ("Outcome", "task", STORED_OUTCOME_TASK_CHARS), ("Outcome", "agent", MAX_NAME_CHARS),
    ("StoreItem", "value", MAX_STORE_VALUE_CHARS),
])
def test_a_text_longer_than_what_kbgraph_writes_is_refused_by_its_field(label: str, name: str, limit: int) -> None:
    assert property_problems(NODE_RULES[label], {name: "x" * limit}) == []
    [problem] = property_problems(NODE_RULES[label], {name: "x" * (limit + 1)})
    assert problem.startswith(f"{name}: 'xxx") and f"is {limit + 1:,} characters long, over the {limit:,}" in problem


def test_a_blank_task_or_agent_is_refused_as_feedback_refuses_it() -> None:
    assert property_problems(NODE_RULES["Outcome"], {"task": " ", "agent": ""}) == [
        "task: ' ' is not a non-empty string", "agent: '' is not a non-empty string"]


def test_the_bounds_are_the_writers_own() -> None:
    assert MAX_VALUE_CHARS == MAX_STORE_VALUE_CHARS
    written = (CYPHER / "feedback_outcome.cypher").read_text(encoding="utf-8")
    assert re.findall(r"left\(\$task, (\d+)\)", written) == [str(STORED_OUTCOME_TASK_CHARS)]
    FeedbackEvent(task="t" * MAX_TEXT_CHARS, agent="a" * MAX_NAME_CHARS)
    with pytest.raises(ValueError, match="agent"):
        FeedbackEvent(agent="a" * (MAX_NAME_CHARS + 1))
