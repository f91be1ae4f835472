"""LLMReflector (the rules' lessons, reworded) and LLMDocumentWriter (BREW integrator), over real HTTP.

The document writer is tested here too: it is the reflector's partner in BREW and shares its fake.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from kbgraph.ingest.integrate_evidence import Evidence, Statement
from kbgraph.ingest.integrate_llm import LLMDocumentWriter
from kbgraph.ingest.reflect import Reflector, RuleBasedReflector
from kbgraph.ingest.reflect_llm import LLMReflector
from kbgraph.llm import LLMClient, LLMOutputError
from kbgraph.core.models import ConceptInsight, Experience, FailureMode, Step, Trajectory
from tests.fakes.openai_server import FakeOpenAI, running_fake_openai

TRAJECTORY = Trajectory.model_validate({
    "id": "retail-nair-boots", "source": "tau-bench retail (test copy)", "domain": "retail",
    "task": "Can you process a return for order #W1198024? The hiking boots are too small. I'm Priya Nair, zip 94110.",
    "steps": [
        {"action": "find_user_by_name_zip", "arguments": {"first_name": "Priya", "last_name": "Nair", "zip": "94110"},
         "observation": "user_id: priya_nair_7765"},
        {"action": "get_order_details", "arguments": {"order_id": "#W1198024"},
         "observation": "status: delivered on 2024-02-02; items: Trail Hiking Boots size 7 (item 4401983326)"},
        {"action": "check_return_eligibility", "arguments": {"order_id": "#W1198024", "item_ids": ["4401983326"]},
         "error": "NotEligible: return window of 30 days ended on 2024-03-03", "reward": 0.0},
        {"action": "transfer_to_human_agent", "arguments": {"summary": "outside 30-day window, asks for an exception"},
         "thought": "Cannot override policy myself.", "observation": "transferred"},
    ],
    "outcome": {"success": False, "reward": 0.0},
})

EXPERIENCE = Experience(
    problem="A customer wants to return an item after the return window closed.",
    goal="The customer is told the policy and handed to a human for an exception.",
    domain="retail", success_rate=0.0, source_ids=["retail-nair-boots"],
    steps=[Step(action="find_user_by_name_zip", text="identify the customer by {name} and {zip}"),
           Step(action="get_order_details", text="read {order_id}"),
           Step(action="check_return_eligibility", text="check whether {item_ids} can still be returned"),
           Step(action="transfer_to_human_agent", text="hand over with a summary")],
    failure_modes=[FailureMode(description="return window had ended", issue_type="not_eligible",
                               recovery="transfer to a human agent for a policy exception", step_order=2)],
)

def rules_lessons() -> list[ConceptInsight]:
    """What the rule-based reflector learns from the run: records, worded by kbgraph."""
    return RuleBasedReflector().reflect(TRAJECTORY, EXPERIENCE)


def lessons_in(prompt: str) -> list[str]:
    """The lessons a prompt lists ("1. [concept] sentence")."""
    return [re.sub(r"^\d+\. \[[^\]]*\] ", "", line)
            for line in prompt.split("Lessons:\n", 1)[1].splitlines() if re.match(r"^\d+\. \[", line)]


def reworded(prompt: str) -> str:
    """Each lesson of the prompt reworded: its words kept, "In short:" before them."""
    return json.dumps({"insights": [f"In short: {lesson}" for lesson in lessons_in(prompt)]})


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai() as server:
        server.chat_answer = lambda body: reworded(body["messages"][1]["content"])
        yield server


def llm_for(fake: FakeOpenAI) -> LLMClient:
    return LLMClient(fake.base_url, "k", "fake-chat", timeout_s=5, max_attempts=2,
                     backoff_initial_s=0.01, backoff_max_s=0.02)


# Reflector --------------------------------------------------------------------------------------


def test_it_is_a_reflector_named_llm(fake: FakeOpenAI) -> None:
    reflector: Reflector = LLMReflector(llm_for(fake))
    assert reflector.name == "llm"


def test_the_model_only_rewords_each_lesson_and_the_record_and_evidence_stay_the_rules(fake: FakeOpenAI) -> None:
    rules = rules_lessons()
    assert any(r.record is not None and r.record.kind == "recovery" for r in rules), "the run has an error to learn"
    pairs = LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)
    assert [p.insight for p in pairs] == [f"In short: {r.insight}" for r in rules]
    # What the lesson says (its record), where it is filed and whether its call went through are the rules'.
    assert [(p.concept, p.record, p.worked) for p in pairs] == [(r.concept, r.record, r.worked) for r in rules]
    assert all(p.record is not None and p.record.kind != "lesson" for p in pairs)


def test_the_model_reads_the_run_and_the_lessons_to_reword(fake: FakeOpenAI) -> None:
    LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)
    prompt = fake.chat_requests[0]["messages"][1]["content"]
    assert "hiking boots are too small" in prompt and "NotEligible" in prompt and "Outcome: failure" in prompt
    assert lessons_in(prompt) == [r.insight for r in rules_lessons()]


def test_a_run_that_teaches_nothing_asks_nothing(fake: FakeOpenAI) -> None:
    empty = TRAJECTORY.model_copy(update={"steps": []})
    assert LLMReflector(llm_for(fake)).reflect(empty, EXPERIENCE) == []
    assert fake.chat_requests == []


def test_an_answer_with_another_number_of_lessons_is_reported_never_returned(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({"insights": ["Check the return window before anything else."]})
    with pytest.raises(LLMOutputError, match=r"answer has 1 insights for \d+: reword each one, in order"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)


def test_a_rewording_that_drops_a_lesson_or_claims_an_outcome_is_reported_never_returned(fake: FakeOpenAI) -> None:
    count = len(rules_lessons())
    fake.chat_answer = lambda body: json.dumps({"insights": ["Be careful with this."] * count})
    with pytest.raises(LLMOutputError, match="answer.insights.0: 'Be careful with this.' drops what"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)
    boast = lambda body: json.dumps({"insights": [  # noqa: E731
        f"{lesson} It worked." for lesson in lessons_in(body["messages"][1]["content"])]})
    fake.chat_answer = boast
    with pytest.raises(LLMOutputError, match="answer.insights.0: says 'worked'; the evidence says how it went"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)


def test_two_lessons_of_one_concept_worded_alike_are_reported_never_returned(fake: FakeOpenAI) -> None:
    # A return that went through: what was read before it, and the call, all about one operation.
    returned = TRAJECTORY.model_copy(update={"outcome": TRAJECTORY.outcome.model_copy(update={"success": True}), "steps": [
        *TRAJECTORY.steps[:2], TRAJECTORY.steps[2].model_copy(update={
            "action": "return_delivered_order_items", "error": None})]})
    rules = RuleBasedReflector().reflect(returned, EXPERIENCE)
    assert [r.concept for r in rules] == ["return delivered order items"] * 3
    fake.chat_answer = lambda body: json.dumps({"insights": [rules[0].insight] * 3})
    with pytest.raises(LLMOutputError, match="answer.insights.1: words lesson 2 as lesson 1; reword each apart"):
        LLMReflector(llm_for(fake)).reflect(returned, EXPERIENCE)


# Document writer (integrator) ---------------------------------------------------------------------

def _statements() -> list[Statement]:
    """Two placed statements as the evidence pass builds them: a how that worked, a pitfall."""
    worked = Evidence(frozenset({"r1", "r2"}), frozenset({"t1"}), frozenset({"r1", "r2"}), frozenset())
    failed = Evidence(frozenset({"r3"}), frozenset({"t2"}), frozenset(), frozenset())
    return [Statement("how", "retail", "Check return eligibility before starting the return.", worked, ("a",)),
            Statement("pitfalls", "retail", "Never promise a refund before checking the return window.", failed, ("b",))]


def test_the_model_rewords_each_statement_in_order(fake: FakeOpenAI) -> None:
    reworded = ["Check the return eligibility before the return starts.",
                "Do not promise a refund before the return window is checked."]
    fake.chat_answer = lambda body: json.dumps({"statements": reworded})
    assert LLMDocumentWriter(llm_for(fake)).reword("return a delivered item", _statements()) == reworded
    prompt = fake.chat_requests[0]["messages"][1]["content"]
    assert "Concept: return a delivered item" in prompt and "[pitfalls] Never promise a refund" in prompt


def test_no_statements_means_no_call(fake: FakeOpenAI) -> None:
    assert LLMDocumentWriter(llm_for(fake)).reword("returns", []) == []
    assert fake.chat_requests == []


def test_a_rewording_that_drops_what_a_statement_says_or_claims_an_outcome_is_refused(fake: FakeOpenAI) -> None:
    dropped = {"statements": ["Be careful.", "Do not promise a refund before the return window is checked."]}
    fake.chat_answer = lambda body: json.dumps(dropped)
    with pytest.raises(LLMOutputError, match="drops what"):
        LLMDocumentWriter(llm_for(fake)).reword("returns", _statements())
