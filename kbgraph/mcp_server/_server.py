"""The MCP server: kbgraph's five tools over one namespace, on the SDK's :class:`MCPServer`.

:func:`build_server` registers the tools (their arguments strict, :mod:`._arguments`; their answers
:mod:`kbgraph.tools`' views), :class:`KbgraphMCPServer` answers every failure in one line, and
:func:`serve_stdio` serves them over the checked stdio transport (:mod:`.stdio`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal, TypeVar

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, StrictBool, StrictFloat, StrictInt, ValidationError

from kbgraph.core.settings import Settings
from kbgraph.kb import KnowledgeBase
from kbgraph.learning.feedback import FeedbackReport
from kbgraph.mcp_server._arguments import strict_tool, tool_errors
from kbgraph.mcp_server.stdio import bounded_stdio_server
from kbgraph.search.teacher import RefineResults
from kbgraph.tools import (AddTrajectoryResult, ExecutedStep, ExperienceDetails, ProblematicStepInput,
                           SearchExperiencesResult, StepRewardInput, TrajectoryInput, argument_problems,
                           ingest_trajectory, one_line, parse_trajectory, read_experience, search_result)

SERVER_NAME = "kbgraph"
TOOL_NAMES = ("search_experiences", "refine_steps", "record_outcome", "add_trajectory", "get_experience")

INSTRUCTIONS = """\
kbgraph is a memory of what agents did before: experiences (problem, goal, generalised steps,
pitfalls and their recoveries) and concept documents, learnt from past trajectories.
- Before planning a task, call search_experiences with the task in words (and your domain).
- When a step fails while executing, call refine_steps with that step and its error.
- When the task ends, call record_outcome with the ids you were shown (retrieved), the ones you
  followed (used) and whether it succeeded, so useful experiences rank higher next time.
- To teach kbgraph a new task, call add_trajectory with what you did, step by step.
- get_experience returns one experience in full, by id."""

T = TypeVar("T")
logger = logging.getLogger(__name__)


# -- the knowledge base behind the tools -----------------------------------------------------------


class KnowledgeBaseSource:
    """The knowledge base the tools work on: opened by ``factory`` on the first call, then reused.

    Calls are serialised: the SDK runs each tool in a worker thread, and ingestion's consolidation
    pass (merge, concepts, links) assumes it is the namespace's only writer. A factory that fails
    (Neo4j down, bad settings) is tried again on the next call.
    """

    def __init__(self, factory: Callable[[], KnowledgeBase], *, owns_knowledge_base: bool = True):
        self._factory = factory
        self._owns = owns_knowledge_base
        self._kb: KnowledgeBase | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> KnowledgeBaseSource:
        return cls(lambda: KnowledgeBase.from_settings(settings))

    @classmethod
    def given(cls, kb: KnowledgeBase) -> KnowledgeBaseSource:
        """An already open knowledge base, which its owner closes (tests, embedding in an app)."""
        return cls(lambda: kb, owns_knowledge_base=False)

    @contextmanager
    def use(self) -> Iterator[KnowledgeBase]:
        with self._lock:
            if self._kb is None:
                self._kb = self._factory()
            yield self._kb

    def close(self) -> None:
        with self._lock:
            if self._kb is not None and self._owns:
                self._kb.close()
            self._kb = None


def _run(source: KnowledgeBaseSource, work: Callable[[KnowledgeBase], T]) -> T:
    with tool_errors(), source.use() as kb:
        return work(kb)


class KbgraphMCPServer(MCPServer[Any]):
    """The SDK's server, with every tool failure answered as one line a model can act on."""

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context[Any, Any] | None = None) -> GetPromptResult | InputRequiredResult:
        # The SDK answers an unknown prompt with code 0 and a traceback on stderr; kbgraph has no
        # prompts, so that is a bad parameter, answered like an unknown resource.
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name[:200]!r} (kbgraph offers no prompts)")
        return await super().get_prompt(name, arguments, context)

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            # A bug in kbgraph: the traceback is for the operator (stderr), the caller gets a line.
            cause = exc.__cause__ or exc
            logger.error("tool %r raised an unexpected exception", name, exc_info=cause)
            raise ToolError(f"{name} failed with an internal error ({type(cause).__name__}); the details are "
                            "in the server's log (stderr) and the server keeps serving") from exc
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"{name}: invalid arguments, nothing was done: "
                                f"{argument_problems(exc.__cause__, arguments)}") from exc.__cause__
            # The SDK words a tool's own error "Error executing tool <name>: <message>".
            message = str(exc).removeprefix(f"Error executing tool {name}: ")
            raise ToolError(one_line(message if message == str(exc) else f"{name}: {message}")) from exc


# -- the server --------------------------------------------------------------------------------------


def build_server(
    source: KnowledgeBaseSource | KnowledgeBase,
    *,
    default_agent: str | None = None,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer[Any]:
    """The MCP server with kbgraph's five tools. ``default_agent`` is the agent name used when a
    call names none (it decides which private experiences are visible and whose ability is updated)."""
    kb_source = KnowledgeBaseSource.given(source) if isinstance(source, KnowledgeBase) else source
    tools: list[Tool] = []

    def register(annotations: ToolAnnotations) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def add(fn: Callable[..., T]) -> Callable[..., T]:
            tools.append(strict_tool(fn, annotations))
            return fn

        return add

    def agent_or_default(agent: str | None) -> str | None:
        return agent if agent is not None else default_agent

    @register(ToolAnnotations(title="Search past experiences", read_only_hint=True,
                              open_world_hint=False))
    def search_experiences(
        task: Annotated[str, Field(description="The task you are about to do, in words (the user's request or "
                                               "your summary of it). Must not be empty unless steps_so_far is given.")],
        domain: Annotated[str | None, Field(description="Your domain, e.g. 'retail'; experiences from other "
                                                        "domains are discounted, not excluded.")] = None,
        steps_so_far: Annotated[list[ExecutedStep] | None, Field(
            description="Steps you have already executed, in order; they shift the match from the task "
                        "description to the workflow.")] = None,
        k: Annotated[int, Field(ge=1, description="How many experiences to return (at most 100).")] = 5,
        agent: Annotated[str | None, Field(description="Your agent name: also searches your private "
                                                       "experiences.")] = None,
    ) -> SearchExperiencesResult:
        """Find experiences that worked before for tasks like this one, with their steps, known pitfalls
        and why each matched, plus concept documents. Call it before planning a task."""
        steps = [s.model_dump() for s in steps_so_far or ()]
        return _run(kb_source, lambda kb: search_result(
            kb.search(task, domain=domain, steps_so_far=steps, k=k, agent=agent_or_default(agent))))

    @register(ToolAnnotations(title="Get help with failing steps", read_only_hint=True,
                              open_world_hint=False))
    def refine_steps(
        problematic_steps: Annotated[list[ProblematicStepInput], Field(
            min_length=1, description="The steps that went wrong, each with its action, arguments and error.")],
        domain: Annotated[str | None, Field(description="Only experiences of this domain.")] = None,
        k: Annotated[int, Field(ge=1, description="Matches per problematic step (at most 100).")] = 5,
        agent: Annotated[str | None, Field(description="Your agent name: also searches your private "
                                                       "experiences.")] = None,
    ) -> RefineResults:
        """For steps that are going wrong while you execute a task: stored steps that did the same thing
        successfully, and past failures like yours with how they were recovered."""
        steps = [s.model_dump(exclude_none=True) for s in problematic_steps]
        return _run(kb_source, lambda kb: kb.refine(steps, domain=domain, k=k, agent=agent_or_default(agent)))

    @register(ToolAnnotations(title="Record how a task went", read_only_hint=False,
                              destructive_hint=False, idempotent_hint=False, open_world_hint=False))
    def record_outcome(
        retrieved: Annotated[list[str] | None, Field(
            description="Ids of experiences you were shown (search_experiences' retrieved_ids).")] = None,
        used: Annotated[list[str] | None, Field(description="Ids of the experiences you actually followed.")] = None,
        outcome: Annotated[StrictBool | StrictFloat | StrictInt | None, Field(
            description="How the task ended: true/false, or a score in [0, 1] (0.5 or more counts as a "
                        "success). Leave out to record use before the task has ended.")] = None,
        agent: Annotated[str | None, Field(description="Your agent name (updates your ability record).")] = None,
        domain: Annotated[str | None, Field(description="The task's domain; by default the one most used "
                                                        "experiences come from.")] = None,
        step_rewards: Annotated[list[StepRewardInput] | None, Field(
            description="Optional credit for individual steps of the experiences you used.")] = None,
        task: Annotated[str | None, Field(
            description="The task you were doing, in words (the text you searched with). With it, the outcome "
                        "is remembered for tasks like this one: what failed here is avoided next time.")] = None,
    ) -> FeedbackReport:
        """Report what you did with search results and how the task ended. Experiences that help rise in
        later searches; ones that do not, sink. Call it once when a task ends."""
        rewards = [r.model_dump() for r in step_rewards or ()]
        return _run(kb_source, lambda kb: kb.record_feedback(
            retrieved=list(retrieved or ()), used=list(used or ()), outcome=outcome,
            agent=agent_or_default(agent), domain=domain, step_rewards=rewards, task=task))

    @register(ToolAnnotations(title="Learn from a trajectory", read_only_hint=False,
                              destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    def add_trajectory(
        trajectory: Annotated[TrajectoryInput, Field(description="What an agent did on one task, step by step.")],
    ) -> AddTrajectoryResult:
        """Teach kbgraph a task you (or another agent) carried out: it is generalised into an experience,
        merged with look-alikes, linked and reflected into concept documents. Adding the same id again
        changes nothing."""
        with tool_errors():  # checked before the knowledge base is even opened
            parsed = parse_trajectory(trajectory)
        return _run(kb_source, lambda kb: ingest_trajectory(kb, parsed))

    @register(ToolAnnotations(title="Read one experience", read_only_hint=True,
                              open_world_hint=False))
    def get_experience(
        id: Annotated[str, Field(description="The experience id, as returned by search_experiences.")],
    ) -> ExperienceDetails:
        """One experience in full: problem, goal, every step, failure modes and recoveries, relations to
        other experiences, counters and learnt quality."""

        def read(kb: KnowledgeBase) -> ExperienceDetails:
            details = read_experience(kb, id)
            if details is None:
                raise ToolError(f"no experience {id!r} in namespace {kb.namespace!r}")
            return details

        return _run(kb_source, read)

    return KbgraphMCPServer(SERVER_NAME, title="kbgraph experience memory", instructions=INSTRUCTIONS,
                            log_level=log_level, tools=tools)


def serve_stdio(settings: Settings, *, default_agent: str | None = None) -> None:
    """Serves over stdin/stdout until the client closes stdin. File descriptor 1 points at stderr
    while serving, so nothing but protocol reaches stdout; logs go to stderr. Every line gets an
    answer, a malformed one a JSON-RPC error (kbgraph.mcp_server.stdio)."""
    if not os.environ.get("KBGRAPH_DEBUG"):  # retries are reported once, as the tool's error
        logging.getLogger("neo4j").setLevel(logging.ERROR)
    source = KnowledgeBaseSource.from_settings(settings)
    server = build_server(source, default_agent=default_agent)

    async def serve() -> None:
        # The SDK's run("stdio") with our transport; its low-level server is the documented
        # way to run over custom streams.
        lowlevel = server._lowlevel_server
        async with bounded_stdio_server() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        source.close()
