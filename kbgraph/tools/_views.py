"""The tools' answers: a search, an experience in full, an ingested trajectory, as pydantic views.

Published as the MCP tools' output schemas and the HTTP API's response models; the LangChain
tools send them as JSON. :mod:`kbgraph.tools._convert` fills them from kbgraph's own results.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from kbgraph.ingest.report import IngestReport

# Enough to follow a merged experience's provenance without flooding a model's context.
MAX_SOURCE_IDS_SHOWN = 50
MAX_PITFALLS_PER_HIT = 5


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
    experiences_new: int = Field(description="Experiences this call created (the report's experiences_new).")
    already_ingested: bool = Field(description="True when this trajectory id had been ingested before "
                                               "(nothing changed).")
    report: IngestReport

