"""The five tools as one contract: each tool's name, description, arguments and answer, and the one
function that runs it over a :class:`KnowledgeBase` (or, awaited, an :class:`AsyncKnowledgeBase`).

The MCP server, the HTTP API and the LangChain tools publish :data:`TOOLS` as they are and call
:func:`run_tool` / :func:`arun_tool`; only the transport differs (MCP's tool errors, HTTP status
codes, LangChain's ToolMessages). The MCP server checks an add_trajectory's trajectory before it
opens the knowledge base, and then does that tool's work itself with the trajectory it checked
(:func:`parse_trajectory`, then :func:`ingest_trajectory`: what ``run_tool`` does for it).
tests/kbgraph/tools/test_contract.py holds all three to it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from kbgraph.async_kb import AsyncKnowledgeBase
from kbgraph.core.errors import InvalidInputError, KbgraphError, Problem
from kbgraph.core.version import kbgraph_version as installed_version
from kbgraph.kb import KnowledgeBase
from kbgraph.learning.feedback import FeedbackReport
from kbgraph.tools._arguments import (AddTrajectoryArgs, GetExperienceArgs, RecordOutcomeArgs, RefineStepsArgs,
                                      SearchExperiencesArgs, ToolArguments)
from kbgraph.tools._convert import ingest_trajectory, parse_trajectory, read_experience, search_result
from kbgraph.tools._refine import RefineStepsResult, refine_steps
from kbgraph.tools._views import AddTrajectoryResult, ExperienceDetails, SearchExperiencesResult


class UnknownExperienceError(KbgraphError):
    """get_experience of an id the namespace does not hold (HTTP answers 404)."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool of the contract, as every way in publishes it."""

    name: str
    title: str
    description: str
    arguments: type[ToolArguments]
    answer: type[BaseModel]
    read_only: bool
    idempotent: bool = False
    ingests: bool = False  # takes the namespace's ingest turn (AsyncKnowledgeBase.run_ingesting)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("search_experiences", "Search past experiences", inspect.cleandoc("""
        Find experiences that worked before for tasks like this one: for each, its steps, known
        pitfalls with their recoveries, how often it worked and why it matched; plus concept
        documents. Call it before planning a task. Keep the ids: record_outcome wants them when the
        task ends."""), SearchExperiencesArgs, SearchExperiencesResult, read_only=True),
    ToolSpec("refine_steps", "Get help with the steps taken", inspect.cleandoc("""
        While doing a task: give the task and the steps you have taken so far (a failed step with
        its error). Returns the stored plans that match, each with the step to take next and the
        pitfalls known at that step, and for each failed step, past failures like it and how they
        were fixed."""), RefineStepsArgs, RefineStepsResult, read_only=True),
    ToolSpec("record_outcome", "Record how a task went", inspect.cleandoc("""
        When a task ends, report which experiences you followed (used, by id) and how the task
        ended (outcome). Experiences that help rise in later searches; ones that do not, sink.
        Call it once per task."""), RecordOutcomeArgs, FeedbackReport, read_only=False),
    ToolSpec("add_trajectory", "Learn from a trajectory", inspect.cleandoc("""
        Teach kbgraph a task you (or another agent) carried out, as a trajectory: its id, the task,
        the steps taken (action, arguments, and the error of a failed one) and the outcome. It is
        generalised into an experience that later searches find. Adding the same id again changes
        nothing."""), AddTrajectoryArgs, AddTrajectoryResult, read_only=False, idempotent=True, ingests=True),
    ToolSpec("get_experience", "Read one experience", inspect.cleandoc("""
        One experience in full: problem, goal, every step, failure modes and recoveries, relations
        to other experiences, counters and learnt quality."""), GetExperienceArgs, ExperienceDetails,
             read_only=True),
)
TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS)
SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}


def kbgraph_version() -> str:
    """The installed kbgraph's version (MCP's serverInfo, the OpenAPI schema): a version string
    even from a checkout never installed."""
    return installed_version("0+unknown")


def _in_callers_words(error: InvalidInputError) -> InvalidInputError:
    """The façade names a search's fields ``query: task: …``; a tool's caller sent ``task``: a
    problem of the query is said by its field alone (by its message alone, of the whole query),
    without pydantic's "Value error, " before a custom check's message."""
    return InvalidInputError([_callers_words(problem) for problem in error.problems], "invalid arguments, nothing was done")


def _callers_words(problem: str) -> str:
    if not isinstance(problem, Problem):
        return problem
    message = problem.message.replace("Value error, ", "")
    if problem.where != "query":
        return Problem(problem.where, message, problem.field)
    return message if problem.field in (None, "(record)") else f"{problem.field}: {message}"


#: kb.search's options a way in may add to the tool's arguments (HTTP does).
SEARCH_OPTIONS = ("problem", "goal", "exclude", "filters", "weights")


def _search(kb: KnowledgeBase, args: SearchExperiencesArgs, agent: str | None) -> SearchExperiencesResult:
    steps = [s.model_dump() for s in args.steps_so_far or ()]
    options = {name: getattr(args, name) for name in SEARCH_OPTIONS if getattr(args, name, None)}
    try:
        return search_result(kb.search(args.task, domain=args.domain, steps_so_far=steps, k=args.k, agent=agent,
                                       **options))
    except InvalidInputError as error:
        raise _in_callers_words(error) from None


def _record(kb: KnowledgeBase, args: RecordOutcomeArgs, agent: str | None) -> FeedbackReport:
    return kb.record_feedback(
        retrieved=list(args.retrieved if args.retrieved is not None else args.used), used=list(args.used),
        outcome=args.outcome, agent=agent, domain=args.domain, task=args.task,
        step_rewards=[r.model_dump() for r in args.step_rewards or ()])


def _add(kb: KnowledgeBase, args: AddTrajectoryArgs, agent: str | None) -> AddTrajectoryResult:
    return ingest_trajectory(kb, parse_trajectory(args.trajectory))


def _get(kb: KnowledgeBase, args: GetExperienceArgs, agent: str | None) -> ExperienceDetails:
    details = read_experience(kb, args.id)
    if details is None:
        # An id is at most 128 characters: a longer one is named by its start and length.
        shown = repr(args.id) if len(args.id) <= 128 else f"{args.id[:40]!r}… ({len(args.id):,} characters)"
        raise UnknownExperienceError(f"no experience {shown} in namespace {kb.namespace!r}")
    return details


# Each takes its own tool's arguments (TOOLS pairs them): Any, as a dict cannot say so.
_RUN: dict[str, Callable[[KnowledgeBase, Any, str | None], BaseModel]] = {
    "search_experiences": _search, "refine_steps": refine_steps, "record_outcome": _record,
    "add_trajectory": _add, "get_experience": _get,
}


def run_tool(kb: KnowledgeBase, name: str, arguments: ToolArguments, *, default_agent: str | None = None) -> BaseModel:
    """The answer of tool ``name`` to ``arguments`` (already validated), over ``kb``.
    ``default_agent`` stands for an ``agent`` the call leaves out."""
    agent = getattr(arguments, "agent", None)
    return _RUN[name](kb, arguments, agent if agent is not None else default_agent)


async def arun_tool(kb: AsyncKnowledgeBase, name: str, arguments: ToolArguments, *,
                    default_agent: str | None = None) -> BaseModel:
    """:func:`run_tool` over an AsyncKnowledgeBase: the same code, its queries on the AsyncDriver."""
    run = kb.run_ingesting if SPECS[name].ingests else kb.run
    return await run(run_tool, name, arguments, default_agent=default_agent)
