"""LLMReflector (concept–insight pairs) and LLMDocumentWriter (BREW integrator), over real HTTP.

The document writer is tested here too: it is the reflector's partner in BREW and shares its fake.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kbgraph.ingest.integrate_evidence import Evidence, Statement
from kbgraph.ingest.integrate_llm import LLMDocumentWriter
from kbgraph.ingest.reflect import Reflector
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

PAIRS = [
    {"concept": "return outside the return window",
     "insight": "Check return eligibility before promising a refund, since the window may have closed."},
    {"concept": "policy exceptions",
     "insight": "Hand requests for policy exceptions to a human agent instead of deciding them."},
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai() as server:
        server.chat_answer = lambda body: json.dumps({"pairs": PAIRS})
        yield server


def llm_for(fake: FakeOpenAI) -> LLMClient:
    return LLMClient(fake.base_url, "k", "fake-chat", timeout_s=5, max_attempts=2,
                     backoff_initial_s=0.01, backoff_max_s=0.02)


# Reflector --------------------------------------------------------------------------------------


def test_it_is_a_reflector_named_llm(fake: FakeOpenAI) -> None:
    reflector: Reflector = LLMReflector(llm_for(fake))
    assert reflector.name == "llm"


def test_a_trajectory_gives_the_concept_insight_pairs_the_model_found(fake: FakeOpenAI) -> None:
    pairs = LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)
    assert pairs == [ConceptInsight(**pair) for pair in PAIRS]


def test_the_model_reads_the_trajectory_and_the_experience_abstracted_from_it(fake: FakeOpenAI) -> None:
    LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)
    prompt = fake.chat_requests[0]["messages"][1]["content"]
    assert "hiking boots are too small" in prompt and "NotEligible" in prompt and "Outcome: failure" in prompt
    assert EXPERIENCE.problem in prompt and "return window had ended" in prompt


def test_more_than_five_pairs_keep_the_first_five(fake: FakeOpenAI) -> None:
    many = [{"concept": f"concept {i}", "insight": f"Insight number {i}."} for i in range(8)]
    fake.chat_answer = lambda body: json.dumps({"pairs": many})
    pairs = LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)
    assert [p.concept for p in pairs] == [f"concept {i}" for i in range(5)]


def test_the_same_lesson_twice_is_returned_once(fake: FakeOpenAI) -> None:
    again = {**PAIRS[0], "concept": " Return outside the return window "}
    fake.chat_answer = lambda body: json.dumps({"pairs": [PAIRS[0], again]})
    assert len(LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)) == 1


def test_an_answer_without_pairs_is_reported_never_returned(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({"pairs": []})
    with pytest.raises(LLMOutputError, match="answer.pairs: List should have at least 1 item"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)


def test_a_pair_without_an_insight_is_reported_never_returned(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({"pairs": [{"concept": "policy exceptions"}]})
    with pytest.raises(LLMOutputError, match="answer.pairs.0.insight: Field required"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)


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










# What a small model writes when it rambles: well-formed JSON that is no lesson ---------------------


def test_an_insight_that_is_not_a_sentence_is_malformed(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({"pairs": [{"concept": "policy exceptions", "insight": ","}]})
    with pytest.raises(LLMOutputError, match="answer.pairs.0.insight: ',' is not a sentence"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)


def test_a_concept_copied_from_the_instructions_is_malformed(fake: FakeOpenAI) -> None:
    copied = "a short noun phrase naming the situation or technique the lesson is about, general enough to recur"
    fake.chat_answer = lambda body: json.dumps({"pairs": [{"concept": copied, "insight": PAIRS[0]["insight"]}]})
    with pytest.raises(LLMOutputError, match="answer.pairs.0.concept: longer than 12 words"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)






def test_an_insight_that_restates_the_instructions_is_malformed(fake: FakeOpenAI) -> None:
    # What Gemma 3 270M answered for a real run, once its other answer had been refused.
    restated = "A short noun phrase named the situation or technique, as concept-insight pairs."
    fake.chat_answer = lambda body: json.dumps({"pairs": [{"concept": "policy exceptions", "insight": restated}]})
    with pytest.raises(LLMOutputError, match="answer.pairs.0.insight: repeats the instructions"):
        LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE)


def test_an_insight_may_use_the_words_of_an_example_concept(fake: FakeOpenAI) -> None:
    lesson = {"concept": "verify identity before account changes",
              "insight": "Verify the identity of the customer before changing the account."}
    fake.chat_answer = lambda body: json.dumps({"pairs": [lesson]})
    assert LLMReflector(llm_for(fake)).reflect(TRAJECTORY, EXPERIENCE) == [ConceptInsight(**lesson)]
