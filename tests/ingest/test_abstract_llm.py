"""LLMAbstractor: a trajectory in, a validated Experience out — through a real HTTP round trip."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kbgraph.ingest.abstract import Abstractor, RuleBasedAbstractor
from kbgraph.ingest.abstract_llm import PROMPT_BUDGET_CHARS, LLMAbstractor, render_trajectory
from kbgraph.llm import LLMClient, LLMOutputError
from kbgraph.core.models import Trajectory
from tests.fakes.openai_server import FakeOpenAI, running_fake_openai

# A customer-service run with a failed lookup and its recovery (as in kbgraph/samples).
TRAJECTORY: dict[str, Any] = {
    "id": "retail-okafor-kettle", "source": "tau-bench retail (test copy)", "domain": "retail",
    "task": "I'd like to send back the ceramic pour-over kettle I got in order #W7730152. My email is "
            "d.okafor@example.net. Put the money on my gift card please.",
    "steps": [
        {"action": "find_user_by_email", "arguments": {"email": "d.okafor@example.net"},
         "error": "UserNotFound: no user with email d.okafor@example.net", "reward": 0.0},
        {"action": "find_user_by_name_zip",
         "arguments": {"first_name": "Daniel", "last_name": "Okafor", "zip": "60614"},
         "thought": "Email lookup failed; asked for name and zip instead.",
         "observation": "user_id: daniel_okafor_2290", "reward": 1.0},
        {"action": "get_order_details", "arguments": {"order_id": "#W7730152"},
         "observation": "status: delivered; items: Ceramic Pour-Over Kettle (item 9912004561, $54.00)"},
        {"action": "return_delivered_order_items",
         "arguments": {"order_id": "#W7730152", "item_ids": ["9912004561"], "payment_method_id": "gift_card_7781023"},
         "observation": "status: return requested; refund $54.00 to gift card"},
    ],
    "outcome": {"success": True, "reward": 1.0},
}

ANSWER: dict[str, Any] = {
    "problem": "A customer wants to return a delivered item and be refunded to a payment method of their choice.",
    "goal": "The item's return is registered and the refund goes to the chosen payment method.",
    "difficulty": "medium",
    "steps": [
        {"action": "find_user_by_email", "text": "look the customer up by {email}", "args_schema": {"email": "string"}},
        {"action": "find_user_by_name_zip", "text": "look the customer up by {first_name} {last_name} and {zip}",
         "args_schema": {"first_name": "string", "last_name": "string", "zip": "string"}},
        {"action": "get_order_details", "text": "read {order_id} to find the item and payment methods",
         "args_schema": {"order_id": "string"}},
        {"action": "return_delivered_order_items",
         "text": "return {item_ids} of {order_id} refunding {payment_method_id}",
         "args_schema": {"order_id": "string", "item_ids": ["string"], "payment_method_id": "string"}},
    ],
    "failure_modes": [
        {"description": "no user is registered under the given email", "issue_type": "user_not_found",
         "recovery": "ask for name and zip code and look the customer up by those", "step_order": 0},
    ],
    "generalizability": 0.8,
    "notes": "models add keys nobody asked for; they are ignored",
}


#: What a failure mode says of the run, as the rule-based abstractor reads it (the model names the issue).
EVIDENCE = {"action", "signature", "recovery_kind", "recovered", "concrete", "run_id", "run_succeeded", "record",
            "looked_up"}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai() as server:
        server.chat_answer = lambda body: json.dumps(ANSWER)
        yield server


def abstractor_for(fake: FakeOpenAI, max_attempts: int = 2) -> LLMAbstractor:
    return LLMAbstractor(LLMClient(fake.base_url, "k", "fake-chat", timeout_s=5, max_attempts=max_attempts,
                                   backoff_initial_s=0.01, backoff_max_s=0.02))


def trajectory(**changes: Any) -> Trajectory:
    return Trajectory.model_validate({**TRAJECTORY, **changes})


def test_it_is_an_abstractor_named_llm(fake: FakeOpenAI) -> None:
    abstractor: Abstractor = abstractor_for(fake)
    assert abstractor.name == "llm"


def test_a_trajectory_becomes_the_experience_the_model_described(fake: FakeOpenAI) -> None:
    experience = abstractor_for(fake).abstract(trajectory())
    assert experience.problem == ANSWER["problem"] and experience.goal == ANSWER["goal"]
    assert [s.action for s in experience.steps] == [s["action"] for s in ANSWER["steps"]]
    assert experience.steps[2].text == "read {order_id} to find the item and payment methods"
    assert experience.steps[3].args_schema["item_ids"] == '["string"]'  # a non-string type is kept as its JSON
    assert (experience.difficulty, experience.generalizability, experience.kind) == ("medium", 0.8, "concrete")
    assert experience.failure_modes[0].issue_type == "user_not_found" and experience.failure_modes[0].step_order == 0
    assert experience.steps[0].issue_type == "user_not_found"


def test_what_the_model_cannot_know_comes_from_the_trajectory(fake: FakeOpenAI) -> None:
    experience = abstractor_for(fake).abstract(trajectory())
    assert experience.domain == "retail"
    assert experience.source == "tau-bench retail (test copy)" and experience.source_ids == ["retail-okafor-kettle"]
    assert experience.success_rate == 1.0
    assert [s.reward for s in experience.steps] == [0.0, 1.0, None, None]  # one step per call: rewards carry over


def test_a_failed_run_has_success_rate_zero(fake: FakeOpenAI) -> None:
    experience = abstractor_for(fake).abstract(trajectory(outcome={"success": False, "reward": 0.0}))
    assert experience.success_rate == 0.0


def test_rewards_are_not_guessed_when_steps_and_calls_differ_in_number(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "steps": ANSWER["steps"][1:]})
    experience = abstractor_for(fake).abstract(trajectory())
    assert [s.reward for s in experience.steps] == [None, None, None]


def test_a_failure_pointing_past_the_last_step_keeps_its_text_but_not_the_pointer(fake: FakeOpenAI) -> None:
    failure = {**ANSWER["failure_modes"][0], "step_order": 9}
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "failure_modes": [failure]})
    experience = abstractor_for(fake).abstract(trajectory())
    assert experience.failure_modes[0].step_order is None
    assert experience.failure_modes[0].description == failure["description"]


def test_the_model_reads_the_task_the_calls_their_errors_and_the_outcome(fake: FakeOpenAI) -> None:
    abstractor_for(fake).abstract(trajectory())
    prompt = fake.chat_requests[0]["messages"][1]["content"]
    assert "ceramic pour-over kettle" in prompt and "Domain: retail" in prompt
    assert "0. find_user_by_email" in prompt and "UserNotFound" in prompt
    assert '"payment_method_id": "gift_card_7781023"' in prompt
    assert "Outcome: success" in prompt


def test_very_long_trajectories_are_cut_to_fit_the_prompt() -> None:
    noisy_steps = [{"action": f"tool_{i}", "arguments": {"q": "x" * 5_000}, "observation": "y" * 19_000}
                   for i in range(100)]
    text = render_trajectory(trajectory(task="t" * 90_000, steps=noisy_steps))
    assert len(text) <= PROMPT_BUDGET_CHARS
    assert "more characters]" in text and "calls omitted" in text
    assert "0. tool_0" in text and "99. tool_99" in text  # the start and the end survive


def test_a_malformed_answer_is_asked_again(fake: FakeOpenAI) -> None:
    answers = iter(["{not json", json.dumps(ANSWER)])
    fake.chat_answer = lambda body: next(answers)
    abstractor = abstractor_for(fake)
    assert abstractor.abstract(trajectory()).problem == ANSWER["problem"]
    assert abstractor.llm.stats.attempts == 2


def test_an_answer_missing_a_field_is_reported_never_returned(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({k: v for k, v in ANSWER.items() if k != "problem"})
    with pytest.raises(LLMOutputError, match="answer.problem: Field required"):
        abstractor_for(fake).abstract(trajectory())


def test_an_answer_without_steps_for_a_trajectory_with_steps_is_malformed(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "steps": [], "failure_modes": []})
    abstractor = abstractor_for(fake, max_attempts=2)
    with pytest.raises(LLMOutputError, match="answer.steps is empty but the trajectory has 4 steps"):
        abstractor.abstract(trajectory())
    assert abstractor.llm.stats.attempts == 2


def test_a_trajectory_without_steps_may_get_an_experience_without_steps(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "steps": [], "failure_modes": []})
    experience = abstractor_for(fake).abstract(trajectory(steps=[]))
    assert experience.steps == [] and experience.source_ids == ["retail-okafor-kettle"]


def test_an_unknown_difficulty_is_malformed(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "difficulty": "tricky"})
    with pytest.raises(LLMOutputError, match="answer.difficulty"):
        abstractor_for(fake).abstract(trajectory())


# What a small model writes when it rambles: well-formed JSON that is not this run's experience -----


@pytest.mark.parametrize(("steps", "reason"), [
    ([ANSWER["steps"][0], ANSWER["steps"][0]], r"answer.steps.1.action: 'find_user_by_email' is not the next tool"),
    ([ANSWER["steps"][2], ANSWER["steps"][1]], r"answer.steps.1.action: 'find_user_by_name_zip' is not the next"),
    ([{"action": "1.0", "text": "Select from the above options"}], r"answer.steps.0.action: '1.0' is not the next"),
])
def test_steps_that_are_not_the_calls_in_order_are_malformed(fake: FakeOpenAI, steps: list[Any], reason: str) -> None:
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "steps": steps, "failure_modes": []})
    with pytest.raises(LLMOutputError, match=reason):
        abstractor_for(fake).abstract(trajectory())


def test_a_problem_that_is_not_a_sentence_is_malformed(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "problem": "failure_mode"})
    with pytest.raises(LLMOutputError, match="answer.problem: 'failure_mode' is not a sentence"):
        abstractor_for(fake).abstract(trajectory())


def test_an_answer_cut_off_after_some_steps_keeps_them(fake: FakeOpenAI) -> None:
    from tests.fakes.openai_server import chat_completion

    whole = json.dumps({k: ANSWER[k] for k in ("problem", "goal", "steps")})
    cut = whole[: whole.index('{"action": "get_order_details"') + 20]  # inside the third step
    fake.responses.append((200, chat_completion(cut, finish_reason="length")))
    abstractor = abstractor_for(fake)
    experience = abstractor.abstract(trajectory())
    assert [s.action for s in experience.steps] == ["find_user_by_email", "find_user_by_name_zip"]
    assert abstractor.llm.stats.repaired == 1


def test_a_failure_the_model_places_at_an_errored_call_carries_what_the_run_shows(fake: FakeOpenAI) -> None:
    # The model words it; what was done next, the record and the outcome are read from the run, as
    # the rule-based abstractor reads them, so the teacher and the audit read both paths alike.
    experience = abstractor_for(fake).abstract(trajectory())
    [failure] = experience.failure_modes
    [rules] = RuleBasedAbstractor().abstract(trajectory()).failure_modes
    assert failure.description == ANSWER["failure_modes"][0]["description"]
    assert failure.recovery == ANSWER["failure_modes"][0]["recovery"] and failure.step_order == 0
    assert failure.record is not None and failure.record == rules.record
    assert failure.record.kind == "recovery" and failure.record.operation == "find user by email"
    assert failure.record.recovery == "switch" and failure.record.action == "find_user_by_name_zip"
    assert failure.model_dump(include=EVIDENCE) == rules.model_dump(include=EVIDENCE)


def test_an_errored_call_the_model_does_not_name_is_added_as_the_rule_path_reads_it(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "failure_modes": []})
    [rules] = RuleBasedAbstractor().abstract(trajectory()).failure_modes
    assert abstractor_for(fake).abstract(trajectory()).failure_modes == [rules]
    # Its step is the model's step that stands for the call; none when the model left the call out.
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "steps": ANSWER["steps"][1:], "failure_modes": []})
    [added] = abstractor_for(fake).abstract(trajectory()).failure_modes
    assert added.step_order is None and added.record == rules.record


def test_a_failure_at_a_call_that_did_not_error_keeps_the_models_words_alone(fake: FakeOpenAI) -> None:
    # Nothing of the run backs it (the writer gives it a record from its words: test_failure_records).
    failure = {"description": "the refund went to the wrong card", "recovery": "", "step_order": 3}
    fake.chat_answer = lambda body: json.dumps({**ANSWER, "failure_modes": [failure]})
    own, added = abstractor_for(fake).abstract(trajectory()).failure_modes
    assert (own.description, own.step_order, own.record, own.run_id) == (failure["description"], 3, None, None)
    assert added.action == "find_user_by_email" and added.record is not None
