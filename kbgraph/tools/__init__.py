"""The agent tools' contract, shared by every way in: the MCP server, the HTTP API, LangChain, LangGraph.

One set of inputs (:mod:`~kbgraph.tools._inputs`: strict, described for a model), one set of
answers (:mod:`~kbgraph.tools._views`), one place where kbgraph's results become those answers
(:mod:`~kbgraph.tools._convert`, as neo4j-graphrag's ``convert_to_tool``) and one wording of
failures and refused arguments (:mod:`~kbgraph.tools._messages`). The ways in add only their
transport: MCP's tool errors, HTTP status codes, LangChain's ToolMessages.
"""

from __future__ import annotations

from kbgraph.tools._convert import (experience_details, experiences_holding, ingest_trajectory, parse_trajectory,
                                    read_experience, search_result, step_view, trajectory_payload)
from kbgraph.tools._inputs import (ExecutedStep, OutcomeInput, ProblematicStepInput, StepRewardInput, TrajectoryInput,
                                   TrajectoryStepInput)
from kbgraph.tools._messages import MAX_PROBLEMS_SHOWN, argument_problems, failure_message, json_type, one_line
from kbgraph.tools._views import (MAX_PITFALLS_PER_HIT, MAX_SOURCE_IDS_SHOWN, AddTrajectoryResult, ConceptDocumentHit,
                                  ExperienceDetails, ExperienceHit, PitfallView, RelationView, SearchExperiencesResult,
                                  StepDetails, StepView)

__all__ = [
    "MAX_PITFALLS_PER_HIT",
    "MAX_PROBLEMS_SHOWN",
    "MAX_SOURCE_IDS_SHOWN",
    "AddTrajectoryResult",
    "ConceptDocumentHit",
    "ExecutedStep",
    "ExperienceDetails",
    "ExperienceHit",
    "OutcomeInput",
    "PitfallView",
    "ProblematicStepInput",
    "RelationView",
    "SearchExperiencesResult",
    "StepDetails",
    "StepRewardInput",
    "StepView",
    "TrajectoryInput",
    "TrajectoryStepInput",
    "argument_problems",
    "experience_details",
    "experiences_holding",
    "failure_message",
    "ingest_trajectory",
    "json_type",
    "one_line",
    "parse_trajectory",
    "read_experience",
    "search_result",
    "step_view",
    "trajectory_payload",
]
