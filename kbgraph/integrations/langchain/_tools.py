"""kbgraph_tools: search_experiences, refine_steps, record_outcome and add_trajectory as LangChain tools.

Each returns its result as JSON text for the model and as a dict in the ``ToolMessage``'s
``artifact``; refused arguments and anticipated failures answer one line, status "error".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, ValidationError

from kbgraph.integrations.langchain._arguments import (AddTrajectoryArgs, RecordOutcomeArgs, RefineStepsArgs,
                                                       SearchExperiencesArgs, TakenStep, ToolArguments)
from kbgraph.integrations.langchain._refine import refine_steps
from kbgraph.kb import KnowledgeBase
from kbgraph.tools import (ExecutedStep, TrajectoryInput, failure_message, ingest_trajectory, json_type, one_line,
                           parse_trajectory, search_result)

TOOL_NAMES = ("search_experiences", "refine_steps", "record_outcome", "add_trajectory")


def _argument_problems(error: ValidationError) -> str:
    """``field.path: reason (got a string)`` for each argument refused, in one line."""
    problems = []
    for item in error.errors(include_url=False):
        path = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        given = f" (got {json_type(item['input'])})" if item["type"].endswith("_type") else ""
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
        message = failure_message(exc)
        if message is None:
            raise
        raise ToolException(one_line(f"{name}: {message}")) from exc


def _result(name: str, work: Callable[[], BaseModel]) -> tuple[str, dict[str, Any]]:
    with _as_tool_exception(name):
        result = work().model_dump(mode="json")
    return json.dumps(result, ensure_ascii=False), result


def _tool(name: str, description: str, args_schema: type[ToolArguments], func: Callable[..., Any]) -> StructuredTool:
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
