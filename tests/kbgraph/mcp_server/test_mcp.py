"""``kbgraph mcp``: the MCP server, driven by the official SDK's client over stdio exactly as an MCP
host runs it (``python -m kbgraph.cli mcp`` as a subprocess), against the session's real Neo4j and
the real MiniLM.

One server process serves the whole module (starting it loads the model), in a namespace of its
own; the tests share what ``added`` ingested through the server.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import neo4j
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, Tool
from pydantic import ValidationError

from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.store.managed.server import free_port
from kbgraph.mcp_server import TOOL_NAMES, KnowledgeBaseSource, build_server, contract_tool
from kbgraph.tools import SPECS, TrajectoryInput, argument_problems, kbgraph_version, one_line
from kbgraph.core.models import Trajectory
from kbgraph.core.settings import Settings
from tests.conftest import Neo4jTarget

pytestmark = [pytest.mark.neo4j, pytest.mark.slow, pytest.mark.timeout(300)]

SAMPLES = Path(__file__).resolve().parents[3] / "kbgraph" / "samples" / "trajectories.jsonl"
TRAJECTORIES = {record["id"]: record for record in map(json.loads, SAMPLES.read_text().splitlines())}
# A return that went smoothly, one whose email lookup failed and was recovered, and a failed
# airline cancellation: enough for search, refine and the counters.
ADDED = ("sample-retail-001", "sample-retail-002", "sample-airline-006")


@dataclass
class McpClient:
    """A live MCP client session, called from synchronous tests through an anyio portal."""

    portal: BlockingPortal
    session: ClientSession
    stream_faults: list[Exception] = field(default_factory=list)

    def tools(self) -> dict[str, Tool]:
        return {tool.name: tool for tool in self.portal.call(self.session.list_tools).tools}

    def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        async def call() -> CallToolResult:
            return await self.session.call_tool(name, arguments)

        return self.portal.call(call)

    def result(self, name: str, arguments: dict[str, Any]) -> Any:
        """The structured result of a call that must succeed."""
        outcome = self.call(name, arguments)
        assert not outcome.is_error, outcome.content
        return outcome.structured_content

    def error(self, name: str, arguments: dict[str, Any]) -> str:
        """The message of a call that must fail as a tool error."""
        outcome = self.call(name, arguments)
        assert outcome.is_error, f"{name} should have failed: {outcome.structured_content}"
        return " ".join(block.text for block in outcome.content if block.type == "text")


@pytest.fixture(scope="module")
def mcp_namespace() -> str:
    return f"test-mcp-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def direct_kb(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget,
              mcp_namespace: str) -> Iterator[KnowledgeBase]:
    """The server's namespace, seen directly: to check what the tools changed."""
    knowledge_base = KnowledgeBase(driver, embedder, namespace=mcp_namespace, database=neo4j_target.database)
    yield knowledge_base
    knowledge_base.clear()


@pytest.fixture(scope="module")
def client(neo4j_target: Neo4jTarget, mcp_namespace: str, direct_kb: KnowledgeBase) -> Iterator[McpClient]:
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "kbgraph.cli", "mcp"],
        env={**neo4j_target.env(mcp_namespace), "HF_HUB_OFFLINE": "1"},
    )
    faults: list[Exception] = []

    async def record_faults(message: Any) -> None:
        # The transport hands over any stdout line that is not JSON-RPC as an exception.
        if isinstance(message, Exception):
            faults.append(message)

    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(stdio_client(parameters)) as (read, write):
            session = ClientSession(read, write, read_timeout_seconds=240, message_handler=record_faults)
            with portal.wrap_async_context_manager(session):
                portal.call(session.initialize)
                yield McpClient(portal, session, faults)


@pytest.fixture(scope="module")
def added(client: McpClient) -> dict[str, Any]:
    """The add_trajectory results of the sample trajectories, by trajectory id."""
    return {tid: client.result("add_trajectory", {"trajectory": TRAJECTORIES[tid]}) for tid in ADDED}


def experience_of(added: dict[str, Any], trajectory_id: str) -> str:
    ids = added[trajectory_id]["experience_ids"]
    assert len(ids) == 1
    return str(ids[0])


# -- the tools and their schemas ---------------------------------------------------------------------


def test_the_server_offers_the_five_tools_with_described_inputs_and_output_schemas(client: McpClient) -> None:
    tools = client.tools()
    assert sorted(tools) == sorted(TOOL_NAMES)
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"

    assert tools["search_experiences"].input_schema["required"] == ["task"]
    assert set(tools["search_experiences"].input_schema["properties"]) == {"task", "domain", "steps_so_far", "k",
                                                                           "agent"}
    assert tools["refine_steps"].input_schema["required"] == ["task"]
    assert tools["add_trajectory"].input_schema["required"] == ["trajectory"]
    assert tools["get_experience"].input_schema["required"] == ["id"]
    assert tools["record_outcome"].input_schema["required"] == ["used", "outcome"]

    hit = tools["search_experiences"].output_schema["$defs"]["ExperienceHit"]["properties"]
    assert {"id", "problem", "goal", "domain", "steps", "score", "found_by", "explanation"} <= set(hit)
    assert {"experience_ids", "experiences_new", "report"} <= set(tools["add_trajectory"].output_schema["properties"])

    assert tools["search_experiences"].annotations.read_only_hint is True
    assert tools["get_experience"].annotations.read_only_hint is True
    assert tools["add_trajectory"].annotations.read_only_hint is False
    assert tools["add_trajectory"].annotations.idempotent_hint is True


def test_the_trajectory_input_names_every_field_of_the_reference_format() -> None:
    assert set(TrajectoryInput.model_fields) == set(Trajectory.model_fields)


# -- the happy path ----------------------------------------------------------------------------------


def test_add_trajectory_ingests_it_and_names_the_experience_that_stands_for_it(
    client: McpClient, added: dict[str, Any], direct_kb: KnowledgeBase
) -> None:
    first = added["sample-retail-001"]
    assert first["trajectory_id"] == "sample-retail-001"
    assert first["experiences_new"] == 1 and first["already_ingested"] is False
    assert first["report"]["records_read"] == 1
    stored = direct_kb.get(experience_of(added, "sample-retail-001"))
    assert stored is not None and "sample-retail-001" in stored.source_ids
    assert [s.action for s in stored.steps][:2] == ["find_user_by_email", "get_order_details"]

    again = client.result("add_trajectory", {"trajectory": TRAJECTORIES["sample-retail-001"]})
    assert again["already_ingested"] is True and again["experiences_new"] == 0
    assert again["experience_ids"] == first["experience_ids"]


def test_search_finds_the_added_experience_and_explains_each_hit(client: McpClient, added: dict[str, Any]) -> None:
    found = client.result("search_experiences", {
        "task": "A customer wants to return wireless earbuds that stopped charging and get a refund",
        "domain": "retail", "k": 3,
    })
    ids = [hit["id"] for hit in found["experiences"]]
    assert experience_of(added, "sample-retail-001") in ids
    assert found["retrieved_ids"] == ids and len(ids) <= 3
    for hit in found["experiences"]:
        assert hit["steps"] and all(step["action"] and "text" in step for step in hit["steps"])
        assert hit["found_by"] and 0 < hit["score"] <= 1
        assert hit["explanation"].startswith("matched on semantic")
    assert all(concept["document"] for concept in found["concepts"])


def test_search_takes_the_steps_executed_so_far(client: McpClient, added: dict[str, Any]) -> None:
    found = client.result("search_experiences", {
        "task": "return an item", "domain": "retail",
        "steps_so_far": [{"action": "find_user_by_email", "arguments": {"email": "a@b.c"}},
                         {"action": "get_order_details", "arguments": {"order_id": "#W1"}}],
    })
    assert found["experiences"]
    assert "steps so far" in found["experiences"][0]["explanation"]


def test_record_outcome_updates_the_counters_and_quality(
    client: McpClient, added: dict[str, Any], direct_kb: KnowledgeBase
) -> None:
    used = experience_of(added, "sample-retail-001")
    shown = experience_of(added, "sample-airline-006")
    before = {s.id: s for s in direct_kb.learning_state([used, shown])}

    report = client.result("record_outcome", {
        "retrieved": [used, shown], "used": [used], "outcome": True, "agent": "agent-mcp", "domain": "retail",
        "step_rewards": [{"experience_id": used, "order": 0, "reward": 1.0}],
        "task": "A customer wants to return a delivered item",
    })
    assert report["used"] == 1 and report["retrieved"] == 2 and report["outcome"] == 1.0
    assert direct_kb.stats().nodes.get("Outcome") == 1, "the outcome is remembered for tasks like this one"

    after = {s.id: s for s in direct_kb.learning_state([used, shown])}
    assert after[used].retrieved == before[used].retrieved + 1
    assert after[used].used == before[used].used + 1
    assert after[used].succeeded == before[used].succeeded + 1
    assert after[used].quality > before[used].quality
    assert (after[shown].retrieved, after[shown].used) == (before[shown].retrieved + 1, before[shown].used)
    assert {s["id"]: s["used"] for s in report["experiences"]}[used] == after[used].used


def test_refine_steps_returns_the_next_step_and_failures_like_the_one_going_wrong_with_their_recovery(
    client: McpClient, added: dict[str, Any]
) -> None:
    found = client.result("refine_steps", {
        "task": "A customer wants to return a delivered item and get a refund", "domain": "retail",
        "steps_taken": [{"action": "find_user_by_email", "arguments": {"email": "someone@example.org"},
                         "error": "UserNotFound: no user with email someone@example.org"}],
    })
    recovered_by = experience_of(added, "sample-retail-002")
    assert any(r["experience_id"] == recovered_by and r["recovery"] and r["step"] == 0 for r in found["recoveries"])
    assert found["next"] and found["next"][0]["next_step"]["action"] == "find_user_by_email"  # the failed step is next


def test_get_experience_returns_it_in_full_without_embeddings(client: McpClient, added: dict[str, Any]) -> None:
    experience_id = experience_of(added, "sample-retail-002")
    outcome = client.call("get_experience", {"id": experience_id})
    assert not outcome.is_error
    details = outcome.structured_content
    assert details["id"] == experience_id and details["domain"] == "retail"
    assert "sample-retail-002" in details["source_ids"] and details["source_count"] >= 1
    assert details["steps"][0]["order"] == 0 and details["failure_modes"]
    assert 0 <= details["utility"] <= 1
    assert "embedding" not in json.dumps(details) and "embedding" not in outcome.content[0].text


# -- bad input -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("get_experience", {"id": "exp-does-not-exist"}, "no experience 'exp-does-not-exist' in namespace"),
    ("search_experiences", {"task": ""}, "task is blank: give the task in words, or steps_so_far"),
    ("search_experiences", {"task": "return an item", "k": 101}, "k: Input should be less than or equal to 100"),
    ("search_experiences", {"task": "return an item", "k": 0}, "greater than or equal to 1"),
    ("add_trajectory", {"trajectory": {"id": "bad id!", "task": "   "}}, "trajectory: id: String should match"),
    ("add_trajectory", {"trajectory": {"id": "t-1", "task": "   "}}, "trajectory: task: must not be blank"),
    ("add_trajectory", {"trajectory": {"id": "t-1", "task": "x", "steps": [{"thought": "no action"}]}},
     "trajectory.steps.0.action"),
    ("record_outcome", {"used": ["exp-does-not-exist"], "outcome": True}, "experience 'exp-does-not-exist': not in"),
    ("record_outcome", {"used": [], "outcome": 1.5}, "outcome"),
    ("refine_steps", {"task": " "}, "task is blank: give the task in words, or steps_taken"),
    ("no_such_tool", {}, "no_such_tool"),
])
def test_bad_input_comes_back_as_a_tool_error_naming_the_problem(
    client: McpClient, added: dict[str, Any], direct_kb: KnowledgeBase, tool: str, arguments: dict[str, Any],
    message: str,
) -> None:
    experiences = direct_kb.count()
    error = client.error(tool, arguments)
    assert message in error and "\n" not in error and "Traceback" not in error  # one line a model can act on
    assert direct_kb.count() == experiences  # nothing partial was written
    assert client.result("get_experience", {"id": experience_of(added, "sample-retail-001")})  # still serving


def test_stdout_carried_nothing_but_protocol(client: McpClient, added: dict[str, Any]) -> None:
    # Runs after the module's other tests in file order: by now the model has loaded, Neo4j connected
    # and the pipeline ran inside the server, all without a stray line on its stdout.
    assert client.stream_faults == []


# -- a failing dependency ------------------------------------------------------------------------------


def test_an_unreachable_neo4j_is_a_tool_error_and_the_next_call_tries_again() -> None:
    settings = Settings(neo4j_uri=f"bolt://127.0.0.1:{free_port()}", connect_timeout_s=2, namespace="unused")
    server = build_server(KnowledgeBaseSource.from_settings(settings))

    async def two_calls() -> list[CallToolResult]:
        async with Client(server) as session:
            return [await session.call_tool("get_experience", {"id": "exp-x"}) for _ in range(2)]

    for outcome in anyio.run(two_calls):
        assert outcome.is_error
        text = outcome.content[0].text  # type: ignore[union-attr]
        assert "Neo4j" in text and "127.0.0.1" in text


# -- strict arguments, one-line errors -----------------------------------------------------------------


class OpenedNothing:
    """A knowledge base source that records whether a call got as far as opening it."""

    def __init__(self, failure: Exception):
        self.opened = 0
        self.failure = failure

    def source(self) -> KnowledgeBaseSource:
        def factory() -> KnowledgeBase:
            self.opened += 1
            raise self.failure

        return KnowledgeBaseSource(factory)


def call_in_process(source: KnowledgeBaseSource, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    """Tool calls through the SDK's in-memory client (the same request handling as over stdio)."""
    server = build_server(source)

    async def run() -> list[CallToolResult]:
        async with Client(server) as session:
            return [await session.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(run)


def error_line(outcome: CallToolResult) -> str:
    assert outcome.is_error
    text = " ".join(block.text for block in outcome.content if block.type == "text")
    assert "\n" not in text and "Traceback" not in text and "errors.pydantic.dev" not in text, text
    return text


@pytest.mark.parametrize(("tool", "arguments", "field"), [
    ("record_outcome", {"used": ["e-1"], "outcome": "yes"}, "outcome"),
    ("record_outcome", {"used": ["e-1"], "outcome": "true"}, "outcome"),
    ("record_outcome", {"used": ["e-1"], "outcome": "1"}, "outcome"),
    ("record_outcome", {"used": ["e-1"], "outcome": "null"}, "outcome"),
    ("record_outcome", {"used": "e-1", "outcome": True}, "used"),
    ("record_outcome", {"retrieved": "null", "used": ["e-1"], "outcome": True}, "retrieved"),
    ("record_outcome", {"used": ["e-1"], "outcome": True, "outcom": True}, "outcom"),
    ("record_outcome", {"used": ["e-1"], "outcome": True,
                        "step_rewards": [{"experience_id": "e-1", "order": "0", "reward": 1}]}, "step_rewards.0.order"),
    ("search_experiences", {"task": "return an item", "k": "10"}, "k"),
    ("search_experiences", {"task": "return an item", "k": True}, "k"),
    ("search_experiences", {"task": "return an item", "k": 3.0}, "k"),
    ("search_experiences", {"task": 5}, "task"),
    ("refine_steps", {"task": "x", "steps_taken": [{"action": "a"}], "k": "2"}, "k"),
    ("get_experience", {"id": ["e-1"]}, "id"),
    ("add_trajectory", {"trajectory": {"id": "t-1", "task": "x", "outcome": {"success": "yes"}}},
     "trajectory.outcome.success"),
])
def test_arguments_are_strict_so_text_is_never_read_as_a_boolean_a_number_or_null(
    tool: str, arguments: dict[str, Any], field: str
) -> None:
    # Lax parsing read "yes", "true" and "1" as a success, "10" as 10, "null" as "not given" and
    # dropped misspelt arguments: each is now refused by name, before the knowledge base is opened.
    source = OpenedNothing(RuntimeError("must not be reached"))
    [outcome] = call_in_process(source.source(), [(tool, arguments)])
    line = error_line(outcome)
    assert line.startswith(f"{tool}: invalid arguments, nothing was done: {field}: "), line
    assert source.opened == 0


def test_a_nan_reward_is_refused_as_not_a_finite_number() -> None:
    # It was refused as "less than or equal to 1", which says nothing of what is wrong with it. (A
    # NaN reaches the tool from a JSON line over stdio; the in-memory client would send null.)
    metadata = contract_tool(SPECS["record_outcome"], lambda arguments: arguments).fn_metadata
    arguments = {"used": ["e-1"], "outcome": True,
                 "step_rewards": [{"experience_id": "e-1", "order": 0, "reward": float("nan")}]}
    with pytest.raises(ValidationError) as refused:
        metadata.validate_arguments(arguments)
    assert argument_problems(refused.value, arguments) == "step_rewards.0.reward: Input should be a finite number"


@pytest.mark.parametrize(("tool", "arguments", "problem"), [
    # Past 64 bits and past a float's range are the same kind of refusal: a tool error naming the field.
    ("add_trajectory", {"trajectory": {"id": "t-1", "task": "x", "steps": [{"action": "a", "arguments": {"n": 2**70}}]}},
     "trajectory.steps.0.arguments.n: 1180591620717411303424 is outside the 64-bit integer range"),
    ("add_trajectory", {"trajectory": {"id": "t-1", "task": "x", "steps": [{"action": "a", "reward": 1e308}]}},
     "trajectory: steps.0.reward: Input should be less than or equal to 1"),
])
def test_a_number_out_of_range_is_a_tool_error_saying_what_is_wrong_with_it(
    tool: str, arguments: dict[str, Any], problem: str
) -> None:
    source = OpenedNothing(RuntimeError("must not be reached"))
    [outcome] = call_in_process(source.source(), [(tool, arguments)])
    line = error_line(outcome)
    assert problem in line, line
    assert source.opened == 0


def test_a_list_sent_as_a_json_string_is_read_as_the_list_and_text_stays_text() -> None:
    # Some clients send lists and objects as JSON strings: kept. A text field keeps its text,
    # even one that reads as JSON ("null" is a domain name here, not a missing domain).
    metadata = contract_tool(SPECS["record_outcome"], lambda arguments: arguments).fn_metadata
    validated = metadata.validate_arguments({"used": '["a"]', "retrieved": '["a", "b"]', "outcome": True,
                                             "domain": "null"})["arguments"]
    assert (validated.used, validated.retrieved, validated.domain) == (["a"], ["a", "b"], "null")
    search = contract_tool(SPECS["search_experiences"], lambda arguments: arguments).fn_metadata
    assert search.validate_arguments({"task": '["x"]'})["arguments"].task == '["x"]'


def test_the_server_names_kbgraphs_version_and_describes_tools_without_source_indentation() -> None:
    server = build_server(KnowledgeBaseSource(lambda: KnowledgeBase.__new__(KnowledgeBase)))

    async def listed() -> tuple[str, list[Tool]]:
        async with Client(server) as session:
            return session.server_info.version, (await session.list_tools()).tools

    version, tools = anyio.run(listed)
    assert version == kbgraph_version() != ""
    for tool in tools:
        assert tool.description == SPECS[tool.name].description
        assert all(line == line.lstrip() for line in (tool.description or "").splitlines()), tool.description


def test_a_bug_in_a_tool_is_one_line_without_its_text_and_the_server_keeps_serving() -> None:
    source = OpenedNothing(RuntimeError("internal detail\nTraceback (most recent call last): …"))
    crashed, refused, crashed_again = call_in_process(source.source(), [
        ("get_experience", {"id": "e-1"}),
        ("search_experiences", {"task": "x", "k": "3"}),
        ("get_experience", {"id": "e-1"}),
    ])
    line = error_line(crashed)
    assert line.startswith("get_experience failed with an internal error (RuntimeError)")
    assert "internal detail" not in line and "keeps serving" in line
    assert error_line(refused).startswith("search_experiences: invalid arguments")
    assert error_line(crashed_again) == line and source.opened == 2


def test_a_multi_line_error_becomes_one_line_headline_then_problems() -> None:
    assert one_line("invalid feedback, nothing was written:\n  feedback: a: x\n  feedback: b: y") == (
        "invalid feedback, nothing was written: feedback: a: x; feedback: b: y")


@pytest.mark.parametrize(("tool", "arguments", "field", "limit"), [
    ("search_experiences", {"task": "return an item", "agent": "a" * 201}, "agent", 200),
    ("search_experiences", {"task": "return an item", "domain": "d" * 201}, "domain", 200),
    ("search_experiences", {"task": "x", "steps_so_far": [{"action": "a" * 201}]}, "steps_so_far.0.action", 200),
    ("search_experiences", {"task": "x", "steps_so_far": [{"action": "a", "error": "e" * 8_001}]},
     "steps_so_far.0.error", 8_000),
    ("refine_steps", {"task": "x", "agent": "a" * 201}, "agent", 200),
    ("refine_steps", {"task": "x", "steps_taken": [{"action": "a", "error": "e" * 10_001}]},
     "steps_taken.0.error", 10_000),
    ("refine_steps", {"task": "x", "steps_taken": [{"action": "a", "issue_type": "i" * 201}]},
     "steps_taken.0.issue_type", 200),
    ("record_outcome", {"used": [], "outcome": True, "task": "t" * 8_001}, "task", 8_000),
    ("record_outcome", {"used": [], "outcome": True, "agent": "a" * 201}, "agent", 200),
    ("record_outcome", {"used": [], "outcome": True, "domain": "d" * 201}, "domain", 200),
    ("record_outcome", {"used": ["e" * 129], "outcome": True}, "used.0", 128),
    ("record_outcome", {"used": [], "retrieved": ["e-1"] * 1_001, "outcome": True}, "retrieved", 1_000),
    ("record_outcome", {"used": ["e-1"], "outcome": True,
                        "step_rewards": [{"experience_id": "e" * 129, "order": 0, "reward": 1.0}]},
     "step_rewards.0.experience_id", 128),
])
def test_free_text_arguments_are_as_long_as_the_python_api_takes_and_refused_by_field_past_that(
    tool: str, arguments: dict[str, Any], field: str, limit: int
) -> None:
    # An agent name of a million characters reached the knowledge base (and its error named no
    # field): each argument now has the Python API's bound, and past it the call is refused by name.
    source = OpenedNothing(RuntimeError("must not be reached"))
    [outcome] = call_in_process(source.source(), [(tool, arguments)])
    line = error_line(outcome)
    assert line.startswith(f"{tool}: invalid arguments, nothing was done: {field}: "), line
    assert f"at most {limit:,}".replace(",", "") in line.replace(",", "") or str(limit) in line, line
    assert source.opened == 0
