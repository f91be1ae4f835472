"""The agent tools' contract, shared by every way in: the MCP server, the HTTP API, LangChain, LangGraph.

One list of tools (:mod:`~kbgraph.tools._contract`: name, description, arguments, answer, and
the one function that runs each), one set of arguments (:mod:`~kbgraph.tools._arguments`, built
from the inputs of :mod:`~kbgraph.tools._inputs`: strict, described for a model), one set of
answers (:mod:`~kbgraph.tools._views`, :mod:`~kbgraph.tools._refine`), one place where
kbgraph's results become those answers (:mod:`~kbgraph.tools._convert`, as neo4j-graphrag's
``convert_to_tool``) and one wording of failures and refused arguments
(:mod:`~kbgraph.tools._messages`). The ways in add only their transport: MCP's tool errors, HTTP
status codes, LangChain's ToolMessages.
"""

from __future__ import annotations

from kbgraph.tools._arguments import (MAX_STEPS, AddTrajectoryArgs, GetExperienceArgs, RecordOutcomeArgs,
                                      RefineStepsArgs, SearchExperiencesArgs, ToolArguments)
from kbgraph.tools._contract import (SEARCH_OPTIONS, SPECS, TOOL_NAMES, TOOLS, ToolSpec, UnknownExperienceError, arun_tool,
                                     kbgraph_version, run_tool)
from kbgraph.tools._convert import (experience_details, experiences_holding, ingest_trajectory, parse_trajectory,
                                    read_experience, search_result, step_view, trajectory_payload)
from kbgraph.tools._inputs import (ExecutedStep, OutcomeInput, StepRewardInput, TakenStep, TrajectoryInput,
                                   TrajectoryStepInput)
from kbgraph.tools._messages import MAX_PROBLEMS_SHOWN, argument_problems, failure_message, json_type, one_line
from kbgraph.tools._refine import Recovery, RefineStepsResult, WayForward, evidence_line, refine_steps
from kbgraph.tools._views import (MAX_PITFALLS_PER_HIT, MAX_SOURCE_IDS_SHOWN, AddTrajectoryResult, ConceptDocumentHit,
                                  ExperienceDetails, ExperienceHit, PitfallView, RelationView, SearchExperiencesResult,
                                  StepDetails, StepView)

__all__ = [
    "MAX_PITFALLS_PER_HIT",
    "MAX_PROBLEMS_SHOWN",
    "MAX_SOURCE_IDS_SHOWN",
    "MAX_STEPS",
    "SEARCH_OPTIONS",
    "SPECS",
    "TOOLS",
    "TOOL_NAMES",
    "AddTrajectoryArgs",
    "AddTrajectoryResult",
    "ConceptDocumentHit",
    "ExecutedStep",
    "ExperienceDetails",
    "ExperienceHit",
    "GetExperienceArgs",
    "OutcomeInput",
    "PitfallView",
    "RecordOutcomeArgs",
    "Recovery",
    "RefineStepsArgs",
    "RefineStepsResult",
    "RelationView",
    "SearchExperiencesArgs",
    "SearchExperiencesResult",
    "StepDetails",
    "StepRewardInput",
    "StepView",
    "TakenStep",
    "ToolArguments",
    "ToolSpec",
    "TrajectoryInput",
    "TrajectoryStepInput",
    "UnknownExperienceError",
    "WayForward",
    "argument_problems",
    "arun_tool",
    "evidence_line",
    "experience_details",
    "experiences_holding",
    "failure_message",
    "ingest_trajectory",
    "json_type",
    "kbgraph_version",
    "one_line",
    "parse_trajectory",
    "read_experience",
    "refine_steps",
    "run_tool",
    "search_result",
    "step_view",
    "trajectory_payload",
]
