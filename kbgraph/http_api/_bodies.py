"""The HTTP API's wire format: request bodies (strict, bounded), result and error models, the prefix and header.

The bodies take the MCP tools' inputs (:mod:`kbgraph.tools`) for steps, rewards and trajectories,
so a field means the same thing and is refused with the same words from either way in.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, model_validator

from kbgraph.core.value_bounds import within_bounds
from kbgraph.ingest.report import IngestReport
from kbgraph.search.params import SearchFilters, SearchWeights
from kbgraph.search.steps import StepHit
from kbgraph.tools import ExecutedStep, ProblematicStepInput, StepRewardInput, TrajectoryInput

API_PREFIX = "/v1"
NAMESPACE_HEADER = "X-Kbgraph-Namespace"


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

