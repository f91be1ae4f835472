"""The tools' inputs: what an agent passes to search, refine, record an outcome and add a trajectory.

Shared by the MCP tools, the HTTP API's request bodies and the LangChain tools, so every way in
takes the same arguments with the same descriptions (which a model reads to know what to pass).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kbgraph.search.params import MAX_QUERY_CHARS
from kbgraph.search.teacher import MAX_ACTION_CHARS, MAX_NAME_CHARS
from kbgraph.search.teacher import MAX_TEXT_CHARS as MAX_TEACHER_TEXT_CHARS

#: An experience id's length, as feedback takes it (kbgraph.learning.feedback.ExperienceId).
MAX_ID_CHARS = 128


class _Input(BaseModel):
    # Strict: a client's "yes" is not a success, nor "3" an order (lax parsing would read them so).
    # No NaN or infinity: a NaN reward was refused as "less than or equal to 1", which it is not.
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class ExecutedStep(_Input):
    """A step the agent has already executed in the current task."""

    action: str = Field(max_length=MAX_ACTION_CHARS, description="The tool or operation called, e.g. "
                                                                "'get_order_details'.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The arguments it was called with (values may be concrete).")
    error: str | None = Field(
        default=None, max_length=MAX_QUERY_CHARS,
        description="The error it returned, verbatim, when it failed; leave out if it worked. A last step that "
                    "failed brings back the runs that got past the same failure.")


class TakenStep(_Input):
    """A step executed in the current task, with its error when it failed."""

    action: str = Field(min_length=1, max_length=MAX_ACTION_CHARS,
                        description="The tool or operation called, e.g. 'update_reservation_flights'.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments it was called with.")
    error: str | None = Field(default=None, max_length=MAX_TEACHER_TEXT_CHARS,
                              description="The error it returned, verbatim; leave out if it worked.")
    issue_type: str | None = Field(
        default=None, max_length=MAX_NAME_CHARS,
        description="A short issue class such as 'not_found' or 'permission'; classified from the error when left out.")


class StepRewardInput(_Input):
    """How one step of a used experience went (per-step credit, MAEL)."""

    experience_id: str = Field(max_length=MAX_ID_CHARS, description="The experience whose step this is.")
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

