"""What a student search returns: experiences that explain their scores, and concept documents."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from kbgraph.core.models import Experience, RelationType

__all__ = ["AskMatch", "ConceptHit", "FailedAttempt", "PathHop", "ScoreBreakdown", "SearchHit", "SearchResults", "WorkflowRuns"]


class AskMatch(BaseModel):
    """One ask of a request without executed steps and the operation of the result's workflow that
    answers it best (kbgraph.search.student.intent): "cancel my order" → ``cancel_pending_order``."""

    ask: str
    operation: str
    #: Cosine of the ask with the operation's words (of the whole request with every operation's
    #: words read together, for a request of one ask).
    similarity: float


class ScoreBreakdown(BaseModel):
    """The parts of one result's score (docs/design.md §3). Similarities are cosines clamped to [0, 1].

    ``textual`` = (1−α)·semantic + α·lexical; ``coarse`` = (1−ω)·textual + ω·structural;
    ``stage`` = λ·coarse + (1−λ)·fine; ``direct`` = stage · trans · success_factor + β·support,
    then blended with quality and scaled by ``utility_factor`` = (1−w_u) + w_u·utility, utility
    being Agent KB D.3's learnt, time-decayed value (see :func:`kbgraph.search.scoring.direct_scores`),
    and by ``context`` = exp(w·evidence), the outcomes this experience had on tasks like this one
    (``outcomes`` of them counted; see :func:`kbgraph.search.scoring.outcome_evidence`).
    A result reached over edges scores ``path`` = score(seed) · Π w(edge)·w(type) · δ^hops · trans;
    ``final`` is the larger of ``direct`` and ``path``.

    For a request without executed steps, ``intent`` is how well the result's workflow does what the
    request asks (:func:`kbgraph.search.scoring.intent_match`), mixed into ``coarse`` with weight
    ``intent_weight``; ``asks`` says which operation answers each ask; ``intent_learnt`` is the part
    of ``intent`` the namespace's own history added (:func:`kbgraph.search.scoring.history_association`).
    """

    semantic: float = 0.0
    structural: float | None = None
    coarse: float = 0.0
    fine: float | None = None
    lam: float = 1.0
    stage: float = 0.0
    lexical: float = 0.0
    textual: float = 0.0
    trans: float = 1.0
    success: float = 1.0
    support: float = 0.0
    #: How often its way solved its task, relative to the way that solved it most often (1 for that way).
    share: float = 1.0
    #: Its way hands the task to a human: its successes count at ``handoff_credit`` (in ``success``, ``share``).
    handed_off: bool = False
    #: The result hands the task to a human and the request asked for one (its successes count in full).
    human_asked: bool = False
    quality: float = 0.5
    utility: float | None = None
    utility_factor: float = 1.0
    context: float = 1.0
    outcomes: int = 0
    intent: float | None = None
    asks: list[AskMatch] | None = None
    intent_learnt: float | None = None
    direct: float = 0.0
    #: An abstract experience's score from its best instance that worked (``workflow_score``).
    workflow: float | None = None
    path: float | None = None
    hops: int = 0
    final: float = 0.0


class PathHop(BaseModel):
    """One edge of the path that brought a result in, read from the seed outwards."""

    relation: RelationType
    #: ``out``: the edge points from the previous node to this one; ``in``: the reverse.
    direction: Literal["out", "in"]
    from_id: str
    to_id: str
    weight: float
    reason: str = ""


class WorkflowRuns(BaseModel):
    """How often a workflow worked: over every run of its instances (the abstract experience of
    the hit's workflow, or the hit itself when it is one; for an experience whose workflow no other
    experience shares, its own runs)."""

    id: str
    runs: int
    succeeded: int
    #: Distinct tasks (problems) among those runs.
    tasks: int


class FailedAttempt(BaseModel):
    """A run (or several merged) that attempted the hit's task and failed: what it did, and where it
    went wrong. Shown with the way that worked, never as an example to follow."""

    id: str
    problem: str
    runs: int
    #: Its actions, in order.
    actions: list[str]
    #: What went wrong, with how it was recovered (its failure modes), when its steps errored.
    failures: list[str] = Field(default_factory=list)
    #: Cosine between its problem+goal and the hit's.
    similarity: float


class SearchHit(BaseModel):
    """One experience with its score and how it was found."""

    rank: int
    id: str
    score: float
    experience: Experience
    breakdown: ScoreBreakdown
    #: Which indexes or edges brought it in: ``vector:experience_pg_embedding``,
    #: ``vector:experience_structure_embedding``, ``fulltext:experience_text``,
    #: ``vector:step_embedding``, ``edge:ABSTRACTION``, …
    found_by: list[str]
    #: The path from the seed when the score came from traversal (empty for a direct hit).
    path: list[PathHop] = Field(default_factory=list)
    seed_id: str | None = None
    #: The runs the experience stands for, and how many of them succeeded ("worked in n of m runs").
    runs: int = 0
    runs_succeeded: int = 0
    #: How often its workflow worked across tasks (None for an experience that stands for no run).
    workflow: WorkflowRuns | None = None
    #: Runs of the same task that failed (most similar first).
    failed_attempts: list[FailedAttempt] = Field(default_factory=list)


class ConceptHit(BaseModel):
    """A meta-concept document close to the task (BREW retrieves the top documents)."""

    id: str
    name: str
    score: float
    document: str
    concepts: int = 0
    experiences: int = 0


class SearchResults(BaseModel):
    query: str
    hits: list[SearchHit]
    concepts: list[ConceptHit]
    #: Anything the caller should know: a clamped k, an over-fetch that fell back to a scan, …
    notes: list[str] = Field(default_factory=list)
    #: Milliseconds per stage (embedding is reported apart from retrieval).
    timings_ms: dict[str, float] = Field(default_factory=dict)
    candidates: int = 0

    def ids(self) -> list[str]:
        return [hit.id for hit in self.hits]
