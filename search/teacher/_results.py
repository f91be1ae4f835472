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
    #: Cosine between the query's failure text and the nearest failure mode of the match's group
    #: (negative counts as 0).
    cosine: float
    issue_similarity: float
    #: ``cosine · issue_similarity · (0.5 + 0.5 · evidence)``, the evidence being
    #: ``(recovery_worked + 1) / (recovery_tried + 2)``, or 0 while ``recovery_worked`` is 0. Failures of the query's error class come
    #: first whatever their score (``same_class``), ranked by what worked (see ``refine``).
    score: float
    via: Literal["vector:failure_mode_embedding"] = VIA_FAILURE
    #: The error on that action with values masked: identical failure modes share it and are one match.
    signature: str | None = None
    #: The error whatever the action (the signature's message): what evidence is counted over;
    #: ``same_class`` when it is the query's.
    error_class: str | None = None
    same_class: bool = False
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
    #: The evidence for the recovery shown: how many failures of this error class, on any action,
    #: were followed by a recovery of its kind, and in how many of them the fix went through and
    #: the run then succeeded.
    recovery_tried: int = 0
    recovery_worked: int = 0

    @property
    def summary(self) -> str:
        """"seen 24 times in 6 tasks, recovered in 15 (the run then succeeded in 9); a retry worked 3 of
        4 times on this error (the fix went through and the run then succeeded)"."""
        times = "once" if self.seen == 1 else f"{self.seen} times"
        tasks = "1 task" if self.tasks == 1 else f"{self.tasks} tasks"
        text = f"seen {times} in {tasks}, recovered in {self.recovered} (the run then succeeded in {self.worked})"
        kind = _KIND_WORDS.get(self.recovery_kind or "")
        if kind and self.recovery_tried:
            times = "time" if self.recovery_tried == 1 else "times"
            text += (f"; {kind} worked {self.recovery_worked} of {self.recovery_tried} {times} on this error "
                     "(the fix went through and the run then succeeded)")
        return text


#: How the evidence of a recovery names its kind.
_KIND_WORDS: Final = {"retry": "a retry", "repeat": "repeating the call", "switch": "switching to another call"}


class RefineResults(BaseModel):
    """What :meth:`TeacherRetriever.refine` found.

    - ``steps``: up to ``k`` experiences per problematic step (each with its best-matching stored
      step), ordered by ``query_step``, then score (best first), then experience id.
    - ``failures``: up to ``k`` failure modes per problematic step that carries an error or issue
      type, ordered by ``query_step``, then those of the step's error class first (the recovery
      that worked, then a concrete one, then the kind that worked most often), then score.
    - ``experiences``: up to ``k`` experience ids over both channels, best first, ranked by
      ``max(step score, failure_weight · failure score)`` over every problematic step.
    - ``notes``: what was adjusted or could not be done (k clamped, issue types classified,
      over-fetch limit reached, failure channel skipped).
    """

    steps: list[StepMatch] = Field(default_factory=list)
    failures: list[FailureMatch] = Field(default_factory=list)
    experiences: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
