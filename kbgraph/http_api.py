"""kbgraph over HTTP: the façade's calls as a FastAPI application (``kbgraph serve``).

Every endpoint is one call of :class:`~kbgraph.kb.KnowledgeBase`, the same calls the MCP tools
make (:mod:`kbgraph.mcp_server`), with the same request models, result models and messages:

- ``POST /v1/search`` — student phase: experiences that worked for tasks like this one;
- ``POST /v1/refine`` — teacher phase: help for the steps that are going wrong;
- ``POST /v1/steps/search`` — stored steps like the one about to be taken (MAEL);
- ``POST /v1/feedback`` — what the agent did with the results and how the task ended;
- ``POST /v1/trajectories`` — ingest a JSON list of runs (idempotent, all or nothing);
- ``GET /v1/experiences/{id}`` — one experience in full, without its embeddings;
- ``GET /v1/stats`` — counts of the namespace;
- ``GET /v1/health`` — whether Neo4j answers (200) or not (503).

The OpenAPI schema (``/openapi.json``, browsable at ``/docs``) is generated from those pydantic
models. The namespace is the ``X-Kbgraph-Namespace`` header (the server's own namespace when it is
left out), checked like every namespace kbgraph takes; each namespace gets its own KnowledgeBase
over one shared driver and embedder, so nothing of one namespace is visible from another.

With an API key every endpoint but the health check and the schema wants ``Authorization: Bearer
<key>``; without one the server refuses to listen beyond loopback (:func:`check_bind`). Failures
answer with one JSON line ``{"detail": "…"}``: 422 for input that is refused (naming the field, or
where the body stops being JSON), 401 for a missing or wrong key, 404 for an unknown id, 503 when
Neo4j or the embedder is unavailable, 500 with a line (never a traceback) for a bug.

FastAPI is imported here only: kbgraph imports without the ``http`` extra.
"""

# No ``from __future__ import annotations``: FastAPI reads the endpoints' annotations at run time,
# and the endpoints are closures over the application's namespace pool.
import ipaddress
import logging
import secrets
import signal
import socket
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, Literal, TypeVar

import neo4j
from fastapi import Depends, FastAPI, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import (BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, ValidationError,
                      model_validator)
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbgraph.core.errors import (EmbedderError, InvalidInputError, KbgraphError, ManagedServerError, Neo4jUnavailableError,
                            SchemaError)
from kbgraph.learning.feedback import FeedbackReport
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KbStats, KnowledgeBase
from kbgraph.llm import LLMError
from kbgraph.mcp_server import (ExecutedStep, ExperienceDetails, ProblematicStepInput, SearchExperiencesResult,
                                StepRewardInput, TrajectoryInput, as_tool_error, argument_problems,
                                experience_details, one_line, search_result)
from kbgraph.search.params import SearchFilters, SearchWeights
from kbgraph.search.steps import StepHit
from kbgraph.search.teacher import RefineResults
from kbgraph.core.settings import Settings, checked_namespace
from kbgraph.core.value_bounds import value_problem, within_bounds

__all__ = [
    "API_PREFIX", "DEFAULT_PORT", "NAMESPACE_HEADER", "AddTrajectoriesResult", "ErrorResponse", "HealthReport",
    "IngestedTrajectory", "NamespacePool", "RecordOutcomeRequest", "RefineStepsRequest", "SearchExperiencesRequest",
    "StepSearchRequest", "StepSearchResult", "check_bind", "create_app", "is_loopback", "listen", "serve",
]

API_PREFIX = "/v1"
NAMESPACE_HEADER = "X-Kbgraph-Namespace"
DEFAULT_PORT = 8000
#: Larger request bodies are refused (413): a few thousand trajectories fit in far less.
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Namespaces whose KnowledgeBase is kept open; the least recently used one beyond is dropped
#: (opening one again is cheap: it shares the driver and the embedder).
MAX_OPEN_NAMESPACES = 256

T = TypeVar("T")
logger = logging.getLogger(__name__)


# -- request bodies -----------------------------------------------------------------------------------


class _Body(BaseModel):
    # Strict, as the MCP tools' arguments: "yes" is not a success, "3" not a k, and a misspelt field
    # is refused rather than ignored. Bounds (depth, 64-bit integers, valid Unicode) come first.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _within_bounds(cls, data: Any) -> Any:
        return within_bounds(data)


class SearchExperiencesRequest(_Body):
    """A student-phase search: :meth:`KnowledgeBase.search`."""

    task: str = Field(default="", description="The task you are about to do, in words. May be empty only when "
                                              "steps_so_far is given.")
    problem: str | None = Field(default=None, description="The problem alone, when you split the task in two.")
    goal: str | None = Field(default=None, description="The goal alone, when you split the task in two.")
    domain: str | None = Field(default=None, description="Your domain, e.g. 'retail'; other domains are "
                                                         "discounted, not excluded.")
    steps_so_far: list[ExecutedStep] = Field(
        default_factory=list, description="Steps already executed, in order; they shift the match from the task "
                                          "description to the workflow.")
    k: int = Field(default=5, ge=1, description="How many experiences to return (above 100: clamped, with a note).")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private experiences.")
    exclude: list[str] = Field(default_factory=list, description="Experience or trajectory ids never to return.")
    filters: SearchFilters | None = Field(default=None, description="Only some domains, kinds, minimum success …")
    weights: SearchWeights | None = Field(default=None, description="Retrieval weights for this call only.")


class RefineStepsRequest(_Body):
    """A teacher-phase query: :meth:`KnowledgeBase.refine`."""

    problematic_steps: list[ProblematicStepInput] = Field(
        min_length=1, description="The steps that went wrong, each with its action, arguments and error.")
    domain: str | None = Field(default=None, description="Only experiences of this domain.")
    k: int = Field(default=5, ge=1, description="Matches per problematic step (at most 100).")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private experiences.")


class StepSearchRequest(_Body):
    """Step-wise retrieval (MAEL): :meth:`KnowledgeBase.search_steps`."""

    action: str = Field(description="The tool or operation about to be called.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments it will be called with.")
    text: str | None = Field(default=None, description="What the step means to do; built from action and "
                                                       "arguments when left out.")
    domain: str | None = Field(default=None, description="Only steps of experiences of this domain.")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private steps.")
    k: int = Field(default=5, ge=1, description="How many steps to return.")
    alpha: float | None = Field(default=None, ge=0.0, le=1.0,
                                description="Weight of similarity against reward (default: learning.step_alpha).")


class RecordOutcomeRequest(_Body):
    """What an agent did with search results and how the task ended: :meth:`KnowledgeBase.record_feedback`."""

    retrieved: list[str] = Field(default_factory=list, description="Ids of the experiences you were shown "
                                                                   "(a search's retrieved_ids).")
    used: list[str] = Field(default_factory=list, description="Ids of the experiences you actually followed.")
    outcome: StrictBool | StrictFloat | StrictInt | None = Field(
        default=None, description="How the task ended: true/false, or a score in [0, 1] (0.5 or more counts as a "
                                  "success). Leave out to record use before the task has ended.")
    agent: str | None = Field(default=None, description="Your agent name (updates your ability record).")
    domain: str | None = Field(default=None, description="The task's domain; by default the one most used "
                                                         "experiences come from.")
    step_rewards: list[StepRewardInput] = Field(default_factory=list,
                                                description="Credit for individual steps of the experiences used.")
    task: str | None = Field(default=None, description="The task's text: the outcome is then remembered for tasks "
                                                       "like it.")


class _TrajectoryBatch(BaseModel):
    """The trajectories body, named: a refused item is ``trajectories.<i>.<field>``."""

    trajectories: list[TrajectoryInput]


# -- results ------------------------------------------------------------------------------------------


class StepSearchResult(BaseModel):
    steps: list[StepHit] = Field(description="Stored steps, best first.")


class IngestedTrajectory(BaseModel):
    trajectory_id: str
    experience_ids: list[str] = Field(description="The experiences that now stand for this trajectory (after "
                                                  "merging with look-alikes).")


class AddTrajectoriesResult(BaseModel):
    trajectories: list[IngestedTrajectory] = Field(description="Each trajectory of the request, once, in order.")
    new_experiences: int = Field(description="Experiences this call created.")
    already_ingested: int = Field(description="Trajectories ingested before (nothing changed for them).")
    report: IngestReport


class HealthReport(BaseModel):
    status: Literal["ok", "unavailable"]
    neo4j: bool = Field(description="Whether Neo4j answered a trivial query just now.")
    namespace: str | None = Field(description="The namespace used when a request names none.")
    detail: str | None = Field(default=None, description="Why it is unavailable (only to a caller with the key, "
                                                         "when the server has one).")


class ErrorResponse(BaseModel):
    detail: str = Field(description="What went wrong, in one line: the field or place, and why.")


# -- knowledge bases per namespace ------------------------------------------------------------------


class NamespacePool:
    """One KnowledgeBase per namespace, all over the driver and embedder of the first one.

    ``base`` is that first KnowledgeBase (its owner closes it), or a factory that opens it on the
    first call (Neo4j down: tried again on the next call; the pool then closes it). Other
    namespaces get a KnowledgeBase of their own (their own caches and namespace filter) sharing
    its driver, embedder, database and settings; the schema is database-wide, so it is not applied
    again. KnowledgeBase calls are thread-safe (concurrent ingests of one namespace queue on its lease).
    """

    def __init__(self, base: KnowledgeBase | Callable[[], KnowledgeBase], max_open: int = MAX_OPEN_NAMESPACES):
        if isinstance(base, KnowledgeBase):
            self._base: KnowledgeBase | None = base
            self._factory: Callable[[], KnowledgeBase] = lambda: base
            self._owns = False
        else:
            self._base = None
            self._factory = base
            self._owns = True
        self._others: OrderedDict[str, KnowledgeBase] = OrderedDict()
        self._max_open = max_open
        self._lock = threading.Lock()

    def base(self) -> KnowledgeBase:
        with self._lock:
            if self._base is None:
                self._base = self._factory()
            return self._base

    def get(self, namespace: str | None) -> KnowledgeBase:
        """The KnowledgeBase of ``namespace`` (None: the base's). A namespace is checked before
        anything is opened: an empty or malformed one never falls back to the default."""
        if namespace is not None:
            checked_namespace(namespace)
        base = self.base()
        if namespace is None or namespace == base.namespace:
            return base
        with self._lock:
            kb = self._others.get(namespace)
            if kb is None:
                kb = KnowledgeBase(
                    base.driver, base.embedder, namespace=namespace, database=base.gateway.database,
                    settings=base.settings.model_copy(update={"namespace": namespace}), ensure_schema=False,
                    browser_url=base.browser_url)
                self._others[namespace] = kb
                if len(self._others) > self._max_open:
                    # Dropped, not closed: a request may still be using it (it owns no driver).
                    self._others.popitem(last=False)
            else:
                self._others.move_to_end(namespace)
            return kb

    def close(self) -> None:
        with self._lock:
            self._others.clear()
            if self._base is not None and self._owns:
                self._base.close()
                self._base = None


# -- failures as HTTP answers -------------------------------------------------------------------------


class ApiError(Exception):
    """An answer other than 2xx: a status and one line."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


def api_error(exc: Exception) -> ApiError | None:
    """The status and message of a failure kbgraph anticipates (the MCP tools' messages); None for a bug."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, InvalidInputError):
        return ApiError(422, one_line(str(exc)))
    if isinstance(exc, Neo4jUnavailableError | EmbedderError | SchemaError | ManagedServerError):
        return ApiError(503, one_line(str(exc)))
    if isinstance(exc, LLMError):  # the model behind the LLM path failed: an upstream of ours
        return ApiError(502, one_line(str(exc)))
    tool_error = as_tool_error(exc)  # KbgraphError, or Neo4j refusing a query or lost meanwhile
    if tool_error is None:
        return None
    unavailable = isinstance(exc, neo4j.exceptions.DriverError) or (
        isinstance(exc, neo4j.exceptions.Neo4jError) and exc.is_retryable())
    return ApiError(503 if unavailable else 500, one_line(str(tool_error)))


def _guarded(what: str, work: Callable[[], T]) -> T:
    try:
        return work()
    except Exception as exc:
        error = api_error(exc)
        if error is None:  # a bug: the traceback is for the operator, the caller gets a line
            logger.error("%s raised an unexpected exception", what, exc_info=exc)
            error = ApiError(500, f"{what} failed with an internal error ({type(exc).__name__}); the details are "
                                  "in the server's log and the server keeps serving")
        raise error from exc


def _answer(error: ApiError) -> JSONResponse:
    return JSONResponse(ErrorResponse(detail=error.detail).model_dump(), status_code=error.status,
                        headers=error.headers)


def _json_kind(value: Any) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def _where_json_stops(document: str, position: int) -> str:
    line = document.count("\n", 0, position) + 1
    column = position - (document.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}"


#: An endpoint's body, checked again to name its problems: the model, and whether the body is a list.
BodyModel = tuple[type[BaseModel], bool]


def body_problem(request: Request, exc: RequestValidationError, bodies: dict[str, BodyModel]) -> str:
    """One line saying where the request body is refused and why (the MCP tools' wording).
    ``bodies``: each endpoint's body by the endpoint's name."""
    errors = list(exc.errors())
    headline = "invalid request body, nothing was done"
    for error in errors:
        if error.get("type") == "json_invalid":
            document = exc.body if isinstance(exc.body, str) else ""
            position = error["loc"][-1] if isinstance(error["loc"][-1], int) else 0
            return (f"{headline}: the body is not valid JSON: {error.get('ctx', {}).get('error', 'JSON decode error')} "
                    f"at {_where_json_stops(document, position)}")
    if isinstance(exc.body, bytes | bytearray):
        sent = request.headers.get("content-type") or "none"
        return f"{headline}: the body must be JSON, sent with 'Content-Type: application/json' (Content-Type: {sent})"
    route = request.scope.get("route")
    expected = bodies.get(getattr(route, "name", ""))
    if any(error.get("loc") == ("body",) and error.get("type") == "missing" for error in errors):
        return f"{headline}: the body is missing: send a JSON {'list' if expected and expected[1] else 'object'}"
    if expected is not None:
        model, is_list = expected
        body = exc.body
        if is_list and not isinstance(body, list):
            return f"{headline}: body: expected a JSON list of trajectories (got {_json_kind(body)})"
        if not is_list and not isinstance(body, dict):
            return f"{headline}: body: expected a JSON object (got {_json_kind(body)})"
        arguments: Any = {"trajectories": body} if is_list else body
        if problem := value_problem(arguments):  # refused before the model looks: say where
            return f"{headline}: {problem}"
        try:
            model.model_validate(arguments)
        except ValidationError as error:
            return f"{headline}: {argument_problems(error, arguments)}"
    # Not reached for kbgraph's bodies; any other parameter is named by FastAPI's location.
    problems = [f"{'.'.join(str(part) for part in error.get('loc', ())) or '(request)'}: {error.get('msg', 'invalid')}"
                for error in errors]
    return one_line(f"{headline}: " + "; ".join(problems))


class BodyTooLarge(Exception):
    pass


class BodyLimit:
    """Refuses request bodies over ``max_bytes`` with 413 and a JSON line, like every other
    refusal (Starlette's own limit answers in plain text): at once for a declared Content-Length,
    otherwise when the body read so far outgrows it."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def _message(self) -> str:
        return f"the request body is over the limit of {self.max_bytes:,} bytes: send fewer trajectories at once"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await _answer(ApiError(413, self._message()))(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self._message())
            return message

        await self.app(scope, limited, send)


# -- binding ----------------------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name (or "" = every interface): it may reach beyond this machine
        return False


def check_bind(host: str, api_key: str | None) -> None:
    """Refuses (InvalidInputError) an empty key, and listening beyond loopback without a key."""
    if api_key is not None and not api_key.strip():
        raise InvalidInputError(["api key: empty: give a key (--api-key or KBGRAPH_API_KEY), or none on loopback"],
                                "cannot serve")
    if api_key is None and not is_loopback(host):
        raise InvalidInputError([
            f"host: {host!r} is reachable beyond this machine, so an API key is required: pass --api-key or set "
            "KBGRAPH_API_KEY (clients send 'Authorization: Bearer <key>'), or listen on 127.0.0.1"], "cannot serve")


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port), or KbgraphError saying why not."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM,
                                                      flags=socket.AI_PASSIVE)[0]
        return socket.create_server(address[:2], family=family)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise KbgraphError(f"cannot listen on {host}:{port}: {reason} (choose another --host or --port)") from None


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# -- the application ----------------------------------------------------------------------------------

_ERRORS: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorResponse, "description": "Input refused (the field, or where the body stops being JSON); "
                                                 "nothing was done."},
    500: {"model": ErrorResponse, "description": "A failure inside kbgraph, in one line."},
    503: {"model": ErrorResponse, "description": "Neo4j (or the embedder) is unavailable."},
}
_UNAUTHORISED: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "The API key is missing or wrong."}}


def create_app(
    knowledge_base: KnowledgeBase | Callable[[], KnowledgeBase],
    api_key: str | None,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The HTTP API over ``knowledge_base`` — an open KnowledgeBase (its owner closes it), or a
    factory opening one on the first call — whose namespace is the default. ``api_key``: the key
    every request but health and the schema must carry as ``Authorization: Bearer <key>``; None
    asks for none (listen on loopback then: :func:`check_bind`)."""
    if api_key is not None and not api_key.strip():
        raise InvalidInputError(["api_key: empty: give a key, or None for no authentication"], "cannot serve")
    pool = NamespacePool(knowledge_base)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        pool.close()

    app = FastAPI(
        title="kbgraph", version="1", lifespan=lifespan,
        summary="A knowledge-graph memory for LLM agents: search past experiences, learn from trajectories.",
        description="Each call works in one namespace: the `X-Kbgraph-Namespace` header, or the server's own. "
                    "Errors are `{\"detail\": \"…\"}` with the same messages as the CLI and the MCP tools.",
    )
    bearer = HTTPBearer(auto_error=False, description="The server's API key (kbgraph serve --api-key).")

    def authorised(credentials: HTTPAuthorizationCredentials | None) -> bool:
        return api_key is None or (credentials is not None and secrets.compare_digest(
            credentials.credentials.encode("utf-8", "surrogateescape"), api_key.encode("utf-8", "surrogateescape")))

    health_path = f"{API_PREFIX}/health"
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @app.middleware("http")  # added last: runs first
    async def require_key(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        # Before anything reads the body: a caller without the key learns nothing from a 422.
        path = request.url.path
        if api_key is None or not path.startswith(f"{API_PREFIX}/") or path == health_path:
            return await call_next(request)
        credentials = await bearer(request)
        if authorised(credentials):
            return await call_next(request)
        challenge = {"WWW-Authenticate": "Bearer"}
        if credentials is None:
            return _answer(ApiError(401, "missing API key: send the header 'Authorization: Bearer <key>'", challenge))
        return _answer(ApiError(401, "wrong API key: send the key the server was started with "
                                     "('Authorization: Bearer <key>')", challenge))

    bodies: dict[str, BodyModel] = {}
    # The key is checked by require_key; the dependency documents it in the OpenAPI schema.
    protected = [Depends(bearer)] if api_key is not None else []
    responses = {**_ERRORS, **(_UNAUTHORISED if api_key is not None else {})}
    Namespace = Annotated[str | None, Header(
        alias=NAMESPACE_HEADER, description="The namespace to work in; the server's own when left out.")]

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _answer(exc)

    @app.exception_handler(RequestValidationError)
    async def on_invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _answer(ApiError(422, body_problem(request, exc, bodies)))

    @app.exception_handler(StarletteHTTPException)
    async def on_http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, RecursionError):  # json.loads gave up on the nesting
            return _answer(ApiError(422, "invalid request body, nothing was done: the body is nested too deeply"))
        if isinstance(exc.__cause__, BodyTooLarge):  # the body outgrew the limit while it was read
            return _answer(ApiError(413, str(exc.__cause__)))
        return _answer(ApiError(exc.status_code, str(exc.detail), dict(exc.headers or {})))

    @app.exception_handler(Exception)
    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        logger.error("%s %s raised an unexpected exception", request.method, request.url.path, exc_info=exc)
        return _answer(ApiError(500, f"{request.method} {request.url.path} failed with an internal error "
                                     f"({type(exc).__name__}); the details are in the server's log"))

    def endpoint(method: str, path: str, name: str, body: BodyModel | None = None, tag: str = "search",
                 more_responses: dict[int | str, dict[str, Any]] | None = None
                 ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        if body is not None:
            bodies[name] = body
        return app.api_route(f"{API_PREFIX}{path}", methods=[method], name=name, operation_id=name, tags=[tag],
                             dependencies=protected, responses={**responses, **(more_responses or {})})

    @endpoint("POST", "/search", "search_experiences", (SearchExperiencesRequest, False))
    def search_experiences(request: SearchExperiencesRequest, namespace: Namespace = None) -> SearchExperiencesResult:
        """Experiences that worked for tasks like this one, each with its steps, pitfalls and why it
        matched, plus concept documents. Pass ``steps_so_far`` while executing."""
        def work() -> SearchExperiencesResult:
            kb = pool.get(namespace)
            return search_result(kb.search(
                request.task, problem=request.problem, goal=request.goal, domain=request.domain,
                steps_so_far=[s.model_dump() for s in request.steps_so_far], k=request.k, agent=request.agent,
                exclude=request.exclude, filters=request.filters, weights=request.weights))

        return _guarded("search", work)

    @endpoint("POST", "/refine", "refine_steps", (RefineStepsRequest, False))
    def refine_steps(request: RefineStepsRequest, namespace: Namespace = None) -> RefineResults:
        """For steps going wrong: stored steps that did the same thing successfully, and past
        failures like these with how they were recovered."""
        steps = [s.model_dump(exclude_none=True) for s in request.problematic_steps]
        return _guarded("refine", lambda: pool.get(namespace).refine(
            steps, domain=request.domain, k=request.k, agent=request.agent))

    @endpoint("POST", "/steps/search", "search_steps", (StepSearchRequest, False))
    def search_steps(request: StepSearchRequest, namespace: Namespace = None) -> StepSearchResult:
        """Stored steps like the one about to be taken, scored α·similarity + (1 − α)·reward."""
        return StepSearchResult(steps=_guarded("steps search", lambda: pool.get(namespace).search_steps(
            request.action, request.arguments, text=request.text, domain=request.domain, agent=request.agent,
            k=request.k, alpha=request.alpha)))

    @endpoint("POST", "/feedback", "record_outcome", (RecordOutcomeRequest, False), "learning")
    def record_outcome(request: RecordOutcomeRequest, namespace: Namespace = None) -> FeedbackReport:
        """What the agent did with search results and how the task ended: experiences that help
        rise in later searches, ones that do not sink. Unknown ids: 422, nothing written."""
        fields = request.model_dump(exclude={"step_rewards"})
        fields["step_rewards"] = [r.model_dump() for r in request.step_rewards]
        return _guarded("feedback", lambda: pool.get(namespace).record_feedback(**fields))

    @endpoint("POST", "/trajectories", "add_trajectories", (_TrajectoryBatch, True), "learning")
    def add_trajectories(trajectories: list[TrajectoryInput], namespace: Namespace = None) -> AddTrajectoriesResult:
        """Ingests a JSON list of runs (kbgraph's trajectory format) through the whole pipeline:
        generalised into experiences, merged with look-alikes, linked, reflected into concept
        documents. All or nothing: one refused run (named ``trajectories[i]: field: reason``)
        and nothing is written. A run ingested before is skipped."""
        def work() -> AddTrajectoriesResult:
            kb = pool.get(namespace)
            items = []
            for trajectory in trajectories:
                item = trajectory.model_dump(exclude_unset=True)  # as sent: the same fingerprint as a file line
                if item.get("outcome") is None:
                    item.pop("outcome", None)
                items.append(item)
            report = kb.add_trajectories(items)
            ids = list(dict.fromkeys(t.id for t in trajectories))
            # An experience may have been merged into a look-alike: its provenance names the run.
            holders = {tid: [row["id"] for row in kb.gateway.read("experiences_by_source", kb=kb.namespace,
                                                                  source_id=tid)] for tid in ids}
            return AddTrajectoriesResult(
                trajectories=[IngestedTrajectory(trajectory_id=tid, experience_ids=holders[tid]) for tid in ids],
                new_experiences=report.experiences_new, already_ingested=report.records_already_ingested,
                report=report)

        return _guarded("add trajectories", work)

    @endpoint("GET", "/experiences/{experience_id}", "get_experience", tag="read",
              more_responses={404: {"model": ErrorResponse, "description": "No such experience."}})
    def get_experience(experience_id: str, namespace: Namespace = None) -> ExperienceDetails:
        """One experience in full: every step, failure modes and recoveries, relations, counters
        and learnt quality (no embeddings)."""
        def work() -> ExperienceDetails:
            kb = pool.get(namespace)
            experience = kb.get(experience_id)
            if experience is None:
                raise ApiError(404, f"no experience {experience_id!r} in namespace {kb.namespace!r}")
            states = kb.learning_state([experience_id])
            return experience_details(experience, states[0].utility if states else None)

        return _guarded("get experience", work)

    @endpoint("GET", "/stats", "stats", tag="read")
    def stats(namespace: Namespace = None) -> KbStats:
        """Counts of the namespace: experiences by status, kind and domain; nodes; relationships."""
        return _guarded("stats", lambda: pool.get(namespace).stats())

    @app.get(health_path, name="health", operation_id="health", tags=["operations"],
             responses={503: {"model": HealthReport, "description": "Neo4j does not answer."}})
    async def health(request: Request, response: Response) -> HealthReport:
        """Whether Neo4j answers: 200 with status "ok", or 503 with status "unavailable". Needs no
        key; the reason it is unavailable is given to a caller with the key only."""
        # The key is read here rather than declared: this endpoint is open, its schema says so.
        report = await run_in_threadpool(check_health)
        if report.status != "ok":
            response.status_code = 503
            if not authorised(await bearer(request)):
                report.detail = None
        return report

    def check_health() -> HealthReport:
        try:
            base = pool.base()
        except Exception as exc:
            error = api_error(exc)
            detail = error.detail if error is not None else f"opening the knowledge base failed ({type(exc).__name__})"
            return HealthReport(status="unavailable", neo4j=False, namespace=None, detail=detail)
        answers = base.gateway.answers()
        return HealthReport(status="ok" if answers else "unavailable", neo4j=answers, namespace=base.namespace,
                            detail=None if answers else "Neo4j did not answer a trivial query")

    return app


# -- serving ------------------------------------------------------------------------------------------


@contextmanager
def _stopping_is_success() -> Iterator[None]:
    """After a graceful shutdown on SIGINT or SIGTERM, uvicorn raises the signal again for the
    handler that was in place before it (by default: KeyboardInterrupt, or death by SIGTERM). A
    stop that was asked for and done is a success here: that handler only notes the signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda number, frame: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def serve(settings: Settings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, api_key: str | None = None,
          log_level: str = "info", announce: Callable[[str], None] = print) -> None:
    """Serves the HTTP API until SIGINT/SIGTERM. Checks the binding first (:func:`check_bind`),
    then opens the knowledge base so the first request does not wait for the model; a Neo4j that
    is not up yet is reported and tried again on each call (``/v1/health`` says 503 meanwhile)."""
    import uvicorn

    check_bind(host, api_key)
    sock = listen(host, port)
    try:
        source: KnowledgeBase | Callable[[], KnowledgeBase]
        owned: KnowledgeBase | None = None
        try:
            owned = source = KnowledgeBase.from_settings(settings)
        except Neo4jUnavailableError as exc:
            announce(f"kbgraph serve: Neo4j is not available yet ({one_line(str(exc))}); serving anyway: "
                     "/v1/health answers 503 and each call tries again")
            source = lambda: KnowledgeBase.from_settings(settings)  # noqa: E731
        bound_port = sock.getsockname()[1]
        announce(f"kbgraph serve: {_url(host, bound_port)} (OpenAPI at /docs), namespace {settings.namespace!r} "
                 f"unless a request's {NAMESPACE_HEADER} header names another; API key "
                 + ("required" if api_key is not None else "not required (loopback only)"))
        server = uvicorn.Server(uvicorn.Config(create_app(source, api_key), host=host, port=bound_port,
                                               log_level=log_level))
        try:
            with _stopping_is_success():
                server.run(sockets=[sock])
        finally:
            if owned is not None:
                owned.close()
        if not server.started:
            raise KbgraphError("the HTTP server did not start (see the messages above)")
    finally:
        sock.close()
