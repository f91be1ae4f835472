"""A request split into its asks by the configured LLM (kbgraph.search.asks_llm): the model's asks
when they are the request's own words, the rules' split whenever the model gives nothing usable —
over real HTTP to a scripted OpenAI-compatible server, and through a search on the real Neo4j."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.core.settings import Settings
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.llm import LLMClient
from kbgraph.search.asks import split_asks
from kbgraph.search.asks_llm import LLMAskSplitter, ask_splitter_from_settings, foreign_words
from tests.conftest import Neo4jTarget
from tests.fakes.openai_server import FakeOpenAI, api_error, running_fake_openai

REQUEST = "I bank with you already. Open me a credit card and a savings account, whatever pair earns the most."
SPLIT = ["Open me a credit card", "Open a savings account, whatever pair earns the most"]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with running_fake_openai() as server:
        yield server


def _settings(fake: FakeOpenAI, **changes: Any) -> Settings:
    return Settings(ask_splitter="llm", llm_base_url=fake.base_url, llm_api_key="test", llm_model="fake",
                    llm_max_attempts=2, **changes)


def _splitter(fake: FakeOpenAI) -> LLMAskSplitter:
    splitter = ask_splitter_from_settings(_settings(fake))
    assert splitter is not None
    splitter.client.backoff_initial_s, splitter.client.backoff_max_s = 0.01, 0.02
    return splitter


def test_an_ask_holds_the_requests_words_and_may_repeat_the_verb_but_no_word_of_its_own() -> None:
    assert foreign_words("Open a savings account", REQUEST) == []
    assert foreign_words("cancel the reservation", "scrap my booking") == ["cancel", "reservation"]


def test_the_rules_split_unless_the_llm_is_configured() -> None:
    assert ask_splitter_from_settings(Settings()) is None
    assert isinstance(ask_splitter_from_settings(Settings(ask_splitter="llm")), LLMAskSplitter)


def test_the_models_asks_are_used_and_each_request_is_asked_once(fake: FakeOpenAI) -> None:
    # The rules read one ask: "open" governs both changes.
    assert len(split_asks(REQUEST)) == 1
    fake.chat_answer = lambda body: json.dumps({"asks": SPLIT})
    splitter = _splitter(fake)
    assert splitter(REQUEST) == SPLIT
    assert splitter("  " + REQUEST.replace(" ", "  ")) == SPLIT, "the same request, spaced otherwise"
    assert len(fake.chat_requests) == 1 and splitter.asked == 1 and splitter.failed == 0
    assert "Request: " + REQUEST in fake.chat_requests[0]["messages"][-1]["content"]


def test_an_answer_in_words_of_the_models_own_is_asked_again_then_left_to_the_rules(fake: FakeOpenAI) -> None:
    fake.chat_answer = lambda body: json.dumps({"asks": ["apply for a credit card", "open a savings account"]})
    splitter = _splitter(fake)
    assert splitter(REQUEST) is None
    assert len(fake.chat_requests) == 2, "refused, asked again (llm_max_attempts 2)"
    assert splitter.failed == 1


@pytest.mark.parametrize("answer", [json.dumps({"asks": []}), json.dumps({"asks": ["a"] * 7}), "not json at all",
                                    json.dumps({"asks": ["open a savings account", "Open a savings  account"]})])
def test_no_ask_too_many_or_no_json_is_left_to_the_rules(fake: FakeOpenAI, answer: str) -> None:
    fake.chat_answer = lambda body: answer
    assert _splitter(fake)(REQUEST) is None


def test_an_endpoint_that_fails_is_left_to_the_rules(fake: FakeOpenAI) -> None:
    fake.responses.extend([(500, api_error("overloaded", "server_error"))] * 4)
    splitter = _splitter(fake)
    assert splitter(REQUEST) is None and splitter.failed == 1


@pytest.mark.neo4j
def test_a_search_matches_the_models_asks_and_still_answers_when_the_endpoint_is_down(
    fake: FakeOpenAI, driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str, neo4j_target: Neo4jTarget,
) -> None:
    fake.chat_answer = lambda body: json.dumps({"asks": SPLIT})
    kb = KnowledgeBase(driver, embedder, namespace=namespace, database=neo4j_target.database,
                       settings=_settings(fake, namespace=namespace, neo4j_database=neo4j_target.database))
    try:
        kb.ingest([Path(str(resources.files("kbgraph") / "samples" / "trajectories.jsonl"))])
        assert kb.student.context.ask_splitter is not None
        hits = kb.search(REQUEST, domain="banking", k=5).hits
        asked = {tuple(a.ask for a in hit.breakdown.asks) for hit in hits if hit.breakdown.asks}
        assert asked == {tuple(SPLIT)}, "every workflow is matched ask by ask with the model's asks"
        # Down: the search answers with the rules' asks (a new request, so not from the cache).
        fake.responses.extend([(500, api_error("overloaded", "server_error"))] * 8)
        other = "Open me a credit card and a checking account please."
        assert kb.search(other, domain="banking", k=5).hits
    finally:
        kb.clear()
        kb.close()
