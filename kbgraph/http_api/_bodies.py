"""The HTTP API's wire format: request bodies (strict, bounded), result and error models, the prefix and header.

The tools' endpoints take the contract's arguments (:mod:`kbgraph.tools`) as their bodies, so a
field means the same thing and is refused with the same words from every way in; the search takes
a few of kb.search's options more (:data:`SEARCH_EXTRAS`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from kbgraph.ingest.report import IngestReport
from kbgraph.search.params import MAX_K, SearchFilters, SearchWeights
from kbgraph.search.steps import StepHit
from kbgraph.tools import SearchExperiencesArgs, ToolArguments, TrajectoryInput

API_PREFIX = "/v1"
NAMESPACE_HEADER = "X-Kbgraph-Namespace"


class SearchExperiencesRequest(SearchExperiencesArgs):
    """The search_experiences tool's arguments, and over HTTP :meth:`KnowledgeBase.search`'s other
    options (:data:`kbgraph.tools.SEARCH_OPTIONS`)."""

    problem: str | None = Field(default=None, description="The problem alone, when you split the task in two "
                                                          "(task may then be blank).")
    goal: str | None = Field(default=None, description="The goal alone, when you split the task in two.")
    exclude: list[str] = Field(default_factory=list, description="Experience or trajectory ids never to return.")
    filters: SearchFilters | None = Field(default=None, description="Only some domains, kinds, minimum success …")
    weights: SearchWeights | None = Field(default=None, description="Retrieval weights for this call only.")


class StepSearchRequest(ToolArguments):
    """Step-wise retrieval (MAEL): :meth:`KnowledgeBase.search_steps`."""

    action: str = Field(description="The tool or operation about to be called.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments it will be called with.")
    text: str | None = Field(default=None, description="What the step means to do; built from action and "
                                                       "arguments when left out.")
    domain: str | None = Field(default=None, description="Only steps of experiences of this domain.")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private steps.")
    k: int = Field(default=5, ge=1, le=MAX_K, description=f"How many steps to return (at most {MAX_K}).")
    alpha: float | None = Field(default=None, ge=0.0, le=1.0,
                                description="Weight of similarity against reward (default: learning.step_alpha).")


class TrajectoryBatch(BaseModel):
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
    experiences_new: int = Field(description="Experiences this call created (the report's experiences_new).")
    # The name /v1 answered with before the tools' contract took the report's: kept for HTTP
    # clients that read it, until kbgraph 0.2.
    new_experiences: int = Field(deprecated="use experiences_new; new_experiences goes in kbgraph 0.2",
                                 description="Deprecated: the same as experiences_new.")
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

