"""kbgraph for LangChain and LangGraph: a retriever, and ready tools for a tool-calling agent.

- :class:`KbgraphRetriever` is a LangChain ``BaseRetriever``: the experiences that worked for
  tasks like the query, best first (exactly :meth:`KnowledgeBase.search`'s ranking), as
  ``Document`` s whose page content is the experience as a plan an agent can follow (problem,
  goal, numbered steps, pitfalls with their recoveries, how often it worked) and whose metadata
  holds the id, kind, domain, score, score breakdown, explanation and evidence.
- :func:`kbgraph_tools` returns ``search_experiences``, ``refine_steps``, ``record_outcome`` and
  ``add_trajectory`` as LangChain tools, ready for LangGraph's ``ToolNode`` (or any executor).

The tools speak the MCP server's language (:mod:`kbgraph.mcp_server`): strict typed arguments
(no "yes" read as true), the same result models, the same messages. Each returns its result as
JSON text for the model, and as a dict in the ``ToolMessage``'s ``artifact`` for code. Invalid
arguments and refused input come back as one line naming the field, as a ``ToolMessage`` with
``status="error"``, and nothing is written: the tools handle these errors themselves
(``handle_validation_error``, ``handle_tool_error``), so this holds under ToolNode's default
error handling and under any other executor. Neo4j failures become such messages too; a bug in
kbgraph is raised, with its traceback.

Needs the ``langchain`` extra (langchain-core; LangGraph to run the tools in a graph); nothing
else in kbgraph imports this module. kbgraph has no async API yet: the async paths (the
retriever's ``ainvoke``, the tools' ``ainvoke``) run the synchronous façade in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kbgraph.kb import KnowledgeBase
from kbgraph.mcp_server import (
    MAX_PITFALLS_PER_HIT,
    ExecutedStep,
    PitfallView,
    StepView,
    TrajectoryInput,
    as_tool_error,
    ingest_trajectory,
    one_line,
    parse_trajectory,
    search_result,
)
from kbgraph.core.models import Experience, FailureMode, Step
from kbgraph.search.params import SearchFilters, SearchWeights
from kbgraph.search.results import SearchHit, SearchResults
from kbgraph.search.teacher import RefineResults

__all__ = [
    "TOOL_NAMES",
    "AddTrajectoryArgs",
    "KbgraphRetriever",
    "RecordOutcomeArgs",
    "RefineStepsArgs",
    "RefineStepsResult",
    "SearchExperiencesArgs",
    "TakenStep",
    "experience_document",
    "experience_plan",
    "kbgraph_tools",
]

TOOL_NAMES = ("search_experiences", "refine_steps", "record_outcome", "add_trajectory")
#: Steps of a plan shown after the next one in refine_steps (the rest is in search_experiences).
MAX_STEPS_AFTER_NEXT = 5


# -- an experience as a plan -------------------------------------------------------------------------


def _step_line(position: int, step: Step) -> str:
    said = step.text.strip()
    return f"{position}. {step.action}" + (f" — {said}" if said and said != step.action else "")


def _pitfall_line(failure: FailureMode, positions: dict[int, int]) -> str:
    where = ""
    if failure.step_order is not None and failure.step_order in positions:
        where = f"at step {positions[failure.step_order]}" + (f" ({failure.action})" if failure.action else "") + ": "
    elif failure.action:
        where = f"at {failure.action}: "
    return f"- {where}{failure.description}" + (f" — recovery: {failure.recovery}" if failure.recovery else "")


def _distinct_pitfalls(failures: list[FailureMode], limit: int) -> list[FailureMode]:
    # Real runs repeat the same failure with the same recovery: once is enough in a plan.
    seen: set[tuple[str, str]] = set()
    kept: list[FailureMode] = []
    for failure in failures:
        if (failure.description, failure.recovery) not in seen:
            seen.add((failure.description, failure.recovery))
            kept.append(failure)
    return kept[:limit]


def _evidence(hit: SearchHit) -> str:
    exp = hit.experience
    parts: list[str] = []
    if hit.runs:
        parts.append(f"worked in {hit.runs_succeeded} of {hit.runs} run{'s' if hit.runs != 1 else ''}")
    workflow = hit.workflow
    if workflow is not None and (workflow.id != hit.id or exp.kind == "abstract"):
        parts.append(f"this workflow worked in {workflow.succeeded} of {workflow.runs} runs over {workflow.tasks} "
                     f"task{'s' if workflow.tasks != 1 else ''}")
    if not parts:
        parts.append(f"success rate {exp.success_rate:.2f}")
    return "; ".join(parts)


def experience_plan(hit: SearchHit) -> str:
    """A search hit as a plan an agent can follow: the problem and goal, the steps numbered from 1,
    the known pitfalls with how they were recovered, and how often it worked."""
    exp: Experience = hit.experience
    positions = {step.order: n for n, step in enumerate(exp.steps, start=1) if step.order is not None}
    lines = [f"Problem: {exp.problem}"]
    if exp.goal.strip():
        lines.append(f"Goal: {exp.goal}")
    if exp.steps:
        lines.append("Steps:")
        lines += [_step_line(n, step) for n, step in enumerate(exp.steps, start=1)]
    else:
        lines.append("Steps: none recorded (the task was handled without tool calls).")
    pitfalls = _distinct_pitfalls(exp.failure_modes, MAX_PITFALLS_PER_HIT)
    if pitfalls:
        lines.append("Pitfalls:")
        lines += [_pitfall_line(failure, positions) for failure in pitfalls]
    lines.append(f"Evidence: {_evidence(hit)}.")
    return "\n".join(lines)


def experience_document(hit: SearchHit, explanation: str) -> Document:
    """One hit as a LangChain ``Document``: the plan as page content, the rest as metadata."""
    exp = hit.experience
    metadata: dict[str, Any] = {
        "id": hit.id,
        "rank": hit.rank,
        "kind": exp.kind,
        "domain": exp.domain,
        "problem": exp.problem,
        "goal": exp.goal,
        "score": hit.score,
        "score_breakdown": hit.breakdown.model_dump(mode="json"),
        "explanation": explanation,
        "found_by": list(hit.found_by),
        "success_rate": exp.success_rate,
        "runs": hit.runs,
        "runs_succeeded": hit.runs_succeeded,
        "workflow": hit.workflow.model_dump(mode="json") if hit.workflow is not None else None,
    }
    return Document(id=hit.id, page_content=experience_plan(hit), metadata=metadata)


def _documents(results: SearchResults) -> list[Document]:
    views = search_result(results).experiences  # the MCP tool's one-line explanation of each hit
    return [experience_document(hit, view.explanation) for hit, view in zip(results.hits, views, strict=True)]


# -- the retriever -----------------------------------------------------------------------------------


class KbgraphRetriever(BaseRetriever):
    """The experiences that worked for tasks like the query, as Documents (best first).

    ``KbgraphRetriever(kb=kb, k=5, domain="airline", filters={"kinds": ["concrete"]})``; every
    option is :meth:`KnowledgeBase.search`'s (``filters`` and ``weights`` as models or dicts,
    checked when the retriever is built). Bad queries raise kbgraph's ``InvalidInputError``.
    """

    kb: KnowledgeBase
    k: int = Field(default=5, ge=1, description="How many experiences to return (above 100: 100, with a note).")
    domain: str | None = Field(default=None, description="The agent's domain: others are discounted, not excluded.")
    agent: str | None = Field(default=None, description="Also search this agent's private experiences.")
    filters: SearchFilters | None = None
    weights: SearchWeights | None = None

    def search(self, query: str) -> SearchResults:
        """The search behind the documents, for callers who want kbgraph's own results."""
        return self.kb.search(query, domain=self.domain, agent=self.agent, k=self.k, filters=self.filters,
                              weights=self.weights)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return _documents(self.search(query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        # kbgraph has no async API yet: the synchronous search runs in a worker thread, so the
        # event loop keeps serving while Neo4j answers.
        return await asyncio.to_thread(self._get_relevant_documents, query, run_manager=run_manager.get_sync())


# -- tool arguments ----------------------------------------------------------------------------------


class _Arguments(BaseModel):
    # Strict, as the MCP server's: a model's "yes" is not a success, nor "3" a k.
    model_config = ConfigDict(extra="forbid", strict=True)


class SearchExperiencesArgs(_Arguments):
    task: str = Field(description="The task you are about to do, in words (the user's request or your summary of "
                                  "it). Must not be empty unless steps_so_far is given.")
    domain: str | None = Field(default=None, description="Your domain, e.g. 'airline'; experiences from other "
                                                         "domains are discounted, not excluded.")
    steps_so_far: list[ExecutedStep] | None = Field(
        default=None, description="Steps you have already executed, in order; they shift the match from the task "
                                  "description to the workflow.")
    k: int = Field(default=5, ge=1, description="How many experiences to return (at most 100).")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private experiences.")


class TakenStep(_Arguments):
    """A step executed in the current task, with its error when it failed."""

    action: str = Field(description="The tool or operation called, e.g. 'update_reservation_flights'.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments it was called with.")
    error: str | None = Field(default=None, description="The error it returned, verbatim; leave out if it worked.")


class RefineStepsArgs(_Arguments):
    task: str = Field(description="The task you are doing, in words (the text you searched with).")
    steps_taken: list[TakenStep] = Field(
        default_factory=list, description="The steps you have executed so far, in order, each failed one with its "
                                          "error.")
    domain: str | None = Field(default=None, description="Your domain, e.g. 'airline'.")
    k: int = Field(default=3, ge=1, le=20, description="How many matching plans (and recoveries per failed step).")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private experiences.")


class RecordOutcomeArgs(_Arguments):
    used: list[str] = Field(description="Ids of the experiences you followed (from search_experiences or "
                                        "refine_steps); empty if none helped.")
    success: bool = Field(description="Whether the task was accomplished.")
    retrieved: list[str] | None = Field(
        default=None, description="Ids of every experience you were shown (search_experiences' retrieved_ids).")
    task: str | None = Field(default=None, description="The task you were doing, in words (the text you searched "
                                                       "with): the outcome is then remembered for tasks like it.")
    agent: str | None = Field(default=None, description="Your agent name (updates your ability record).")
    domain: str | None = Field(default=None, description="The task's domain; by default the one the used "
                                                         "experiences come from.")


class AddTrajectoryArgs(_Arguments):
    trajectory: TrajectoryInput = Field(description="What an agent did on one task, step by step.")


# -- refine_steps' answer ----------------------------------------------------------------------------


class WayForward(BaseModel):
    """A stored plan for a task like this one, lined up with the steps taken: what comes next."""

    experience_id: str = Field(description="Pass it to record_outcome (used) if you follow it.")
    score: float
    problem: str
    evidence: str = Field(description="How often it worked, e.g. 'worked in 3 of 4 runs'.")
    steps_matched: int = Field(description="How far into its steps yours have got: up to its step that matched your "
                                           "last successful step (a failed step is not done).")
    next_step: StepView | None = Field(description="The step to take next; null when the plan is done.")
    then: list[StepView] = Field(description=f"Up to {MAX_STEPS_AFTER_NEXT} steps after the next one.")
    pitfalls: list[PitfallView] = Field(description="Known failures at the next step (this plan's, then those of the "
                                                    "same action in the other plans found), and how they were "
                                                    "recovered.")


class Recovery(BaseModel):
    """A past failure like one of your failed steps, and how it was recovered."""

    step: int = Field(description="Index (from 0) into steps_taken of the failed step it is about.")
    action: str
    description: str = Field(description="The past failure.")
    recovery: str = Field(description="What fixed it.")
    evidence: str = Field(description="How often it was seen and recovered.")
    experience_id: str
    score: float


class RefineStepsResult(BaseModel):
    next: list[WayForward] = Field(description="Plans for this task, best first, each with its next step.")
    recoveries: list[Recovery] = Field(description="For each failed step: past failures like it and their fixes.")
    retrieved_ids: list[str] = Field(description="Experience ids shown: pass them as 'retrieved' to record_outcome.")
    notes: list[str]


def _steps_matched(steps: list[Step], taken: list[str]) -> int:
    """How far the actions taken walk through a plan's actions, in order (others are skipped)."""
    position = 0
    for action in taken:
        found = next((i for i in range(position, len(steps)) if steps[i].action == action), None)
        if found is not None:
            position = found + 1
    return position


def _view(step: Step) -> StepView:
    return StepView(order=step.order, action=step.action, text=step.text)


def _pitfalls_at(step: Step, own: list[FailureMode], found: list[SearchHit]) -> list[PitfallView]:
    """The failures known at ``step``: the plan's own at that step, then those of the same action in
    the other plans found (a pitfall seen in another task's run is still one to avoid here)."""
    mine = [f for f in own if f.step_order == step.order or (f.step_order is None and f.action == step.action)]
    others = [f for hit in found for f in hit.experience.failure_modes if f.action == step.action]
    # One per error (its signature: the same error on the same action, values masked), with the
    # recovery most worth copying: one that got past the error in a run that then succeeded.
    best: dict[str, FailureMode] = {}
    for failure in mine + others:
        key = failure.signature or failure.description
        if key not in best or _recovery_value(failure) > _recovery_value(best[key]):
            best[key] = failure
    return [PitfallView(description=f.description, issue_type=f.issue_type, recovery=f.recovery,
                        step_order=step.order) for f in list(best.values())[:MAX_PITFALLS_PER_HIT]]


def _recovery_value(failure: FailureMode) -> tuple[bool, bool, bool]:
    return bool(failure.recovered and failure.run_succeeded), bool(failure.recovered), bool(failure.concrete)


def _way_forward(hit: SearchHit, taken: list[str], found: list[SearchHit]) -> WayForward:
    steps = hit.experience.steps
    done = _steps_matched(steps, taken)
    following = steps[done] if done < len(steps) else None
    return WayForward(
        experience_id=hit.id, score=round(hit.score, 4), problem=hit.experience.problem, evidence=_evidence(hit),
        steps_matched=done, next_step=_view(following) if following is not None else None,
        then=[_view(s) for s in steps[done + 1: done + 1 + MAX_STEPS_AFTER_NEXT]],
        pitfalls=_pitfalls_at(following, hit.experience.failure_modes, found) if following is not None else [])


def _recoveries(refined: RefineResults, failed: list[int], taken: list[TakenStep]) -> list[Recovery]:
    return [
        Recovery(step=failed[match.query_step], action=taken[failed[match.query_step]].action,
                 description=match.description, recovery=match.recovery, evidence=match.summary,
                 experience_id=match.experience_id, score=round(match.score, 4))
        for match in refined.failures
    ]


def refine_steps(kb: KnowledgeBase, args: RefineStepsArgs, agent: str | None = None) -> RefineStepsResult:
    """What to do next in a task, given the steps taken so far: the plans that match the task and
    those steps (:meth:`KnowledgeBase.search` with ``steps_so_far``), each lined up with the steps
    to give its next step and the pitfalls known at it (in that plan, or at the same action in the
    others found); and, for the steps that failed, the past failures like them with their
    recoveries (:meth:`KnowledgeBase.refine`)."""
    executed = [{"action": s.action, "arguments": s.arguments} for s in args.steps_taken]
    results = kb.search(args.task, domain=args.domain, steps_so_far=executed, k=args.k, agent=agent)
    taken = [s.action for s in args.steps_taken if s.error is None]  # a failed step still has to be done
    failed = [i for i, s in enumerate(args.steps_taken) if s.error is not None]
    recoveries: list[Recovery] = []
    notes = list(results.notes)
    if failed:
        refined = kb.refine([{"action": args.steps_taken[i].action, "arguments": args.steps_taken[i].arguments,
                              "error": args.steps_taken[i].error} for i in failed],
                            domain=args.domain, k=args.k, agent=agent)
        recoveries = _recoveries(refined, failed, args.steps_taken)
        # refine numbers the failed steps among themselves; the caller numbers all the steps taken.
        notes += [re.sub(r"^problematic_steps\[(\d+)\]", lambda m: f"steps_taken[{failed[int(m.group(1))]}]", note)
                  for note in refined.notes]
    return RefineStepsResult(next=[_way_forward(hit, taken, results.hits) for hit in results.hits],
                             recoveries=recoveries, retrieved_ids=results.ids(), notes=notes)


# -- the tools ---------------------------------------------------------------------------------------


def _json_kind(value: Any) -> str:
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def _argument_problems(error: ValidationError) -> str:
    """``field.path: reason (got a string)`` for each argument refused, in one line."""
    problems = []
    for item in error.errors(include_url=False):
        path = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        given = f" (got {_json_kind(item['input'])})" if item["type"].endswith("_type") else ""
        problems.append(f"{path}: {str(item['msg']).removeprefix('Value error, ')}{given}")
    return one_line("; ".join(problems))


@contextmanager
def _as_tool_exception(name: str) -> Iterator[None]:
    """kbgraph's anticipated failures (bad input, Neo4j refusing or gone) as a ToolException the
    tool answers with; anything else is a bug and propagates."""
    try:
        yield
    except ToolException:
        raise
    except Exception as exc:
        error = as_tool_error(exc)
        if error is None:
            raise
        raise ToolException(one_line(f"{name}: {error}")) from exc


def _result(name: str, work: Callable[[], BaseModel]) -> tuple[str, dict[str, Any]]:
    with _as_tool_exception(name):
        result = work().model_dump(mode="json")
    return json.dumps(result, ensure_ascii=False), result


def _tool(name: str, description: str, args_schema: type[_Arguments], func: Callable[..., Any]) -> StructuredTool:
    def invalid(error: Exception) -> str:
        problems = _argument_problems(error) if isinstance(error, ValidationError) else one_line(str(error))
        return f"{name}: invalid arguments, nothing was done: {problems}"

    return StructuredTool.from_function(
        func=func, name=name, description=description, args_schema=args_schema,
        response_format="content_and_artifact", handle_tool_error=True, handle_validation_error=invalid)


def kbgraph_tools(kb: KnowledgeBase, *, agent: str | None = None) -> list[BaseTool]:
    """``search_experiences``, ``refine_steps``, ``record_outcome`` and ``add_trajectory`` over
    ``kb`` (its namespace: no tool can reach another). ``agent`` is the agent name used when a call
    names none (it decides which private experiences are visible and whose ability is updated)."""

    def agent_or_default(given: str | None) -> str | None:
        return given if given is not None else agent

    def search_experiences(task: str, domain: str | None = None, steps_so_far: list[ExecutedStep] | None = None,
                           k: int = 5, agent: str | None = None) -> tuple[str, dict[str, Any]]:
        steps = [s.model_dump() for s in steps_so_far or ()]
        return _result("search_experiences", lambda: search_result(
            kb.search(task, domain=domain, steps_so_far=steps, k=k, agent=agent_or_default(agent))))

    def refine(task: str, steps_taken: list[TakenStep] | None = None, domain: str | None = None, k: int = 3,
               agent: str | None = None) -> tuple[str, dict[str, Any]]:
        args = RefineStepsArgs(task=task, steps_taken=steps_taken or [], domain=domain, k=k, agent=agent)
        return _result("refine_steps", lambda: refine_steps(kb, args, agent_or_default(agent)))

    def record_outcome(used: list[str], success: bool, retrieved: list[str] | None = None, task: str | None = None,
                       agent: str | None = None, domain: str | None = None) -> tuple[str, dict[str, Any]]:
        return _result("record_outcome", lambda: kb.record_feedback(
            retrieved=list(retrieved if retrieved is not None else used), used=list(used), outcome=success,
            agent=agent_or_default(agent), domain=domain, task=task))

    def add_trajectory(trajectory: TrajectoryInput) -> tuple[str, dict[str, Any]]:
        return _result("add_trajectory", lambda: ingest_trajectory(kb, parse_trajectory(trajectory)))

    return [
        _tool("search_experiences",
              "Find experiences that worked before for tasks like this one: for each, its steps, known pitfalls "
              "with their recoveries, how often it worked and why it matched; plus concept documents. Call it "
              "before planning a task. Keep the ids: record_outcome wants them when the task ends.",
              SearchExperiencesArgs, search_experiences),
        _tool("refine_steps",
              "While doing a task: give the task and the steps you have taken so far (a failed step with its "
              "error). Returns the stored plans that match, each with the step to take next and the pitfalls "
              "known at that step, and for each failed step, past failures like it and how they were fixed.",
              RefineStepsArgs, refine),
        _tool("record_outcome",
              "When a task ends, report which experiences you followed (used, by id) and whether the task "
              "succeeded. Experiences that help rise in later searches; ones that do not, sink. Call it once "
              "per task.",
              RecordOutcomeArgs, record_outcome),
        _tool("add_trajectory",
              "Teach kbgraph a task you (or another agent) carried out, as a trajectory: its id, the task, the "
              "steps taken (action, arguments, and the error of a failed one) and the outcome. It is generalised "
              "into an experience that later searches find. Adding the same id again changes nothing.",
              AddTrajectoryArgs, add_trajectory),
    ]
