"""The LangChain tools' arguments: strict, described for the model that fills them in.

The MCP server's inputs (:mod:`kbgraph.tools`) where the tools take the same thing; refine_steps
and record_outcome take what an agent in a LangGraph loop has at hand (the steps taken, a success).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kbgraph.tools import ExecutedStep, TrajectoryInput


class ToolArguments(BaseModel):
    # Strict, as the MCP server's: a model's "yes" is not a success, nor "3" a k.
    model_config = ConfigDict(extra="forbid", strict=True)


class SearchExperiencesArgs(ToolArguments):
    task: str = Field(description="The task you are about to do, in words (the user's request or your summary of "
                                  "it). Must not be empty unless steps_so_far is given.")
    domain: str | None = Field(default=None, description="Your domain, e.g. 'airline'; experiences from other "
                                                         "domains are discounted, not excluded.")
    steps_so_far: list[ExecutedStep] | None = Field(
        default=None, description="Steps you have already executed, in order; they shift the match from the task "
                                  "description to the workflow.")
    k: int = Field(default=5, ge=1, description="How many experiences to return (at most 100).")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private experiences.")


class TakenStep(ToolArguments):
    """A step executed in the current task, with its error when it failed."""

    action: str = Field(description="The tool or operation called, e.g. 'update_reservation_flights'.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The arguments it was called with.")
    error: str | None = Field(default=None, description="The error it returned, verbatim; leave out if it worked.")


class RefineStepsArgs(ToolArguments):
    task: str = Field(description="The task you are doing, in words (the text you searched with).")
    steps_taken: list[TakenStep] = Field(
        default_factory=list, description="The steps you have executed so far, in order, each failed one with its "
                                          "error.")
    domain: str | None = Field(default=None, description="Your domain, e.g. 'airline'.")
    k: int = Field(default=3, ge=1, le=20, description="How many matching plans (and recoveries per failed step).")
    agent: str | None = Field(default=None, description="Your agent name: also searches your private experiences.")


class RecordOutcomeArgs(ToolArguments):
    used: list[str] = Field(description="Ids of the experiences you followed (from search_experiences or "
                                        "refine_steps); empty if none helped.")
    success: bool = Field(description="Whether the task was accomplished.")
    retrieved: list[str] | None = Field(
        default=None, description="Ids of every experience you were shown (search_experiences' retrieved_ids).")
    task: str | None = Field(default=None, description="The task you were doing, in words (the text you searched "
                                                       "with): the outcome is then remembered for tasks like it.")
    agent: str | None = Field(default=None, description="Your agent name (updates your ability record).")
    domain: str | None = Field(default=None, description="The task's domain; by default the one the used "
                                                         "experiences come from.")


class AddTrajectoryArgs(ToolArguments):
    trajectory: TrajectoryInput = Field(description="What an agent did on one task, step by step.")

