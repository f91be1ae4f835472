"""The five tools' arguments, one model per tool: what MCP, HTTP and LangChain all take.

Strict (no "yes" read as true, no "3" as 3), closed (a misspelt field is refused, not ignored),
bounded (depth, 64-bit integers, valid Unicode) and described for the model that fills them in.
Checks that span fields (a blank task with no steps) are worded with the caller's field names,
and a field renamed since kbgraph 0.1 is refused with its new name.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from kbgraph.core.models import MAX_NAME_CHARS, MAX_TEXT_CHARS
from kbgraph.core.value_bounds import within_bounds
from kbgraph.learning.feedback import MAX_IDS_PER_EVENT
from kbgraph.search.params import MAX_K, MAX_QUERY_CHARS, MAX_QUERY_STEPS
from kbgraph.tools._inputs import MAX_ID_CHARS, ExecutedStep, StepRewardInput, TakenStep, TrajectoryInput

#: The most steps one call takes (search's steps_so_far, refine's steps_taken).
MAX_STEPS = MAX_QUERY_STEPS

_AGENT = "Your agent name: also searches your private experiences."

#: An agent's or a domain's name, an experience id: as long as the Python API takes them
#: (SearchParams, FeedbackEvent), refused by field here, before anything runs.
Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
ExperienceIdText = Annotated[str, Field(max_length=MAX_ID_CHARS)]
_DOMAIN = "Your domain, e.g. 'airline'; experiences from other domains are discounted, not excluded."


class ToolArguments(BaseModel):
    # Strict: a model's "yes" is not a success, nor "3" a k; a misspelt "outcom" is refused rather
    # than ignored (it would record a task without its outcome).
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    #: Old argument names and what replaced them: refused with a line saying so.
    renamed: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _checked_first(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for old, new in cls.renamed.items():
                if old in data:
                    raise ValueError(f"{old} is now {new}")
        return within_bounds(data)  # before pydantic recurses into it


def _nothing_to_search_for(task: str, steps: list[Any] | None, steps_name: str, *others: str | None) -> None:
    if not task.strip() and not steps and not any(text and text.strip() for text in others):
        raise ValueError(f"task is blank: give the task in words, or {steps_name}")


def _k(default: int, what: str) -> Any:
    return Field(default=default, ge=1, le=MAX_K, description=f"{what} (at most {MAX_K}).")


class SearchExperiencesArgs(ToolArguments):
    """Student phase: what worked before for tasks like this one."""

    task: str = Field(max_length=MAX_QUERY_CHARS, description=(
        "The task you are about to do, in words (the user's request or your summary of it). May be blank only "
        "when steps_so_far is given."))
    domain: Name | None = Field(default=None, description=_DOMAIN)
    steps_so_far: list[ExecutedStep] | None = Field(
        default=None, max_length=MAX_STEPS, description="Steps you have already executed, in order; they shift the "
                                                        "match from the task description to the workflow.")
    k: int = _k(5, "How many experiences to return")
    agent: Name | None = Field(default=None, description=_AGENT)

    @model_validator(mode="after")
    def _something_to_search_for(self) -> SearchExperiencesArgs:
        _nothing_to_search_for(self.task, self.steps_so_far, "steps_so_far",
                               getattr(self, "problem", None), getattr(self, "goal", None))
        return self


class RefineStepsArgs(ToolArguments):
    """Teacher phase: what to do next, and how failures like yours were got past."""

    renamed = {"problematic_steps": "steps_taken (with task): every step taken, each failed one with its error"}

    task: str = Field(max_length=MAX_QUERY_CHARS, description=(
        "The task you are doing, in words (the text you searched with). May be blank only when steps_taken "
        "is given."))
    steps_taken: list[TakenStep] = Field(
        default_factory=list, max_length=MAX_STEPS,
        description="The steps you have executed so far, in order, each failed one with its error.")
    domain: Name | None = Field(default=None, description=_DOMAIN)
    k: int = _k(3, "How many matching plans, and recoveries per failed step")
    agent: Name | None = Field(default=None, description=_AGENT)

    @model_validator(mode="after")
    def _something_to_refine(self) -> RefineStepsArgs:
        _nothing_to_search_for(self.task, self.steps_taken, "steps_taken")
        return self


class RecordOutcomeArgs(ToolArguments):
    """What the agent did with the experiences shown, and how the task ended."""

    renamed = {"success": "outcome (true, false or a score in [0, 1])"}

    used: list[ExperienceIdText] = Field(max_length=MAX_IDS_PER_EVENT, description=(
        "Ids of the experiences you followed (from search_experiences or refine_steps); empty if none helped."))
    outcome: StrictBool | StrictFloat | StrictInt = Field(
        description="How the task ended: true/false, or a score in [0, 1] (0.5 or more counts as a success).")
    retrieved: list[ExperienceIdText] | None = Field(
        default=None, max_length=MAX_IDS_PER_EVENT,
        description="Ids of every experience you were shown (search_experiences' retrieved_ids); by default the "
                    "used ones.")
    task: str | None = Field(default=None, max_length=MAX_TEXT_CHARS, description=(
        "The task you were doing, in words (the text you searched with): the outcome is then remembered for tasks "
        "like it."))
    agent: Name | None = Field(default=None, description="Your agent name (updates your ability record).")
    domain: Name | None = Field(default=None, description="The task's domain; by default the one the used "
                                                         "experiences come from.")
    step_rewards: list[StepRewardInput] | None = Field(
        default=None, description="Optional credit for individual steps of the experiences you used.")

    @field_validator("outcome")
    @classmethod
    def _a_score(cls, value: bool | float) -> bool | float:
        if not isinstance(value, bool) and not 0.0 <= value <= 1.0:
            raise ValueError("must be true, false or a score in [0, 1]")
        return value


class AddTrajectoryArgs(ToolArguments):
    """A run to learn from."""

    trajectory: TrajectoryInput = Field(description="What an agent did on one task, step by step.")


class GetExperienceArgs(ToolArguments):
    """One experience, by id."""

    # Unbounded, as HTTP's GET /v1/experiences/{id} and kb.get take it: any other id is not found.
    id: str = Field(min_length=1, description="The experience id, as returned by search_experiences.")
