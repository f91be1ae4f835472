"""The HTTP API's endpoints: each one call of the namespace's KnowledgeBase, answered with kbgraph.tools' views.

:class:`Endpoints` registers a route under ``/v1`` with its OpenAPI answers (and, for a body, the
model :func:`~kbgraph.http_api._limits.body_problem` checks it against); :func:`add_routes` adds
the seven calls and :func:`add_health` the open health check, all over one :class:`NamespacePool`.
"""

# No ``from __future__ import annotations``: FastAPI reads the endpoints' annotations at run time,
# and the endpoints are closures over the application's namespace pool.
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar, cast

from fastapi import FastAPI, Header, Request, Response
from fastapi.params import Depends
from starlette.concurrency import run_in_threadpool

from kbgraph.http_api._bodies import (API_PREFIX, NAMESPACE_HEADER, AddTrajectoriesResult, ErrorResponse,
                                      HealthReport, IngestedTrajectory, SearchExperiencesRequest, StepSearchRequest,
                                      StepSearchResult, TrajectoryBatch)
from kbgraph.http_api._errors import ApiError, api_error, guarded
from kbgraph.http_api._limits import BodyModel
from kbgraph.http_api._pool import NamespacePool
from kbgraph.kb import KbStats
from kbgraph.learning.feedback import FeedbackReport
from kbgraph.tools import (AddTrajectoryArgs, AddTrajectoryResult, ExperienceDetails, GetExperienceArgs,
                           RecordOutcomeArgs, RefineStepsArgs, RefineStepsResult, SearchExperiencesResult,
                           TrajectoryInput, experiences_holding, run_tool, trajectory_payload)

T = TypeVar("T")
HEALTH_PATH = f"{API_PREFIX}/health"

Namespace = Annotated[str | None, Header(
    alias=NAMESPACE_HEADER, description="The namespace to work in; the server's own when left out.")]

ERRORS: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorResponse, "description": "Input refused (the field, or where the body stops being JSON); "
                                                 "nothing was done."},
    500: {"model": ErrorResponse, "description": "A failure inside kbgraph, in one line."},
    503: {"model": ErrorResponse, "description": "Neo4j (or the embedder) is unavailable."},
}
UNAUTHORISED: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "The API key is missing or wrong."}}


class Endpoints:
    """Adds endpoints to ``app`` under the API prefix. ``dependencies`` document the key in the
    OpenAPI schema (the key itself is checked by the application's middleware); ``bodies`` gets
    each endpoint's body model by the endpoint's name."""

    def __init__(self, app: FastAPI, dependencies: list[Depends], responses: dict[int | str, dict[str, Any]],
                 bodies: dict[str, BodyModel]):
        self.app = app
        self.dependencies = dependencies
        self.responses = responses
        self.bodies = bodies

    def __call__(self, method: str, path: str, name: str, body: BodyModel | None = None, tag: str = "search",
                 more_responses: dict[int | str, dict[str, Any]] | None = None
                 ) -> Callable[[Callable[..., T]], Callable[..., T]]:
        if body is not None:
            self.bodies[name] = body
        return self.app.api_route(f"{API_PREFIX}{path}", methods=[method], name=name, operation_id=name, tags=[tag],
                                  dependencies=self.dependencies,
                                  responses={**self.responses, **(more_responses or {})})


def add_routes(endpoint: Endpoints, pool: NamespacePool) -> None:
    """The contract's five tools (search, refine, feedback, one trajectory, one experience), and
    HTTP's own: step search, a list of trajectories, stats."""

    @endpoint("POST", "/search", "search_experiences", (SearchExperiencesRequest, False))
    def search_experiences(request: SearchExperiencesRequest, namespace: Namespace = None) -> SearchExperiencesResult:
        """The search_experiences tool: experiences that worked for tasks like this one, each with its
        steps, pitfalls and why it matched, plus concept documents. Pass ``steps_so_far`` while
        executing; ``problem``, ``goal``, ``exclude``, ``filters`` and ``weights`` are HTTP's own."""
        return cast(SearchExperiencesResult, guarded("search", lambda: run_tool(
            pool.get(namespace), "search_experiences", request)))

    @endpoint("POST", "/refine", "refine_steps", (RefineStepsArgs, False))
    def refine_steps(request: RefineStepsArgs, namespace: Namespace = None) -> RefineStepsResult:
        """The refine_steps tool: the plans matching the task and the steps taken, each with its next
        step and the pitfalls known there, and past failures like the failed steps with their recoveries."""
        return cast(RefineStepsResult, guarded("refine", lambda: run_tool(pool.get(namespace), "refine_steps", request)))

    @endpoint("POST", "/steps/search", "search_steps", (StepSearchRequest, False))
    def search_steps(request: StepSearchRequest, namespace: Namespace = None) -> StepSearchResult:
        """Stored steps like the one about to be taken, scored α·similarity + (1 − α)·reward."""
        return StepSearchResult(steps=guarded("steps search", lambda: pool.get(namespace).search_steps(
            request.action, request.arguments, text=request.text, domain=request.domain, agent=request.agent,
            k=request.k, alpha=request.alpha)))

    @endpoint("POST", "/feedback", "record_outcome", (RecordOutcomeArgs, False), "learning")
    def record_outcome(request: RecordOutcomeArgs, namespace: Namespace = None) -> FeedbackReport:
        """The record_outcome tool: what the agent did with search results and how the task ended:
        experiences that help rise in later searches, ones that do not sink. Unknown ids: 422,
        nothing written."""
        return cast(FeedbackReport, guarded("feedback", lambda: run_tool(pool.get(namespace), "record_outcome",
                                                                         request)))

    @endpoint("POST", "/trajectory", "add_trajectory", (AddTrajectoryArgs, False), "learning")
    def add_trajectory(request: AddTrajectoryArgs, namespace: Namespace = None) -> AddTrajectoryResult:
        """The add_trajectory tool: one run, ``{"trajectory": {…}}``, through the whole pipeline.
        Adding the same id again changes nothing."""
        return cast(AddTrajectoryResult, guarded("add trajectory", lambda: run_tool(
            pool.get(namespace), "add_trajectory", request)))

    @endpoint("POST", "/trajectories", "add_trajectories", (TrajectoryBatch, True), "learning")
    def add_trajectories(trajectories: list[TrajectoryInput], namespace: Namespace = None) -> AddTrajectoriesResult:
        """Ingests a JSON list of runs (kbgraph's trajectory format) through the whole pipeline:
        generalised into experiences, merged with look-alikes, linked, reflected into concept
        documents. All or nothing: one refused run (named ``trajectories[i]: field: reason``)
        and nothing is written. A run ingested before is skipped."""
        def work() -> AddTrajectoriesResult:
            kb = pool.get(namespace)
            # As sent: the same fingerprint as a file line.
            report = kb.add_trajectories([trajectory_payload(trajectory) for trajectory in trajectories])
            ids = list(dict.fromkeys(t.id for t in trajectories))
            # An experience may have been merged into a look-alike: its provenance names the run.
            holders = {tid: experiences_holding(kb, tid) for tid in ids}
            return AddTrajectoriesResult(
                trajectories=[IngestedTrajectory(trajectory_id=tid, experience_ids=holders[tid]) for tid in ids],
                experiences_new=report.experiences_new, new_experiences=report.experiences_new,
                already_ingested=report.records_already_ingested, report=report)

        return guarded("add trajectories", work)

    @endpoint("GET", "/experiences/{id}", "get_experience", tag="read",
              more_responses={404: {"model": ErrorResponse, "description": "No such experience."}})
    def get_experience(id: str, namespace: Namespace = None) -> ExperienceDetails:  # noqa: A002 - the tool's name
        """The get_experience tool (its ``id`` in the path): one experience in full, every step,
        failure modes and recoveries, relations, counters and learnt quality (no embeddings)."""
        return cast(ExperienceDetails, guarded("get experience", lambda: run_tool(
            pool.get(namespace), "get_experience", GetExperienceArgs(id=id))))

    @endpoint("GET", "/stats", "stats", tag="read")
    def stats(namespace: Namespace = None) -> KbStats:
        """Counts of the namespace: experiences by status, kind and domain; nodes; relationships."""
        return guarded("stats", lambda: pool.get(namespace).stats())


def add_health(app: FastAPI, pool: NamespacePool, key_given: Callable[[Request], Awaitable[bool]]) -> None:
    """``GET /v1/health``, open to all; ``key_given`` tells whether a request carries the key."""

    @app.get(HEALTH_PATH, name="health", operation_id="health", tags=["operations"],
             responses={503: {"model": HealthReport, "description": "Neo4j does not answer."}})
    async def health(request: Request, response: Response) -> HealthReport:
        """Whether Neo4j answers: 200 with status "ok", or 503 with status "unavailable". Needs no
        key; the reason it is unavailable is given to a caller with the key only."""
        # The key is read here rather than declared: this endpoint is open, its schema says so.
        report = await run_in_threadpool(check_health)
        if report.status != "ok":
            response.status_code = 503
            if not await key_given(request):
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
