"""kbgraph as an MCP server: the tools an agent calls before, during and after a task.

Five tools over one namespace of one knowledge base (DESIGN §3–4):

- ``search_experiences`` — student phase: what worked before for a task like this one;
- ``refine_steps`` — teacher phase: help for the steps that are going wrong;
- ``record_outcome`` — what the agent did with the results and how the task ended;
- ``add_trajectory`` — ingest what the agent did, in the reference trajectory format;
- ``get_experience`` — one experience in full (without its embeddings).

Built on the official MCP Python SDK (``mcp`` 2.x, :class:`~mcp.server.mcpserver.MCPServer`):
each tool has a typed input schema whose descriptions tell a model what to pass, and returns a
pydantic model, published as the tool's output schema and sent as structured content.

Arguments are validated strictly (no "yes" read as true, no "10" as 10, no "null" as null). Bad
input and unavailable dependencies come back as tool errors (``isError``) of one line that names
what is wrong and where; a bug in a tool is one line too (its traceback goes to stderr); the
server keeps serving. The knowledge base is opened on the first tool call (so a client can list
the tools before Neo4j is up), or injected.
The namespace is fixed when the server starts: no tool can reach another namespace.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar, get_args

import anyio
import neo4j
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError

from kbgraph.core.errors import InvalidInputError, KbgraphError, validation_problems
from kbgraph.learning.feedback import FeedbackReport
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from kbgraph.mcp_stdio import bounded_stdio_server
from kbgraph.core.models import Experience, Trajectory
from kbgraph.search.results import SearchHit, SearchResults
from kbgraph.search.teacher import RefineResults
from kbgraph.core.settings import Settings
from kbgraph.core.value_bounds import value_problem

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "AddTrajectoryResult",
    "ExperienceDetails",
    "KbgraphMCPServer",
    "KnowledgeBaseSource",
    "SearchExperiencesResult",
    "StrictArguments",
    "TrajectoryInput",
    "argument_problems",
    "build_server",
    "one_line",
    "serve_stdio",
    "strict_tool",
]

SERVER_NAME = "kbgraph"
TOOL_NAMES = ("search_experiences", "refine_steps", "record_outcome", "add_trajectory", "get_experience")
# Enough to follow a merged experience's provenance without flooding a model's context.
MAX_SOURCE_IDS_SHOWN = 50
MAX_PITFALLS_PER_HIT = 5

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


def as_tool_error(exc: Exception) -> ToolError | None:
    """The message a model can act on for a failure kbgraph anticipates; None for a bug."""
    # Settings are validated when the server starts (kbgraph.commands.mcp), so a pydantic
    # ValidationError here would be a bug and is left to the SDK like any other.
    if isinstance(exc, KbgraphError):  # bad input, Neo4j unreachable, embedder missing, …
        return ToolError(str(exc))
    if isinstance(exc, neo4j.exceptions.Neo4jError):
        return ToolError(f"Neo4j refused a query: {exc.code}: {exc.message}")
    if isinstance(exc, neo4j.exceptions.DriverError):
        first_line = (str(exc).splitlines() or [""])[0]
        return ToolError(f"lost Neo4j during the call ({type(exc).__name__}: {first_line}); what was committed "
                         "is kept and calling again resumes")
    return None


@contextmanager
def _tool_errors() -> Iterator[None]:
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        error = as_tool_error(exc)
        if error is None:
            raise  # a bug: KbgraphMCPServer logs its traceback on stderr and answers one line
        raise error from exc


def _run(source: KnowledgeBaseSource, work: Callable[[KnowledgeBase], T]) -> T:
    with _tool_errors(), source.use() as kb:
        return work(kb)


# -- strict arguments, one-line errors ---------------------------------------------------------------

#: Problems shown in one error line; the rest are counted.
MAX_PROBLEMS_SHOWN = 5
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")


def _takes_text(annotation: Any) -> bool:
    return annotation is str or str in get_args(annotation)


class StrictArguments(FuncMetadata):
    """A tool's arguments validated in pydantic's strict mode, before the tool runs.

    The SDK validates leniently: "yes", "true" or "1" pass as true, "10" and 3.0 as the integer
    10 and 3, and any string it can parse as JSON is replaced by the parsed value, so "null" in an
    optional text field (domain, agent, task) or for the outcome silently became "not given".
    Here a value must have the type the schema publishes. The SDK's one allowance kept: a list
    or object sent as a JSON string (some clients do) to a field that takes a list or an object.
    """

    @classmethod
    def of(cls, metadata: FuncMetadata) -> StrictArguments:
        return cls(arg_model=metadata.arg_model, output_schema=metadata.output_schema,
                   output_model=metadata.output_model, wrap_output=metadata.wrap_output)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = dict(data)
        for name, value in data.items():
            field = self.arg_model.model_fields.get(name)
            if field is None or not isinstance(value, str) or _takes_text(field.annotation):
                continue
            try:
                decoded = json.loads(value)
            except (ValueError, RecursionError):
                continue  # left as a string, which strict validation refuses by the field's name
            if isinstance(decoded, list | dict) and value_problem(decoded) is None:
                parsed[name] = decoded
        return parsed

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        # An unknown argument is refused rather than ignored: a misspelt "outcom" would otherwise
        # record a task without its outcome.
        unknown = [name for name in arguments_to_validate if name not in self.arg_model.model_fields]
        if unknown:
            raise ValidationError.from_exception_data(self.arg_model.__name__, [
                {"type": "extra_forbidden", "loc": (name,), "input": arguments_to_validate[name]} for name in unknown])
        model = self.arg_model.model_validate(self.pre_parse_json(arguments_to_validate), strict=True)
        return model.model_dump_one_level()


def strict_tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    """``fn`` as an MCP tool whose arguments are validated by :class:`StrictArguments`."""
    tool = Tool.from_function(fn, annotations=annotations)
    return tool.model_copy(update={"fn_metadata": StrictArguments.of(tool.fn_metadata)})


def one_line(text: str) -> str:
    """A message as one line: the headline, then its indented problems joined by '; '."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    return lines[0] + (" " + "; ".join(lines[1:]) if len(lines) > 1 else "")


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _place(part: str | int) -> str:
    if isinstance(part, int) or _PLAIN_NAME.fullmatch(part):
        return str(part)
    return json.dumps(part[:40] + ("…" if len(part) > 40 else ""))  # escapes control characters


def _input_path(loc: tuple[str | int, ...], arguments: Any, missing: bool) -> str:
    """Where in the arguments a problem is. Pydantic's location also names the member of a union
    that was tried ('outcome.bool', 'outcome.float'): only the steps found in the input are kept."""
    parts: list[str] = []
    value = arguments
    for position, part in enumerate(loc):
        if isinstance(value, str) and value[:1] in "[{":  # a list or object sent as a JSON string
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                pass
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        elif not (missing and position == len(loc) - 1):
            continue
        parts.append(_place(part))
    return ".".join(parts) or "(arguments)"


def argument_problems(error: ValidationError, arguments: Any) -> str:
    """One line: ``field.path: what it should be (got a string)`` for each argument refused."""
    reasons: dict[str, list[str]] = {}
    given: dict[str, str] = {}
    for item in error.errors(include_url=False):
        path = _input_path(item["loc"], arguments, missing=item["type"] == "missing")
        reason = str(item["msg"]).removeprefix("Value error, ")
        if reason not in reasons.setdefault(path, []):
            reasons[path].append(reason)
        if item["type"].endswith("_type"):  # the kind of value that was refused, never the value itself
            given.setdefault(path, f" (got {_json_type(item['input'])})")
    problems = [f"{path}: {found[0]}" + "".join(", or " + other.removeprefix("Input should be ") for other in found[1:])
                + given.get(path, "") for path, found in reasons.items()]
    more = len(problems) - MAX_PROBLEMS_SHOWN
    return one_line("; ".join(problems[:MAX_PROBLEMS_SHOWN]) + (f"; … and {more} more" if more > 0 else ""))


class KbgraphMCPServer(MCPServer[Any]):
    """The SDK's server, with every tool failure answered as one line a model can act on."""

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


# -- inputs ------------------------------------------------------------------------------------------


class _Input(BaseModel):
    # Strict: a client's "yes" is not a success, nor "3" an order (lax parsing would read them so).
    model_config = ConfigDict(extra="forbid", strict=True)


class ExecutedStep(_Input):
    """A step the agent has already executed in the current task."""

    action: str = Field(description="The tool or operation called, e.g. 'get_order_details'.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The arguments it was called with (values may be concrete).")


class ProblematicStepInput(_Input):
    """A step that went wrong: what was called, with what, and the error it produced."""

    action: str = Field(description="The tool or operation called, e.g. 'find_user_by_email'.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments it was called with.")
    error: str | None = Field(
        default=None, description="The error message or failed observation, verbatim. Leave out if none.")
    issue_type: str | None = Field(
        default=None, description="A short issue class such as 'not_found' or 'permission'; classified from "
                                  "the error when left out.")
    text: str | None = Field(
        default=None, description="Optional description of what the step meant to do; built from action and "
                                  "arguments when left out.")


class StepRewardInput(_Input):
    """How one step of a used experience went (per-step credit, MAEL)."""

    experience_id: str = Field(description="The experience whose step this is.")
    order: int = Field(ge=0, description="The step's order within that experience (0 = first), as shown by "
                                         "search_experiences or get_experience.")
    reward: float = Field(ge=-1.0, le=1.0, description="-1 (harmful) … 0 (no help) … 1 (exactly right).")


class TrajectoryStepInput(_Input):
    """One step as the agent took it."""

    action: str = Field(description="The tool or operation called.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments, concrete values included "
                                                                        "(kbgraph generalises ids and numbers).")
    thought: str | None = Field(default=None, description="Why the agent took this step.")
    observation: str | None = Field(default=None, description="What the step returned.")
    error: str | None = Field(default=None, description="The error, when the step failed.")
    reward: float | None = Field(default=None, description="How good the step was, in [-1, 1].")


class OutcomeInput(_Input):
    success: bool = Field(description="Whether the task was accomplished.")
    reward: float | None = Field(default=None, description="Optional score of the whole run.")


class TrajectoryInput(_Input):
    """A trajectory in kbgraph's reference format (one line of shared/data/trajectories/*.jsonl)."""

    id: str = Field(description="A unique, stable id for this run: letters, digits, '_', '.', ':' or '-', at "
                                "most 128 characters. The same id is ingested once.")
    task: str = Field(description="The task as it was given to the agent, in words.")
    domain: str = Field(default="general", description="The domain, e.g. 'retail', 'airline', 'banking'.")
    source: str | None = Field(default=None, description="Where the run comes from (agent, benchmark, …).")
    steps: list[TrajectoryStepInput] = Field(default_factory=list, description="The steps, in the order taken.")
    outcome: OutcomeInput | None = Field(default=None, description="How it ended; a success when left out.")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Extra facts; 'adapted_from': '<trajectory id>' declares that this "
                                          "run carried another one into a new domain.")


# -- outputs -----------------------------------------------------------------------------------------


class StepView(BaseModel):
    order: int | None = Field(description="Position in the workflow, 0 = first.")
    action: str
    text: str = Field(description="What the step does, with concrete values as placeholders.")


class PitfallView(BaseModel):
    description: str = Field(description="What went wrong at some step.")
    issue_type: str | None
    recovery: str = Field(description="How it was recovered.")
    step_order: int | None


class ExperienceHit(BaseModel):
    rank: int
    id: str = Field(description="Pass it to record_outcome (used/retrieved) or get_experience.")
    score: float = Field(description="Final score in [0, 1]; higher is more relevant.")
    problem: str
    goal: str
    domain: str
    kind: str = Field(description="'concrete' (from real runs) or 'abstract' (generalises several).")
    success_rate: float = Field(description="Fraction of the runs behind it that succeeded.")
    steps: list[StepView]
    pitfalls: list[PitfallView] = Field(description="Known failures on this workflow and their recoveries.")
    found_by: list[str] = Field(description="Indexes or relations that brought it in.")
    explanation: str = Field(description="Why it scored as it did, in one line.")


class ConceptDocumentHit(BaseModel):
    id: str
    name: str
    score: float
    document: str = Field(description="When to use / why / how / pitfalls, distilled from many runs.")


class SearchExperiencesResult(BaseModel):
    query: str
    experiences: list[ExperienceHit]
    concepts: list[ConceptDocumentHit] = Field(description="Concept documents close to the task.")
    retrieved_ids: list[str] = Field(description="The experience ids shown: pass them as 'retrieved' to "
                                                 "record_outcome when the task ends.")
    notes: list[str] = Field(description="Adjustments kbgraph made (e.g. k clamped).")


class StepDetails(StepView):
    model_config = ConfigDict(extra="ignore")

    args_schema: dict[str, str] = Field(description="Argument names and the kind of value each takes.")
    reward: float | None
    issue_type: str | None
    resolution_effectiveness: float | None


class RelationView(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str = Field(description="ABSTRACTION, COMPOSITION, ADAPTATION or ALTERNATIVE.")
    target_id: str
    weight: float
    reason: str


class ExperienceDetails(BaseModel):
    """An experience in full, as stored, without its embeddings."""

    model_config = ConfigDict(extra="ignore")

    id: str
    problem: str
    goal: str
    domain: str
    difficulty: str | None
    kind: str
    status: str
    scope: str
    owner_agent: str | None
    success_rate: float
    quality: float
    utility: float | None = Field(description="Current learnt, time-decayed utility in [0, 1].")
    efficiency: float | None
    generalizability: float | None
    retrieved: int
    used: int
    succeeded: int
    created_at: datetime
    last_used_at: datetime | None
    source: str | None
    source_count: int = Field(description="How many trajectories this experience stands for.")
    source_ids: list[str] = Field(description=f"The first {MAX_SOURCE_IDS_SHOWN} of those trajectories' ids.")
    adapted_from: list[str]
    steps: list[StepDetails]
    failure_modes: list[PitfallView]
    relations: list[RelationView]


class AddTrajectoryResult(BaseModel):
    trajectory_id: str
    experience_ids: list[str] = Field(
        description="The experiences that now stand for this trajectory (after merging with look-alikes).")
    new_experiences: int = Field(description="Experiences this call created.")
    already_ingested: bool = Field(description="True when this trajectory id had been ingested before "
                                               "(nothing changed).")
    report: IngestReport


# -- conversions -------------------------------------------------------------------------------------


def _explanation(hit: SearchHit) -> str:
    b = hit.breakdown
    parts = [f"semantic {b.semantic:.2f}", f"lexical {b.lexical:.2f}"]
    if b.structural is not None:
        parts.append(f"workflow shape {b.structural:.2f}")
    if b.fine is not None:
        parts.append(f"steps so far {b.fine:.2f} (weight {1 - b.lam:.2f})")
    parts += [f"domain transfer {b.trans:.2f}", f"success {b.success:.2f}"]
    if b.utility is not None:
        parts.append(f"utility {b.utility:.2f}")
    text = "matched on " + ", ".join(parts)
    if hit.path:
        hops = " → ".join(f"{hop.relation.value} ({hop.weight:.2f}) {hop.to_id}" for hop in hit.path)
        text += f"; reached from {hit.seed_id or hit.path[0].from_id} via {hops}"
    return text + f"; final {b.final:.2f}"


def _pitfalls(experience: Experience, limit: int | None = None) -> list[PitfallView]:
    failures = experience.failure_modes if limit is None else experience.failure_modes[:limit]
    return [PitfallView(description=f.description, issue_type=f.issue_type, recovery=f.recovery,
                        step_order=f.step_order) for f in failures]


def search_result(results: SearchResults) -> SearchExperiencesResult:
    hits = [
        ExperienceHit(
            rank=hit.rank, id=hit.id, score=round(hit.score, 4), problem=hit.experience.problem,
            goal=hit.experience.goal, domain=hit.experience.domain, kind=hit.experience.kind,
            success_rate=hit.experience.success_rate,
            steps=[StepView(order=s.order, action=s.action, text=s.text) for s in hit.experience.steps],
            pitfalls=_pitfalls(hit.experience, MAX_PITFALLS_PER_HIT), found_by=hit.found_by,
            explanation=_explanation(hit),
        )
        for hit in results.hits
    ]
    concepts = [ConceptDocumentHit(id=c.id, name=c.name, score=round(c.score, 4), document=c.document)
                for c in results.concepts]
    return SearchExperiencesResult(query=results.query, experiences=hits, concepts=concepts,
                                   retrieved_ids=results.ids(), notes=results.notes)


_EMBEDDINGS: Any = {"pg_embedding": True, "structure_embedding": True, "context_embedding": True,
                    "steps": {"__all__": {"embedding"}}, "failure_modes": {"__all__": {"embedding"}}}


def experience_details(experience: Experience, utility: float | None) -> ExperienceDetails:
    fields = experience.model_dump(mode="json", exclude=_EMBEDDINGS)
    fields.update(utility=utility, source_count=len(experience.source_ids),
                  source_ids=experience.source_ids[:MAX_SOURCE_IDS_SHOWN])
    return ExperienceDetails.model_validate(fields)


def parse_trajectory(trajectory: TrajectoryInput | dict[str, Any]) -> Trajectory:
    """The reference model's checks (id pattern, lengths, a task that is not blank …), with
    problems named ``trajectory: field: reason``."""
    payload = trajectory.model_dump(exclude_unset=True) if isinstance(trajectory, TrajectoryInput) else trajectory
    if payload.get("outcome") is None:
        payload.pop("outcome", None)
    try:
        return Trajectory.model_validate(payload)
    except ValidationError as error:
        raise InvalidInputError(validation_problems("trajectory", error, strip_value_error=True),
                                "invalid trajectory, nothing was written") from None


def ingest_trajectory(kb: KnowledgeBase, trajectory: Trajectory) -> AddTrajectoryResult:
    """Runs the whole ingestion pipeline on one trajectory (:meth:`KnowledgeBase.add_trajectories`,
    so maintenance checkpoints count it), in memory."""
    report = kb.add_trajectories([trajectory])
    # The abstracted experience may have been merged into a look-alike: find the experiences whose
    # provenance names this trajectory.
    holders = [row["id"] for row in kb.gateway.read("experiences_by_source", kb=kb.namespace, source_id=trajectory.id)]
    return AddTrajectoryResult(trajectory_id=trajectory.id, experience_ids=holders,
                               new_experiences=report.experiences_new,
                               already_ingested=report.records_already_ingested > 0, report=report)


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
        with _tool_errors():  # checked before the knowledge base is even opened
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
            experience = kb.get(id)
            if experience is None:
                raise ToolError(f"no experience {id!r} in namespace {kb.namespace!r}")
            states = kb.learning_state([id])
            return experience_details(experience, states[0].utility if states else None)

        return _run(kb_source, read)

    return KbgraphMCPServer(SERVER_NAME, title="kbgraph experience memory", instructions=INSTRUCTIONS,
                            log_level=log_level, tools=tools)


def serve_stdio(settings: Settings, *, default_agent: str | None = None) -> None:
    """Serves over stdin/stdout until the client closes stdin. File descriptor 1 points at stderr
    while serving, so nothing but protocol reaches stdout; logs go to stderr. Every line gets an
    answer, a malformed one a JSON-RPC error (kbgraph.mcp_stdio)."""
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
