"""The MCP server: kbgraph's five tools over one namespace, on the SDK's :class:`MCPServer`.

:func:`build_server` registers the contract's tools (:data:`kbgraph.tools.TOOLS`, their arguments
strict, :mod:`._arguments`), :class:`KbgraphMCPServer` answers every failure in one line, and
:func:`serve_stdio` serves them over the checked stdio transport (:mod:`.stdio`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeVar

import anyio
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, GetPromptResult, InputRequiredResult
from pydantic import BaseModel, ValidationError

from kbgraph.core.settings import Settings
from kbgraph.store.connection import quiet_driver_log
from kbgraph.kb import KnowledgeBase
from kbgraph.mcp_server._arguments import contract_tool, tool_errors
from kbgraph.mcp_server.stdio import bounded_stdio_server
from kbgraph.tools import (TOOL_NAMES, TOOLS, AddTrajectoryArgs, ToolArguments, argument_problems, ingest_trajectory,
                           kbgraph_version, one_line, parse_trajectory, run_tool)

SERVER_NAME = "kbgraph"

INSTRUCTIONS = """\
kbgraph is a memory of what agents did before: experiences (problem, goal, generalised steps,
pitfalls and their recoveries) and concept documents, learnt from past trajectories.
- Before planning a task, call search_experiences with the task in words (and your domain).
- While executing, call refine_steps with the task and the steps taken so far (a failed one with
  its error): it gives the next step, its pitfalls, and how failures like yours were fixed.
- When the task ends, call record_outcome with the ids you followed (used), those you were shown
  (retrieved) and the outcome, so useful experiences rank higher next time.
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
        # prompts, so that is a bad parameter, answered like an unknown resource. Known prompts are
        # read through the SDK's public list_prompts (its _prompt_manager is private).
        if name not in {prompt.name for prompt in await self.list_prompts()}:
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
    """The MCP server with the contract's five tools (:data:`kbgraph.tools.TOOLS`). ``default_agent``
    is the agent name used when a call names none (it decides which private experiences are
    visible and whose ability is updated)."""
    kb_source = KnowledgeBaseSource.given(source) if isinstance(source, KnowledgeBase) else source

    def work(name: str) -> Callable[[ToolArguments], BaseModel]:
        def run(arguments: ToolArguments) -> BaseModel:
            if isinstance(arguments, AddTrajectoryArgs):
                # The trajectory is checked before the knowledge base is even opened, and the
                # trajectory checked is the one ingested (run_tool would parse it again).
                with tool_errors():
                    trajectory = parse_trajectory(arguments.trajectory)
                return _run(kb_source, lambda kb: ingest_trajectory(kb, trajectory))
            return _run(kb_source, lambda kb: run_tool(kb, name, arguments, default_agent=default_agent))

        return run

    tools = [contract_tool(spec, work(spec.name)) for spec in TOOLS]
    return KbgraphMCPServer(SERVER_NAME, title="kbgraph experience memory", instructions=INSTRUCTIONS,
                            version=kbgraph_version(), log_level=log_level, tools=tools)


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The SDK's low-level server under ``server``, which runs a session over streams of our own
    (the bounded stdio of kbgraph.mcp_server.stdio). The SDK offers no public way to do that (its
    run_stdio_async always opens its own stdio_server), so this is the one place that reads its
    private ``_lowlevel_server``; should an SDK drop it, serving fails at once, naming the SDK
    (tests/kbgraph/mcp_server/test_mcp_stdio.py pins it for the installed one)."""
    lowlevel = getattr(server, "_lowlevel_server", None)
    if not isinstance(lowlevel, Server):
        raise RuntimeError(f"the installed MCP SDK (mcp {_sdk_version()}) keeps no low-level server where kbgraph's "
                           "stdio transport reads it (MCPServer._lowlevel_server): install the version "
                           "requirements.lock names")
    return lowlevel


def _sdk_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return "unknown"


def serve_stdio(settings: Settings, *, default_agent: str | None = None) -> None:
    """Serves over stdin/stdout until the client closes stdin. File descriptor 1 points at stderr
    while serving, so nothing but protocol reaches stdout; logs go to stderr. Every line gets an
    answer, a malformed one a JSON-RPC error (kbgraph.mcp_server.stdio)."""
    quiet_driver_log()  # retries and lost connections are reported once, as the tool's error
    source = KnowledgeBaseSource.from_settings(settings)
    server = build_server(source, default_agent=default_agent)

    async def serve() -> None:
        # The SDK's run("stdio") with our transport (kbgraph.mcp_server.stdio).
        lowlevel = lowlevel_server(server)
        async with bounded_stdio_server() as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        source.close()
