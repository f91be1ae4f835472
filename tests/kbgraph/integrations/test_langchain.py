"""kbgraph.integrations.langchain: the retriever and the four tools, against the real Neo4j and the
real MiniLM, with the real langchain-core and LangGraph — the tools run in a LangGraph graph whose
model is scripted (no LLM), and what they changed is read back from Neo4j.

The read-only tests share one namespace holding twelve real GPT-4o airline runs of three tasks
(``../shared/data/real_runs``): a cancellation that always worked, a flight change whose update
failed with "payment method not found" and was recovered after looking up the user, and a
cancel-and-upgrade with the same error. Tests that write get a fresh namespace (the ``kb`` fixture).
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import neo4j
import pytest
from langchain_core.documents import Document
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import ValidationError

from kbgraph import AsyncKnowledgeBase
from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.integrations.langchain import TOOL_NAMES, KbgraphRetriever, experience_plan, kbgraph_tools
from kbgraph.kb import KnowledgeBase
from tests.conftest import REAL_RUNS, Neo4jTarget

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

DOCS = Path(__file__).resolve().parents[3] / "docs" / "frameworks-langchain.md"
RUNS = [json.loads(line) for line in (REAL_RUNS / "airline_gpt4o.jsonl").read_text().splitlines()]
TASKS = ("gpt4o-airline-12", "gpt4o-airline-20", "gpt4o-airline-26")
CANCEL, CHANGE, UPGRADE = ([r for r in RUNS if r["id"].rsplit("-t", 1)[0] == task] for task in TASKS)
CHANGE_TASK = CHANGE[0]["task"]
CANCEL_TASK = CANCEL[0]["task"]
QUERIES = (CHANGE_TASK, CANCEL_TASK, UPGRADE[0]["task"], "cancel my flight and refund me", "upgrade to business class")
# What the agent of gpt4o-airline-20-t1 did before its update failed.
STEPS_BEFORE_THE_FAILURE = [
    {"action": "get_reservation_details", "arguments": {"reservation_id": "1N99U6"}},
    {"action": "search_direct_flight", "arguments": {"origin": "LAS", "destination": "IAH", "date": "2024-05-19"}},
]
FAILED_UPDATE = {"action": "update_reservation_flights",
                 "arguments": {"reservation_id": "1N99U6", "cabin": "economy", "payment_id": "credit_card_1"},
                 "error": "Error: payment method not found"}
# Searches running side by side can differ in a score's sixth decimal (1.03768 and 1.037679: the
# same with kb.search from threads), never in what they return.
SCORE_JITTER = 1e-5
NEW_RUN = {"id": "lc-test-run-1", "domain": "airline", "source": "langchain test",
           "task": "Add a checked bag to reservation ZX81QF for your trip to Denver",
           "steps": [{"action": "get_reservation_details", "arguments": {"reservation_id": "ZX81QF"}},
                     {"action": "update_reservation_baggages",
                      "arguments": {"reservation_id": "ZX81QF", "total_baggages": 2, "payment_id": "gift_card_1"}}],
           "outcome": {"success": True}}


@pytest.fixture(scope="module")
def airline_kb(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> Iterator[KnowledgeBase]:
    """A namespace of its own with the twelve runs, shared by the tests that only read."""
    knowledge_base = KnowledgeBase(driver, embedder, namespace=f"test-lc-{uuid.uuid4().hex[:10]}",
                                   database=neo4j_target.database)
    knowledge_base.add_trajectories([*CANCEL, *CHANGE, *UPGRADE])
    yield knowledge_base
    knowledge_base.clear()


def tools_of(kb: KnowledgeBase, agent: str | None = None) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in kbgraph_tools(kb, agent=agent)}


def call(tool: BaseTool, args: dict[str, Any], call_id: str = "call-1") -> ToolMessage:
    """The tool invoked as a model's tool call, as ToolNode invokes it."""
    message = tool.invoke({"type": "tool_call", "name": tool.name, "id": call_id, "args": args})
    assert isinstance(message, ToolMessage)
    return message


def namespace_census(kb: KnowledgeBase) -> tuple[Any, ...]:
    """Everything a write would change: counts of nodes and relationships, and every counter."""
    stats = kb.stats()
    ids = [row["id"] for row in kb.gateway.read("experience_ids_page", kb=kb.namespace, after="", limit=10_000)]
    states = sorted((s.id, s.retrieved, s.used, s.succeeded, s.quality) for s in kb.learning_state(ids))
    return stats.experiences, stats.nodes, stats.relationships, states


# -- the retriever -----------------------------------------------------------------------------------


def test_the_retriever_returns_kb_search_s_experiences_in_its_order(airline_kb: KnowledgeBase) -> None:
    retriever = KbgraphRetriever(kb=airline_kb, k=4, domain="airline")
    assert isinstance(retriever, BaseRetriever)
    for query in QUERIES:
        expected = airline_kb.search(query, k=4, domain="airline")
        documents = retriever.invoke(query)
        assert [d.id for d in documents] == expected.ids(), query
        assert [d.metadata["score"] for d in documents] == pytest.approx([h.score for h in expected.hits],
                                                                          abs=SCORE_JITTER)
        assert len(documents) == 4


def test_a_document_is_the_experience_as_a_plan_with_ids_scores_and_evidence_as_metadata(
    airline_kb: KnowledgeBase,
) -> None:
    [hit] = airline_kb.search(CHANGE_TASK, k=1, domain="airline").hits
    [document] = KbgraphRetriever(kb=airline_kb, k=1, domain="airline").invoke(CHANGE_TASK)
    exp = hit.experience
    lines = document.page_content.splitlines()
    assert lines[0] == f"Problem: {exp.problem}" and lines[1] == f"Goal: {exp.goal}" and lines[2] == "Steps:"
    numbered = lines[3:3 + len(exp.steps)]
    assert [line.split(" ")[:2] for line in numbered] == [
        [f"{n}.", step.action] for n, step in enumerate(exp.steps, start=1)]
    assert lines[-1] == f"Evidence: worked in {hit.runs_succeeded} of {hit.runs} run{'s' if hit.runs != 1 else ''}."
    assert document.page_content == experience_plan(hit)
    meta = document.metadata
    assert (meta["id"], meta["rank"], meta["kind"], meta["domain"]) == (hit.id, 1, exp.kind, "airline")
    assert meta["score"] == pytest.approx(hit.score, abs=SCORE_JITTER)
    # The numbers within the decay of utility between the two searches; the asks (the intent match's
    # explanation: text, operation, cosine) exactly.
    expected, carried = hit.breakdown.model_dump(mode="json"), dict(meta["score_breakdown"])
    assert carried.pop("asks") == expected.pop("asks")
    assert carried == pytest.approx(expected, abs=SCORE_JITTER)
    assert set(meta["score_breakdown"]) >= {"semantic", "lexical", "structural", "trans", "success", "utility", "final"}
    assert meta["explanation"].startswith("matched on semantic")
    assert f"final {hit.breakdown.final:.2f}" in meta["explanation"]
    assert meta["found_by"] == hit.found_by and meta["found_by"]
    assert (meta["success_rate"], meta["runs"], meta["runs_succeeded"]) == (
        exp.success_rate, hit.runs, hit.runs_succeeded)
    assert meta["problem"] == exp.problem and meta["goal"] == exp.goal
    json.dumps(meta)  # metadata travels: it must be plain JSON


def test_a_plan_lists_the_pitfalls_at_their_steps_with_their_recoveries(airline_kb: KnowledgeBase) -> None:
    documents = KbgraphRetriever(kb=airline_kb, k=10, domain="airline").invoke(CHANGE_TASK)
    with_pitfalls = [d for d in documents if "\nPitfalls:\n" in d.page_content]
    assert with_pitfalls, "the change runs that failed at the update were recovered: their plans warn about it"
    plan = with_pitfalls[0].page_content
    pitfalls = plan.split("\nPitfalls:\n")[1].splitlines()
    warning = next(line for line in pitfalls if "payment method not found" in line)
    where = re.match(r"- at step (\d+) \(update_reservation_flights\): ", warning)
    assert where is not None, warning
    step = int(where.group(1))
    assert f"\n{step}. update_reservation_flights" in plan, "the pitfall names the step of the plan it happens at"
    assert " — recovery: retried update reservation flights" in warning


def test_the_retriever_passes_its_options_to_the_search(airline_kb: KnowledgeBase) -> None:
    filters = {"kinds": ["concrete"], "min_success": 1.0}
    documents = KbgraphRetriever(kb=airline_kb, k=5, filters=filters).invoke("cancel my flight and refund me")
    expected = airline_kb.search("cancel my flight and refund me", k=5, filters=filters)
    assert [d.id for d in documents] == expected.ids() and documents
    assert all(d.metadata["kind"] == "concrete" and d.metadata["success_rate"] == 1.0 for d in documents)


def test_bad_retriever_options_are_refused_when_it_is_built_naming_the_field(airline_kb: KnowledgeBase) -> None:
    with pytest.raises(ValidationError, match=r"filters\.min_success"):
        KbgraphRetriever(kb=airline_kb, filters={"min_success": 2})
    with pytest.raises(ValidationError, match=r"k\n  Input should be less than or equal to 100"):
        KbgraphRetriever(kb=airline_kb, k=101)
    with pytest.raises(ValidationError, match=r"\bk\b"):
        KbgraphRetriever(kb=airline_kb, k=0)
    with pytest.raises(InvalidInputError, match="nothing to search for"):
        KbgraphRetriever(kb=airline_kb).invoke("   ")


def test_the_async_retriever_gives_the_sync_documents_and_runs_searches_side_by_side(airline_kb: KnowledgeBase) -> None:
    retriever = KbgraphRetriever(kb=airline_kb, k=3, domain="airline")

    async def all_at_once() -> list[list[Document]]:
        return list(await asyncio.gather(*(retriever.ainvoke(query) for query in QUERIES)))

    for query, documents in zip(QUERIES, asyncio.run(all_at_once()), strict=True):
        expected = retriever.invoke(query)
        assert [(d.id, d.page_content) for d in documents] == [(d.id, d.page_content) for d in expected]
        assert [d.metadata["score"] for d in documents] == pytest.approx(
            [d.metadata["score"] for d in expected], abs=SCORE_JITTER)


# -- the tools, invoked directly ---------------------------------------------------------------------


def test_the_five_tools_have_typed_schemas_a_model_can_fill_in(airline_kb: KnowledgeBase) -> None:
    tools = kbgraph_tools(airline_kb)
    assert tuple(t.name for t in tools) == TOOL_NAMES
    for tool in tools:
        assert len(tool.description) > 100
        schema = convert_to_openai_tool(tool)["function"]
        assert schema["name"] == tool.name and schema["parameters"]["type"] == "object"
        for name, prop in schema["parameters"]["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    required = {t.name: set(convert_to_openai_tool(t)["function"]["parameters"].get("required", [])) for t in tools}
    assert required == {"search_experiences": {"task"}, "refine_steps": {"task"},
                        "record_outcome": {"used", "outcome"}, "add_trajectory": {"trajectory"},
                        "get_experience": {"id"}}


def test_search_experiences_answers_json_for_the_model_and_a_dict_for_code(airline_kb: KnowledgeBase) -> None:
    tool = tools_of(airline_kb)["search_experiences"]
    expected = airline_kb.search(CANCEL_TASK, domain="airline", k=3)
    message = call(tool, {"task": CANCEL_TASK, "domain": "airline", "k": 3})
    assert message.status == "success"
    content = json.loads(str(message.content))
    assert content == message.artifact
    assert content["retrieved_ids"] == [e["id"] for e in content["experiences"]] == expected.ids()
    top = content["experiences"][0]
    assert [s["action"] for s in top["steps"]] == [s.action for s in expected.hits[0].experience.steps]
    assert top["explanation"].startswith("matched on") and top["domain"] == "airline"
    assert json.loads(tool.invoke({"task": CANCEL_TASK, "domain": "airline", "k": 3})) == content, \
        "invoked with plain arguments, it returns the JSON text"


def test_the_tools_answer_the_same_from_async_code(airline_kb: KnowledgeBase) -> None:
    search = tools_of(airline_kb)["search_experiences"]
    args = {"task": CHANGE_TASK, "domain": "airline", "k": 3}

    async def twice() -> list[Any]:
        return list(await asyncio.gather(search.ainvoke(args), search.ainvoke(args)))

    assert asyncio.run(twice()) == [search.invoke(args)] * 2


def test_over_an_async_knowledge_base_the_tools_are_awaited_and_answer_as_over_a_sync_one(
    airline_kb: KnowledgeBase, neo4j_target: Neo4jTarget, embedder: CachedEmbedder,
) -> None:
    args = {"task": CHANGE_TASK, "domain": "airline", "k": 3}
    expected = tools_of(airline_kb)["search_experiences"].invoke(args)

    async def over_async() -> tuple[list[Any], str]:
        driver = neo4j.AsyncGraphDatabase.driver(neo4j_target.uri, auth=(neo4j_target.username, neo4j_target.password))
        async with await AsyncKnowledgeBase.connect(driver, embedder, namespace=airline_kb.namespace,
                                                    database=neo4j_target.database, owns_driver=True) as akb:
            tools = {tool.name: tool for tool in kbgraph_tools(akb)}
            answers = await asyncio.gather(*(tools["search_experiences"].ainvoke(args) for _ in range(3)))
            refused = await tools["record_outcome"].ainvoke({"type": "tool_call", "id": "c1", "name": "record_outcome",
                                                             "args": {"used": ["exp_missing"], "outcome": True}})
            with pytest.raises(TypeError, match="call it with ainvoke"):
                tools["search_experiences"].invoke(args)
            return list(answers), str(refused.content)

    answers, refused = asyncio.run(over_async())
    assert answers == [expected] * 3
    assert refused == (f"record_outcome: invalid input, nothing was written: feedback: experience 'exp_missing': "
                       f"not in namespace '{airline_kb.namespace}'")


def test_refine_steps_gives_the_next_step_of_each_plan_and_its_pitfalls(airline_kb: KnowledgeBase) -> None:
    tool = tools_of(airline_kb)["refine_steps"]
    result = call(tool, {"task": CHANGE_TASK, "domain": "airline", "steps_taken": STEPS_BEFORE_THE_FAILURE}).artifact
    top = result["next"][0]
    assert top["problem"].startswith("You want to change your upcoming one-stop flight")
    assert top["steps_matched"] == 2
    assert top["next_step"]["action"] == "update_reservation_flights"
    warning = next(p for p in top["pitfalls"] if "payment method not found" in p["description"])
    assert "get user details" in warning["recovery"] and "the run then succeeded" in warning["recovery"], \
        "the update failed in other runs found: the warning comes with the recovery that worked"
    assert warning["step_order"] == top["next_step"]["order"]
    assert result["retrieved_ids"] == [way["experience_id"] for way in result["next"]]
    assert result["recoveries"] == [], "no step failed"


def test_refine_steps_answers_a_failed_step_with_past_failures_like_it_and_their_fixes(airline_kb: KnowledgeBase) -> None:
    tool = tools_of(airline_kb)["refine_steps"]
    steps = [*STEPS_BEFORE_THE_FAILURE, FAILED_UPDATE]
    result = call(tool, {"task": CHANGE_TASK, "domain": "airline", "steps_taken": steps}).artifact
    assert result["next"][0]["next_step"]["action"] == "update_reservation_flights", \
        "a failed step is not done: the plan still has it next"
    best = result["recoveries"][0]
    assert (best["step"], best["action"]) == (2, "update_reservation_flights")
    assert "payment method not found" in best["description"]
    assert "get user details" in best["recovery"], "the fix that worked: look the user's payment methods up"
    assert best["evidence"].startswith("after this error, ") and " reached their goal" in best["evidence"]
    assert best["evidence"].endswith("this failure seen 4 times in 2 tasks")


def test_record_outcome_records_the_feedback_in_neo4j(kb: KnowledgeBase) -> None:
    kb.add_trajectories(CANCEL)
    shown = kb.search(CANCEL_TASK, k=3).ids()
    tool = tools_of(kb, agent="agent-lc")["record_outcome"]
    report = call(tool, {"used": shown[:1], "retrieved": shown, "outcome": True, "task": CANCEL_TASK}).artifact
    assert (report["retrieved"], report["used"], report["outcome"], report["agent"]) == (len(shown), 1, 1.0, "agent-lc")
    used = kb.learning_state(shown[:1])[0]
    assert (used.retrieved, used.used, used.succeeded) == (1, 1, 1)
    assert [(s.used, s.retrieved) for s in kb.learning_state(shown[1:])] == [(0, 1)] * (len(shown) - 1)
    abilities = {(cell.agent, cell.domain): cell for cell in kb.ability_matrix().cells}
    assert abilities[("agent-lc", "airline")].successes == 1


def test_add_trajectory_ingests_the_run_and_search_finds_it(kb: KnowledgeBase) -> None:
    tool = tools_of(kb)["add_trajectory"]
    result = call(tool, {"trajectory": NEW_RUN}).artifact
    assert result["trajectory_id"] == NEW_RUN["id"] and not result["already_ingested"]
    [experience_id] = result["experience_ids"]
    assert kb.search("add a checked bag to my reservation", k=1).ids() == [experience_id]
    again = call(tool, {"trajectory": NEW_RUN}).artifact
    assert again["already_ingested"] and again["experience_ids"] == [experience_id] and kb.count() == 1


@pytest.mark.parametrize(("tool_name", "args", "field", "reason"), [
    ("search_experiences", {"task": "cancel", "k": 0}, "k", "greater than or equal to 1"),
    ("search_experiences", {"task": 42}, "task", "valid string (got an integer)"),
    ("refine_steps", {"task": "x", "steps_taken": [{"action": "a", "error": 7}]}, "steps_taken.0.error",
     "valid string (got an integer)"),
    ("refine_steps", {"steps_taken": []}, "task", "Field required"),
    ("record_outcome", {"used": ["exp_1"], "outcome": "yes"}, "outcome", "valid boolean, or a valid number, or a valid "
                                                                     "integer (got a string)"),
    ("record_outcome", {"used": ["exp_1"], "outcome": True, "outcom": True}, "outcom", "Extra inputs are not permitted"),
    ("search_experiences", {"task": "cancel", "k": 1000}, "k", "less than or equal to 100"),
    ("add_trajectory", {"trajectory": {"task": "x", "steps": [{"actio": "a"}]}}, "trajectory.id", "Field required"),
    # Past 4,300 digits Python cannot print the integer, which LangChain does before the tool runs.
    ("refine_steps", {"task": "x", "k": 10**5000}, "k", "a 16610-bit integer is outside the 64-bit integer range"),
    ("add_trajectory", {"trajectory": {"id": "t", "task": "x", "steps": [{"action": "a", "arguments": {"n": -10**5000}}]}},
     "trajectory.steps.0.arguments.n", "outside the 64-bit integer range"),
])
def test_invalid_arguments_come_back_as_an_error_naming_the_field(
    airline_kb: KnowledgeBase, tool_name: str, args: dict[str, Any], field: str, reason: str,
) -> None:
    message = call(tools_of(airline_kb)[tool_name], args)
    assert message.status == "error" and message.artifact is None
    assert str(message.content).startswith(f"{tool_name}: invalid arguments, nothing was done: ")
    assert f"{field}: " in str(message.content) and reason in str(message.content)
    assert "\n" not in str(message.content)
    plain = tools_of(airline_kb)[tool_name].invoke(args)  # the arguments alone: the answer is the error's text
    assert plain == message.content


def test_input_kbgraph_refuses_comes_back_as_its_one_line_message_and_writes_nothing(kb: KnowledgeBase) -> None:
    kb.add_trajectories(CANCEL)
    before = namespace_census(kb)
    tools = tools_of(kb)
    unknown = call(tools["record_outcome"], {"used": ["exp_missing"], "outcome": True})
    assert unknown.status == "error"
    assert str(unknown.content) == (f"record_outcome: invalid input, nothing was written: feedback: experience "
                                    f"'exp_missing': not in namespace '{kb.namespace}'")
    bad_id = call(tools["add_trajectory"], {"trajectory": {**NEW_RUN, "id": "not an id!"}})
    assert bad_id.status == "error" and str(bad_id.content).startswith(
        "add_trajectory: invalid trajectory, nothing was written: trajectory: id: String should match pattern")
    blank = call(tools["search_experiences"], {"task": "  "})
    assert blank.status == "error" and str(blank.content) == (
        "search_experiences: invalid arguments, nothing was done: task is blank: give the task in words, or steps_so_far")
    assert namespace_census(kb) == before


# -- a real LangGraph graph --------------------------------------------------------------------------


class ScriptedChatModel(BaseChatModel):
    """Stands in for an LLM: ``script`` reads the conversation so far and returns the next message
    (a tool call, or the final answer), as a model would."""

    script: Callable[[Sequence[BaseMessage]], AIMessage]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.script(messages))])


def agent_graph(model: BaseChatModel, tools: list[BaseTool]) -> Any:
    """The usual tool-calling loop: the model, then ToolNode (with its default error handling)
    while the model asks for tools."""
    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def tool_call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}])


def test_a_langgraph_agent_searches_records_its_outcome_and_teaches_a_new_run(kb: KnowledgeBase) -> None:
    kb.add_trajectories([*CANCEL, *CHANGE])

    def script(messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return tool_call("search_experiences", {"task": str(last.content), "domain": "airline", "k": 3}, "c1")
        assert isinstance(last, ToolMessage) and last.status == "success", last.content
        if last.name == "search_experiences":
            found = json.loads(str(last.content))  # what a model reads: the JSON text
            return tool_call("record_outcome", {"used": [found["experiences"][0]["id"]], "outcome": True,
                                                "retrieved": found["retrieved_ids"], "task": CANCEL_TASK,
                                                "agent": "agent-lc"}, "c2")
        if last.name == "record_outcome":
            return tool_call("add_trajectory", {"trajectory": NEW_RUN}, "c3")
        return AIMessage(content="Cancelled, refunded, and remembered.")

    final = agent_graph(ScriptedChatModel(script=script), kbgraph_tools(kb)).invoke(
        {"messages": [HumanMessage(CANCEL_TASK)]})
    tool_messages = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert [(m.name, m.status) for m in tool_messages] == [
        ("search_experiences", "success"), ("record_outcome", "success"), ("add_trajectory", "success")]
    found, feedback, added = (m.artifact for m in tool_messages)
    used = found["experiences"][0]["id"]
    assert found["experiences"][0]["problem"].startswith("You want to cancel your flights from MCO to CLT")
    state = kb.learning_state([used])[0]
    assert (state.retrieved, state.used, state.succeeded) == (1, 1, 1), "the feedback is in Neo4j"
    assert {e["id"]: e["used"] for e in feedback["experiences"]}[used] == 1
    [new_experience] = added["experience_ids"]
    assert kb.search("add a checked bag to my reservation", k=1).ids() == [new_experience], \
        "the new run is searchable"
    stored = kb.get(new_experience)
    assert stored is not None and stored.source_ids == [NEW_RUN["id"]]
    assert final["messages"][-1].content == "Cancelled, refunded, and remembered."


def test_in_a_graph_invalid_tool_arguments_become_error_tool_messages_and_nothing_is_written(kb: KnowledgeBase) -> None:
    kb.add_trajectories(CANCEL)
    used = kb.search(CANCEL_TASK, k=1).ids()
    before = namespace_census(kb)

    def script(messages: Sequence[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):  # two bad calls at once: ToolNode runs both
            return AIMessage(content="", tool_calls=[
                {"name": "record_outcome", "args": {"used": used, "outcome": "yes"}, "id": "c1", "type": "tool_call"},
                {"name": "add_trajectory", "args": {"trajectory": {**NEW_RUN, "steps": [{"action": ""}]}},
                 "id": "c2", "type": "tool_call"},
            ])
        return AIMessage(content="I will fix my arguments.")

    final = agent_graph(ScriptedChatModel(script=script), kbgraph_tools(kb)).invoke(
        {"messages": [HumanMessage(CANCEL_TASK)]})
    errors = {m.name: m for m in final["messages"] if isinstance(m, ToolMessage)}
    assert {name: m.status for name, m in errors.items()} == {"record_outcome": "error", "add_trajectory": "error"}
    assert str(errors["record_outcome"].content) == (
        "record_outcome: invalid arguments, nothing was done: outcome: Input should be a valid boolean, or a valid number, "
        "or a valid integer (got a string)")
    assert str(errors["add_trajectory"].content).startswith("add_trajectory: invalid trajectory, nothing was written: "
                                                            "trajectory: steps.0.action: ")
    assert final["messages"][-1].content == "I will fix my arguments.", "the graph went on: the model saw the errors"
    assert namespace_census(kb) == before
    assert kb.get_many(["lc-test-run-1"]) == []


# -- the documentation ---------------------------------------------------------------------------------


def test_every_python_example_of_the_page_runs(kb: KnowledgeBase, neo4j_target: Neo4jTarget,
                                               monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The page's ```python blocks, run in order in one namespace of names, against this test's
    server and namespace (KnowledgeBase.from_settings reads them from the environment)."""
    page = DOCS.read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) >= 3
    for name, value in neo4j_target.env(kb.namespace).items():
        monkeypatch.setenv(name, value)
    names: dict[str, Any] = {"__name__": "docs_example"}
    try:
        for block in blocks:
            exec(compile(block, str(DOCS), "exec"), names)  # noqa: S102 - the page's own examples
    finally:
        if "kb" in names:
            names["kb"].close()
    printed = capsys.readouterr().out
    shown = re.findall(r"```text\n(.*?)```", page, flags=re.S)
    assert shown, "the page shows what the examples print"
    for line in "".join(shown).splitlines():
        assert line in printed.splitlines(), f"the page shows {line!r}; the examples printed:\n{printed}"
    assert kb.count() > 0, "the examples ran in this test's namespace"
