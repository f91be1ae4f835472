"""What :meth:`~kbgraph.search.teacher.TeacherRetriever.refine` returns: per problematic step, the
experiences with a step like it (each with every part of its score) and the failure modes like
its failure (each with how it was recovered), and the experiences ranked over both."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

VIA_STEP: Final = "vector:step_embedding"
VIA_FAILURE: Final = "vector:failure_mode_embedding"


class MatchedStep(BaseModel):
    """The stored step a problematic step matched."""

    model_config = ConfigDict(frozen=True)

    id: str
    order: int | None
    action: str
    text: str
    issue_type: str | None
    resolution_effectiveness: float | None


class StepScore(BaseModel):
    """Every part of a step-channel score: ``score = sim_step · issue_match · precision``."""

    model_config = ConfigDict(frozen=True)

    sim_func: float
    sim_exec: float
    sim_step: float
    issue_similarity: float
    #: ``issue_similarity · resolution effectiveness`` (the missing-value default when absent).
    issue_match: float
    precision: float
    score: float


class StepMatch(BaseModel):
    """An experience with a step like the problematic step ``query_step``, and why it matched."""

    model_config = ConfigDict(frozen=True)

    experience_id: str
    problem: str
    goal: str
    domain: str
    #: Index into the ``problematic_steps`` given to ``refine``.
    query_step: int
    step: MatchedStep
    breakdown: StepScore
    via: Literal["vector:step_embedding"] = VIA_STEP

    @property
    def score(self) -> float:
        return self.breakdown.score


class FailureMatch(BaseModel):
    """An experience that failed like the problematic step ``query_step``, and how it recovered."""

    model_config = ConfigDict(frozen=True)

    experience_id: str
    problem: str
    goal: str
    domain: str
    query_step: int
    failure_id: str
    description: str
    issue_type: str | None
    recovery: str
    step_order: int | None
    #: Cosine between the query's failure text and the failure mode (negative counts as 0).
    cosine: float
    issue_similarity: float
    #: ``cosine · issue_similarity · (0.5 + 0.5 · recovery value)``, the value of the group's best
    #: recovery: 1 concrete and followed by a run that succeeded, 2/3 a concrete retry, 1/3 another
    #: concrete recovery or a fix that went through, 0 none.
    score: float
    via: Literal["vector:failure_mode_embedding"] = VIA_FAILURE
    #: The error on that action with values masked: identical failure modes share it and are one match.
    signature: str | None = None
    #: Identical failure modes in the namespace: how many, in how many tasks, how many fixes went
    #: through, how many of those runs then succeeded, and the runs they come from.
    seen: int = 1
    tasks: int = 1
    recovered: int = 0
    worked: int = 0
    runs: list[str] = Field(default_factory=list)
    #: The recovery shown (the group's best): its kind, whether it is concrete, whether its fix went
    #: through and its run then succeeded, and which run it comes from.
    recovery_kind: str | None = None
    concrete: bool | None = None
    fix_recovered: bool | None = None
    run_succeeded: bool | None = None
    run_id: str | None = None

    @property
    def summary(self) -> str:
        """"seen 24 times in 6 tasks, recovered in 15 (the run then succeeded in 9)"."""
        times = "once" if self.seen == 1 else f"{self.seen} times"
        tasks = "1 task" if self.tasks == 1 else f"{self.tasks} tasks"
        return f"seen {times} in {tasks}, recovered in {self.recovered} (the run then succeeded in {self.worked})"


class RefineResults(BaseModel):
    """What :meth:`TeacherRetriever.refine` found.

    - ``steps``: up to ``k`` experiences per problematic step (each with its best-matching stored
      step), ordered by ``query_step``, then score (best first), then experience id.
    - ``failures``: up to ``k`` failure modes per problematic step that carries an error or issue
      type, in the same order.
    - ``experiences``: up to ``k`` experience ids over both channels, best first, ranked by
      ``max(step score, failure_weight · failure score)`` over every problematic step.
    - ``notes``: what was adjusted or could not be done (k clamped, issue types classified,
      over-fetch limit reached, failure channel skipped).
    """

    steps: list[StepMatch] = Field(default_factory=list)
    failures: list[FailureMatch] = Field(default_factory=list)
    experiences: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
