"""LLMClient: the real ``openai`` client over real HTTP to a local fake, retries owned by tenacity."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from pydantic import BaseModel

from kbgraph.core.errors import KbgraphError
from kbgraph.llm import LLMClient, LLMError, LLMOutputError
from kbgraph.store.managed.server import free_port
from kbgraph.core.settings import Settings
from tests.fakes.openai_server import FakeOpenAI, api_error, chat_completion, running_fake_openai


class PlanStep(BaseModel):
    action: str
    minutes: int


class Plan(BaseModel):
    title: str
    steps: list[PlanStep]


GOOD_PLAN = json.dumps({"title": "make tea", "steps": [{"action": "boil water", "minutes": 3}]})


def client_for(fake: FakeOpenAI, **options: Any) -> LLMClient:
    """A client with tiny backoffs, so retried tests stay fast."""
    settings: dict[str, Any] = {"timeout_s": 5.0, "max_attempts": 3, "backoff_initial_s": 0.01, "backoff_max_s": 0.05}
    settings.update(options)
    return LLMClient(fake.base_url, "test-key", "fake-chat", **settings)


@pytest.fixture
def fake() -> Any:
    with running_fake_openai() as server:
        server.chat_answer = lambda body: GOOD_PLAN
        yield server


def test_a_valid_answer_comes_back_as_the_pydantic_model(fake: FakeOpenAI) -> None:
    llm = client_for(fake)
    plan = llm.complete_json("You plan chores.", "Plan making tea.", Plan)
    assert plan == Plan(title="make tea", steps=[PlanStep(action="boil water", minutes=3)])
    assert (llm.stats.calls, llm.stats.attempts, llm.stats.retries) == (1, 1, 0)
    assert llm.stats.prompt_tokens == 10 and llm.stats.completion_tokens == 5


def test_the_request_asks_for_json_mode_and_carries_the_schema(fake: FakeOpenAI) -> None:
    client_for(fake).complete_json("You plan chores.", "Plan making tea.", Plan)
    body = fake.chat_requests[0]
    assert body["model"] == "fake-chat"
    assert body["response_format"] == {"type": "json_object"}
    system, user = body["messages"]
    assert system["role"] == "system" and system["content"].startswith("You plan chores.")
    assert '"minutes"' in system["content"]  # the JSON Schema of Plan travels with the prompt
    assert user == {"role": "user", "content": "Plan making tea."}


def test_nothing_is_created_until_the_first_call() -> None:
    llm = LLMClient("http://127.0.0.1:9/v1", None, "m")
    assert llm._client is None  # noqa: SLF001 — constructing must not connect or build anything


def test_settings_configure_the_client() -> None:
    llm = LLMClient.from_settings(Settings(
        llm_base_url="http://models.local/v1", llm_api_key="sk-x", llm_model="m-1", llm_timeout_s=7, llm_max_attempts=2,
    ))
    assert (llm.base_url, llm.api_key, llm.model, llm.timeout_s, llm.max_attempts) == (
        "http://models.local/v1", "sk-x", "m-1", 7, 2)
    assert LLMClient.from_settings(Settings(llm_base_url=None)).endpoint == "https://api.openai.com/v1"


def test_a_rate_limit_is_retried_and_the_next_answer_returned(fake: FakeOpenAI) -> None:
    fake.responses.append((429, api_error("Rate limit reached", "requests", "rate_limit_exceeded")))
    llm = client_for(fake)
    assert llm.complete_json("s", "u", Plan).title == "make tea"
    assert (llm.stats.attempts, llm.stats.retries) == (2, 1)


def test_a_server_error_is_retried_and_the_next_answer_returned(fake: FakeOpenAI) -> None:
    fake.responses.append((503, api_error("overloaded", "server_error")))
    llm = client_for(fake)
    assert llm.complete_json("s", "u", Plan).title == "make tea"
    assert (llm.stats.attempts, llm.stats.retries) == (2, 1)


def test_a_servers_retry_after_is_honoured(fake: FakeOpenAI) -> None:
    fake.responses.append((429, api_error("slow down"), {"retry-after-ms": "300"}))
    started = time.monotonic()
    client_for(fake, backoff_max_s=1.0).complete_json("s", "u", Plan)
    assert time.monotonic() - started >= 0.3


def test_a_timeout_is_retried_and_the_next_answer_returned(fake: FakeOpenAI) -> None:
    fake.delays.append(2.0)  # the first request hangs past the client's timeout
    llm = client_for(fake, timeout_s=0.3)
    assert llm.complete_json("s", "u", Plan).title == "make tea"
    assert (llm.stats.attempts, llm.stats.retries) == (2, 1)


def test_an_answer_that_is_not_json_is_asked_again(fake: FakeOpenAI) -> None:
    fake.responses.append((200, chat_completion("Sure! Here is your plan: boil water.")))
    llm = client_for(fake)
    assert llm.complete_json("s", "u", Plan).title == "make tea"
    assert (llm.stats.attempts, llm.stats.retries, llm.stats.malformed) == (2, 1, 1)


def test_json_in_a_markdown_fence_is_accepted(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: f"```json\n{GOOD_PLAN}\n```"
    assert client_for(fake).complete_json("s", "u", Plan).title == "make tea"


def test_an_answer_failing_the_schema_every_time_is_an_output_error_naming_the_field(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({"title": "tea", "steps": [{"minutes": 3}]})
    llm = client_for(fake, max_attempts=3)
    with pytest.raises(LLMOutputError) as caught:
        llm.complete_json("s", "u", Plan)
    message = str(caught.value)
    assert "answer.steps.0.action: Field required" in message
    assert "fake-chat" in message and fake.base_url in message
    assert (llm.stats.attempts, llm.stats.retries, llm.stats.malformed) == (3, 2, 3)
    assert isinstance(caught.value, LLMError) and isinstance(caught.value, KbgraphError)


def test_an_answer_that_is_never_json_says_so(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: "I cannot help with that."
    with pytest.raises(LLMOutputError, match=r"answer is not JSON .*I cannot help"):
        client_for(fake, max_attempts=2).complete_json("s", "u", Plan)


def test_a_json_array_is_not_an_answer(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: "[1, 2]"
    with pytest.raises(LLMOutputError, match="not an object"):
        client_for(fake, max_attempts=1).complete_json("s", "u", Plan)


def test_an_answer_cut_off_at_the_token_limit_is_malformed(fake: FakeOpenAI) -> None:
    fake.responses.append((200, chat_completion('{"title": "t', finish_reason="length")))
    llm = client_for(fake)
    assert llm.complete_json("s", "u", Plan).title == "make tea"
    assert llm.stats.malformed == 1


def test_a_check_can_reject_a_well_formed_answer_and_have_it_asked_again(fake: FakeOpenAI) -> None:
    answers = iter([json.dumps({"title": "tea", "steps": []}), GOOD_PLAN])
    fake.chat_answer = lambda body: next(answers)
    llm = client_for(fake)
    plan = llm.complete_json("s", "u", Plan, check=lambda p: None if p.steps else "no steps")
    assert plan.steps and llm.stats.attempts == 2


def test_a_rejected_api_key_fails_at_once_with_a_hint(fake: FakeOpenAI) -> None:
    fake.responses.append((401, api_error("Incorrect API key provided", code="invalid_api_key")))
    llm = client_for(fake)
    with pytest.raises(LLMError, match="HTTP 401.*check llm_api_key") as caught:
        llm.complete_json("s", "u", Plan)
    assert not isinstance(caught.value, LLMOutputError)
    assert len(fake.chat_requests) == 1 and llm.stats.retries == 0


def test_an_unknown_model_fails_at_once_naming_the_setting(fake: FakeOpenAI) -> None:
    fake.responses.append((404, api_error("The model `fake-chat` does not exist", code="model_not_found")))
    with pytest.raises(LLMError, match="HTTP 404.*check llm_model"):
        client_for(fake).complete_json("s", "u", Plan)
    assert len(fake.chat_requests) == 1


def test_a_bad_request_fails_at_once_with_the_servers_reason(fake: FakeOpenAI) -> None:
    fake.responses.append((400, api_error("response_format json_object is not supported")))
    with pytest.raises(LLMError, match="HTTP 400.*response_format json_object is not supported"):
        client_for(fake).complete_json("s", "u", Plan)
    assert len(fake.chat_requests) == 1


def test_persistent_server_errors_give_up_after_the_attempt_budget(fake: FakeOpenAI) -> None:
    fake.responses.extend([(500, api_error("boom", "server_error"))] * 5)
    llm = client_for(fake, max_attempts=3)
    with pytest.raises(LLMError, match="failed 3 attempt.*HTTP 500: boom") as caught:
        llm.complete_json("s", "u", Plan)
    assert not isinstance(caught.value, LLMOutputError)
    assert len(fake.chat_requests) == 3 and llm.stats.retries == 2


def test_an_endpoint_that_refuses_connections_is_retried_then_reported() -> None:
    llm = LLMClient(f"http://127.0.0.1:{free_port()}/v1", None, "m", max_attempts=2,
                    backoff_initial_s=0.01, backoff_max_s=0.02)
    with pytest.raises(LLMError, match="cannot connect"):
        llm.complete_json("s", "u", Plan)
    assert llm.stats.attempts == 2


# Small models: bounded answers, repair, a retry told what was wrong, and how each call ended ------

RAMBLING = "You plan chores. " * 200  # what a small model does with a field it cannot fill: copy the prompt


def test_an_answer_cut_off_after_its_complete_values_is_repaired_not_asked_again(fake: FakeOpenAI) -> None:
    cut = '{"title": "make tea", "steps": [{"action": "boil water", "minutes": 3}, {"action": "' + RAMBLING
    fake.responses.append((200, chat_completion(cut, finish_reason="length")))
    llm = client_for(fake)
    plan = llm.complete_json("s", "u", Plan)
    assert plan == Plan(title="make tea", steps=[PlanStep(action="boil water", minutes=3)])
    assert len(fake.chat_requests) == 1
    assert (llm.stats.repaired, llm.stats.valid_first_try, llm.stats.malformed) == (1, 0, 0)


def test_json_with_chat_around_it_is_repaired(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: f"Sure! Here it is:\n{GOOD_PLAN}\nAnything else?"
    llm = client_for(fake)
    assert llm.complete_json("s", "u", Plan).title == "make tea"
    assert llm.stats.repaired == 1 and llm.stats.attempts == 1


def test_a_cut_off_answer_whose_complete_part_is_not_an_answer_is_asked_again_saying_why(fake: FakeOpenAI) -> None:
    fake.responses.append((200, chat_completion('{"title": "' + RAMBLING, finish_reason="length")))
    llm = client_for(fake)
    assert llm.complete_json("s", "Plan making tea.", Plan).title == "make tea"
    assert (llm.stats.attempts, llm.stats.valid_after_retry, llm.stats.repaired) == (2, 1, 0)
    first, again = (body["messages"][-1]["content"] for body in fake.chat_requests)
    assert first == "Plan making tea."
    assert again.startswith("Plan making tea.\n\nYour previous answer could not be used: answer was cut off at the "
                            "token limit (finish_reason=length); its complete part: answer.title: Field required")
    assert RAMBLING not in again  # the reason goes back, never the answer


def test_every_call_ends_one_way_and_the_outcomes_add_up_to_the_calls(fake: FakeOpenAI) -> None:
    cut = '{"title": "tea", "steps": [{"action": "boil", "minutes": 1}, {"act'
    fake.responses.extend([
        (200, chat_completion(GOOD_PLAN)),                        # valid at the first try
        (200, chat_completion(cut, finish_reason="length")),      # repaired
        (200, chat_completion("not json")), (200, chat_completion(GOOD_PLAN)),  # valid after a retry
        (200, chat_completion("no")), (200, chat_completion("never")),          # failed (max_attempts=2)
    ])
    llm = client_for(fake, max_attempts=2)
    for _ in range(3):
        llm.complete_json("s", "u", Plan)
    with pytest.raises(LLMOutputError):
        llm.complete_json("s", "u", Plan)
    stats = llm.stats
    assert (stats.calls, stats.valid_first_try, stats.repaired, stats.valid_after_retry, stats.failed) == (4, 1, 1, 1, 1)


def test_answers_are_bounded_in_tokens_and_the_schema_shown_caps_every_string(fake: FakeOpenAI) -> None:
    class Note(BaseModel):
        text: str
        tags: list[str]

    client_for(fake, max_tokens=512).complete_json("s", "u", Plan)
    assert fake.chat_requests[0]["max_tokens"] == 512
    fake.chat_answer = lambda body: json.dumps({"text": "x" * 1000, "tags": []})
    note = client_for(fake).complete_json("s", "u", Note)
    shown = json.loads(fake.chat_requests[1]["messages"][0]["content"].split("JSON Schema:\n", 1)[1])
    assert shown["properties"]["text"]["maxLength"] == 300
    assert shown["properties"]["tags"]["items"]["maxLength"] == 300
    assert len(note.text) == 1000  # the cap is what the model is asked for; validation stays the model's own


def test_no_token_bound_when_none_is_set(fake: FakeOpenAI) -> None:
    client_for(fake, max_tokens=None).complete_json("s", "u", Plan)
    assert "max_tokens" not in fake.chat_requests[0]


@pytest.mark.parametrize(("response_format", "expected"), [
    ("json_object", lambda schema: {"type": "json_object"}),
    ("json_schema", lambda schema: {"type": "json_schema",
                                    "json_schema": {"name": "Plan", "schema": schema, "strict": False}}),
    ("json_object_schema", lambda schema: {"type": "json_object", "schema": schema}),
])
def test_the_answers_shape_is_asked_for_in_the_servers_form(fake: FakeOpenAI, response_format: str,
                                                              expected: Any) -> None:
    from kbgraph.llm import bounded_schema

    client_for(fake, response_format=response_format).complete_json("s", "u", Plan)
    assert fake.chat_requests[0]["response_format"] == expected(bounded_schema(Plan.model_json_schema()))


def test_without_a_system_role_the_instructions_open_the_user_message(fake: FakeOpenAI) -> None:
    client_for(fake, system_role=False).complete_json("You plan chores.", "Plan making tea.", Plan)
    (message,) = fake.chat_requests[0]["messages"]
    assert message["role"] == "user"
    assert message["content"].startswith("You plan chores.\n\nAnswer with one JSON object")
    assert message["content"].endswith("\n\nPlan making tea.")


def test_a_temperature_is_sent_only_when_set(fake: FakeOpenAI) -> None:
    client_for(fake).complete_json("s", "u", Plan)
    client_for(fake, temperature=0.0).complete_json("s", "u", Plan)
    assert "temperature" not in fake.chat_requests[0] and fake.chat_requests[1]["temperature"] == 0.0


def test_the_new_settings_configure_the_client() -> None:
    llm = LLMClient.from_settings(Settings(llm_max_tokens=256, llm_response_format="json_object_schema",
                                           llm_system_role=False, llm_temperature=0))
    assert (llm.max_tokens, llm.response_format, llm.system_role, llm.temperature) == (
        256, "json_object_schema", False, 0.0)
    defaults = LLMClient.from_settings(Settings())
    assert (defaults.max_tokens, defaults.response_format, defaults.system_role, defaults.temperature) == (
        2048, "json_object", True, None)


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_refused_key_model_or_url_is_a_configuration_error(fake: FakeOpenAI, status: int) -> None:
    from kbgraph.llm import LLMConfigError

    fake.responses.append((status, api_error("no")))
    llm = client_for(fake)
    with pytest.raises(LLMConfigError):
        llm.complete_json("s", "u", Plan)
    assert llm.stats.failed == 1


def test_a_rejected_request_is_not_a_configuration_error(fake: FakeOpenAI) -> None:
    from kbgraph.llm import LLMConfigError

    # llama.cpp answers 400 to a prompt longer than its context: a problem of this item only.
    fake.responses.append((400, api_error("Requested tokens (20000) exceed context window of 16384")))
    with pytest.raises(LLMError) as caught:
        client_for(fake).complete_json("s", "u", Plan)
    assert not isinstance(caught.value, LLMConfigError)


def test_what_the_model_said_in_the_last_call_is_kept_attempt_by_attempt(fake: FakeOpenAI) -> None:
    fake.responses.append((200, chat_completion("Sure! " + "x" * 5000)))
    llm = client_for(fake)
    llm.complete_json("s", "u", Plan)
    assert [len(a) for a in llm.last_answers] == [4000, len(GOOD_PLAN)]
    assert llm.last_answers[0].startswith("Sure! ") and llm.last_answers[1] == GOOD_PLAN


def test_a_server_that_wants_max_completion_tokens_gets_it_from_then_on(fake: FakeOpenAI) -> None:
    # What OpenAI answers for its reasoning models.
    fake.responses.append((400, api_error("Unsupported parameter: 'max_tokens' is not supported with this model. "
                                          "Use 'max_completion_tokens' instead.", code="unsupported_parameter")))
    llm = client_for(fake, max_tokens=700)
    assert llm.complete_json("s", "u", Plan).title == "make tea"
    llm.complete_json("s", "u", Plan)
    refused, asked, again = fake.chat_requests
    assert refused["max_tokens"] == 700 and "max_completion_tokens" not in refused
    for body in (asked, again):
        assert body["max_completion_tokens"] == 700 and "max_tokens" not in body
    assert llm.stats.valid_first_try == 2 and llm.stats.retries == 0
