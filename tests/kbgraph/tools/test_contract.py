"""The tools' contract (:data:`kbgraph.tools.TOOLS`), held to by every way in.

The same calls go through the MCP server (in process, through the SDK's own client), the HTTP API
(FastAPI's TestClient over the real application) and the LangChain tools, all over one namespace
of the session's real Neo4j with the real MiniLM, and are compared: the tools' names, their
arguments (the JSON schema each way in publishes, references inlined), their answers, and the
problems named when a call is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastapi.testclient import TestClient
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from mcp import Client

from kbgraph.core.errors import InvalidInputError, Problem
from kbgraph.http_api import create_app
from kbgraph.integrations.langchain import kbgraph_tools
from kbgraph.kb import KnowledgeBase
from kbgraph.mcp_server import build_server
from kbgraph.tools import (SEARCH_OPTIONS, SPECS, TOOL_NAMES, TOOLS, AddTrajectoryArgs, kbgraph_version, run_tool)
from kbgraph.tools._contract import _in_callers_words
from tests.one_utc_day import on_one_utc_day

pytestmark = [pytest.mark.neo4j, pytest.mark.slow, pytest.mark.timeout(600)]

SAMPLES = Path(__file__).resolve().parents[3] / "kbgraph" / "samples" / "trajectories.jsonl"
TRAJECTORIES = {record["id"]: record for record in map(json.loads, SAMPLES.read_text().splitlines())}
RETURN_TASK = "A customer wants to return wireless earbuds that stopped charging and get a refund"
# HTTP's routes for the five tools: (method, path); get_experience's id is in the path.
ROUTES = {"search_experiences": ("POST", "/v1/search"), "refine_steps": ("POST", "/v1/refine"),
          "record_outcome": ("POST", "/v1/feedback"), "add_trajectory": ("POST", "/v1/trajectory"),
          "get_experience": ("GET", "/v1/experiences/{id}")}


def inlined(schema: Any, definitions: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` replaced by what it names, without titles (each way in names
    its models its own way) and without ``"default": null`` (FastAPI leaves it out; ``required``
    says the same): what is left is what a model reads."""
    if isinstance(schema, list):
        return [inlined(item, definitions) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:  # what the reference names, with what stands beside it (the field's description)
        named = inlined(definitions[schema["$ref"].rsplit("/", 1)[-1]], definitions)
        return {**named, **inlined({key: value for key, value in schema.items() if key != "$ref"}, definitions)}
    return {key: inlined(value, definitions) for key, value in schema.items()
            if key not in ("title", "$defs") and not (key == "default" and value is None)}


def plain(schema: dict[str, Any]) -> dict[str, Any]:
    return dict(inlined(schema, schema.get("$defs", {})))


@dataclass
class Answer:
    """A call's outcome as a way in gives it: the answer, or the problems of a refusal."""

    answer: dict[str, Any] | None = None
    problems: str | None = None


def problems_of(tool: str, message: str) -> str:
    """A refusal's problems, without the way in's own headline (MCP and LangChain start with the
    tool's name; HTTP says where the request went wrong)."""
    message = message.removeprefix(f"{tool}: ")
    return message.replace("invalid request body, nothing was done", "invalid arguments, nothing was done")


class McpWay:
    name = "mcp"

    def __init__(self, portal: BlockingPortal, client: Client):
        self.portal, self.client = portal, client

    def schemas(self) -> dict[str, dict[str, Any]]:
        return {tool.name: plain(tool.input_schema) for tool in self.portal.call(self.client.list_tools).tools}

    def descriptions(self) -> dict[str, str]:
        return {tool.name: tool.description or "" for tool in self.portal.call(self.client.list_tools).tools}

    def call(self, tool: str, arguments: dict[str, Any]) -> Answer:
        async def call() -> Any:
            return await self.client.call_tool(tool, arguments)

        result = self.portal.call(call)
        if result.is_error:
            return Answer(problems=problems_of(tool, " ".join(b.text for b in result.content if b.type == "text")))
        return Answer(answer=result.structured_content)


class HttpWay:
    name = "http"

    def __init__(self, client: TestClient):
        self.client = client

    def schemas(self) -> dict[str, dict[str, Any]]:
        openapi = self.client.get("/openapi.json").json()
        definitions = openapi["components"]["schemas"]
        found: dict[str, dict[str, Any]] = {}
        for tool, (method, path) in ROUTES.items():
            operation = openapi["paths"][path][method.lower()]
            assert operation["operationId"] == tool
            if method == "GET":  # the arguments are the path's parameters
                parameters = [p for p in operation["parameters"] if p["in"] == "path"]
                found[tool] = {"type": "object", "additionalProperties": False, "required": [p["name"] for p in parameters],
                               "properties": {p["name"]: inlined(p["schema"], definitions) for p in parameters}}
            else:
                found[tool] = inlined(operation["requestBody"]["content"]["application/json"]["schema"], definitions)
        return found

    def call(self, tool: str, arguments: dict[str, Any]) -> Answer:
        method, path = ROUTES[tool]
        response = (self.client.get(path.format(**arguments)) if method == "GET"
                    else self.client.post(path, json=arguments))
        if response.status_code != 200:
            return Answer(problems=problems_of(tool, response.json()["detail"]))
        return Answer(answer=response.json())


class LangChainWay:
    name = "langchain"

    def __init__(self, tools: list[BaseTool]):
        self.tools = {tool.name: tool for tool in tools}

    def schemas(self) -> dict[str, dict[str, Any]]:
        # What LangChain sends a model (bind_tools), not the class behind it.
        return {name: plain(convert_to_openai_tool(tool)["function"]["parameters"]) for name, tool in self.tools.items()}

    def call(self, tool: str, arguments: dict[str, Any]) -> Answer:
        message = self.tools[tool].invoke({"type": "tool_call", "id": "call-1", "name": tool, "args": arguments})
        if message.status == "error":
            return Answer(problems=problems_of(tool, str(message.content)))
        return Answer(answer=message.artifact)


Way = McpWay | HttpWay | LangChainWay


@pytest.fixture(scope="module")
def contract_kb(driver: Any, embedder: Any, neo4j_target: Any) -> Iterator[KnowledgeBase]:
    knowledge_base = KnowledgeBase(driver, embedder, namespace="test-contract", database=neo4j_target.database)
    knowledge_base.clear()
    for tid in ("sample-retail-001", "sample-retail-002", "sample-airline-006"):
        run_tool(knowledge_base, "add_trajectory", AddTrajectoryArgs.model_validate({"trajectory": TRAJECTORIES[tid]}))
    yield knowledge_base
    knowledge_base.clear()


@pytest.fixture(scope="module")
def ways(contract_kb: KnowledgeBase) -> Iterator[list[Way]]:
    with start_blocking_portal() as portal, TestClient(create_app(contract_kb, None), base_url="http://localhost") as http:
        with portal.wrap_async_context_manager(Client(build_server(contract_kb))) as mcp:
            yield [McpWay(portal, mcp), HttpWay(http), LangChainWay(kbgraph_tools(contract_kb))]


def same_everywhere(ways: list[Way], tool: str, arguments: dict[str, Any]) -> Answer:
    """The one outcome every way in gives to this call (the calls must not change what they read)."""
    # Exactly: utility decays by calendar day, so ways asked seconds apart on one day report the same one.
    outcomes = on_one_utc_day(lambda: {way.name: way.call(tool, arguments) for way in ways})
    first = outcomes["mcp"]
    for name, outcome in outcomes.items():
        assert outcome == first, f"{tool} {arguments}: {name} answers differently from mcp"
    return first


def without_timings(answer: dict[str, Any]) -> dict[str, Any]:
    report = {key: value for key, value in answer["report"].items()
              if "second" not in key and key != "peak_memory_mb"}
    return {**answer, "report": report}


# -- names and arguments ----------------------------------------------------------------------------


def test_every_way_in_offers_the_contracts_tools_by_the_same_names(ways: list[Way]) -> None:
    for way in ways:
        assert tuple(way.schemas()) == TOOL_NAMES, way.name
    assert TOOL_NAMES == ("search_experiences", "refine_steps", "record_outcome", "add_trajectory", "get_experience")


def test_every_way_in_publishes_the_contracts_arguments(ways: list[Way]) -> None:
    for spec in TOOLS:
        expected = plain(spec.arguments.model_json_schema())
        for way in ways:
            published = dict(way.schemas()[spec.name])
            if way.name == "http" and spec.name == "search_experiences":  # HTTP adds kb.search's options
                extras = set(published["properties"]) - set(expected["properties"])
                assert extras == set(SEARCH_OPTIONS)
                published["properties"] = {k: v for k, v in published["properties"].items() if k not in extras}
            if way.name == "http" and spec.name == "get_experience":  # the id is a path parameter
                assert published["required"] == expected["required"] == ["id"]
                continue
            assert published.get("required") == expected.get("required"), f"{way.name} {spec.name}"
            for field, schema in expected["properties"].items():
                assert published["properties"].get(field) == schema, f"{way.name} {spec.name}.{field}"
            assert set(published["properties"]) == set(expected["properties"]), f"{way.name} {spec.name}"


def test_mcp_and_langchain_describe_each_tool_in_the_contracts_words_without_source_indentation(
    ways: list[Way],
) -> None:
    mcp, _, langchain = ways
    assert isinstance(mcp, McpWay) and isinstance(langchain, LangChainWay)
    for name, description in mcp.descriptions().items():
        assert description == SPECS[name].description == langchain.tools[name].description
        assert "\n " not in description and not description.startswith(" ")


def test_mcp_names_kbgraphs_version() -> None:
    info = build_server(KnowledgeBase.__new__(KnowledgeBase))._lowlevel_server.version
    assert info == kbgraph_version() and info.count(".") >= 1


# -- answers ----------------------------------------------------------------------------------------


def test_a_search_is_answered_alike_everywhere(ways: list[Way]) -> None:
    found = same_everywhere(ways, "search_experiences", {"task": RETURN_TASK, "domain": "retail", "k": 3})
    assert found.answer is not None and found.answer["experiences"]
    assert found.answer["retrieved_ids"] == [hit["id"] for hit in found.answer["experiences"]]


def test_refine_steps_is_answered_alike_everywhere(ways: list[Way]) -> None:
    helped = same_everywhere(ways, "refine_steps", {"task": RETURN_TASK, "domain": "retail", "steps_taken": [
        {"action": "find_user_by_email", "arguments": {"email": "someone@example.org"},
         "error": "Error: user not found"}]})
    assert helped.answer is not None and helped.answer["next"] and helped.answer["recoveries"]
    assert {r["step"] for r in helped.answer["recoveries"]} == {0}


def test_an_experience_is_read_alike_everywhere(ways: list[Way], contract_kb: KnowledgeBase) -> None:
    [experience_id] = [row["id"] for row in contract_kb.gateway.read(
        "experiences_by_source", kb=contract_kb.namespace, source_id="sample-retail-002")]
    read = same_everywhere(ways, "get_experience", {"id": experience_id})
    assert read.answer is not None and read.answer["id"] == experience_id and "pg_embedding" not in read.answer


def test_adding_a_run_again_is_answered_alike_everywhere_with_the_reports_name_for_new_experiences(
    ways: list[Way],
) -> None:
    call = {"trajectory": TRAJECTORIES["sample-retail-002"]}
    answers = [way.call("add_trajectory", call).answer for way in ways]
    assert all(answer is not None for answer in answers)
    first = without_timings(answers[0] or {})
    assert all(without_timings(answer or {}) == first for answer in answers)
    assert first["already_ingested"] is True and first["experiences_new"] == first["report"]["experiences_new"] == 0
    assert "new_experiences" not in first


def test_recording_an_outcome_answers_the_same_report_everywhere(ways: list[Way]) -> None:
    # Each call changes the counters: the reports are compared by what they hold, not their numbers.
    found = ways[0].call("search_experiences", {"task": RETURN_TASK, "k": 1}).answer
    assert found is not None
    call = {"used": found["retrieved_ids"], "outcome": True, "task": RETURN_TASK}
    reports = [way.call("record_outcome", call).answer for way in ways]
    assert all(report is not None for report in reports)
    assert all(set(report or {}) == set(reports[0] or {}) for report in reports)


# -- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "arguments", "problems"), [
    ("search_experiences", {"task": "   "},
     "invalid arguments, nothing was done: task is blank: give the task in words, or steps_so_far"),
    ("search_experiences", {"task": "x", "k": 101},
     "invalid arguments, nothing was done: k: Input should be less than or equal to 100"),
    ("refine_steps", {"task": "x", "steps_taken": [{"action": "a"}], "k": 1000},
     "invalid arguments, nothing was done: k: Input should be less than or equal to 100"),
    ("refine_steps", {"problematic_steps": [{"action": "a", "error": "e"}]},
     "invalid arguments, nothing was done: problematic_steps is now steps_taken (with task): every step taken, "
     "each failed one with its error"),
    ("refine_steps", {"task": "", "steps_taken": []},
     "invalid arguments, nothing was done: task is blank: give the task in words, or steps_taken"),
    ("record_outcome", {"used": [], "success": True},
     "invalid arguments, nothing was done: success is now outcome (true, false or a score in [0, 1])"),
    ("record_outcome", {"used": [], "outcome": "yes"},
     "invalid arguments, nothing was done: outcome: Input should be a valid boolean, or a valid number, or a valid "
     "integer (got a string)"),
    ("record_outcome", {"outcome": True}, "invalid arguments, nothing was done: used: Field required"),
    ("get_experience", {"id": "exp-not-there"}, "no experience 'exp-not-there' in namespace 'test-contract'"),
])
def test_a_refused_call_names_the_callers_own_fields_alike_everywhere(
    ways: list[Way], tool: str, arguments: dict[str, Any], problems: str,
) -> None:
    assert same_everywhere(ways, tool, arguments) == Answer(problems=problems)


def test_a_refusal_from_deeper_down_names_the_callers_fields_too(ways: list[Way]) -> None:
    refused = same_everywhere(ways, "search_experiences", {"task": "x", "domain": ""})
    assert refused.problems is not None and refused.problems.startswith("invalid arguments, nothing was done: domain: ")
    assert "query" not in refused.problems and "(record)" not in refused.problems


def test_a_problem_of_the_query_is_said_by_the_callers_field_from_its_parts() -> None:
    said = _in_callers_words(InvalidInputError([
        Problem("query", "Value error, give a task or a problem", "(record)"), Problem("query", "Field required", "task"),
        Problem("query", "too long"), Problem("weights", "Value error, must be at most 1", "alpha"),
        "query vector: contains NaN or infinite values"]))
    assert said.problems == ["give a task or a problem", "task: Field required", "too long",
                             "weights: alpha: must be at most 1", "query vector: contains NaN or infinite values"]
    assert str(said).startswith("invalid arguments, nothing was done:")
