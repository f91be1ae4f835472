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


class NextActionCount(BaseModel):
    """One form of what the runs of an error class did next (the arguments are detail, not form):
    in how many runs, in how many of them the run then reached its goal, and in how many the call
    went through."""

    model_config = ConfigDict(frozen=True)

    action: str
    runs: int
    reached_goal: int
    went_through: int


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
    #: The runs of this memory that hit this error class (on any action), how many of them then
    #: reached their goal, and what they did next (each form once, the forms that led to the goal
    #: in the most runs first); the form of the recovery shown.
    class_runs: int = 0
    class_reached_goal: int = 0
    next_actions: list[NextActionCount] = Field(default_factory=list)
    next_action: str | None = None
    #: The answer in the runs' numbers: "after this error, 2 of 7 runs reached their goal; what
    #: they did next: …", and apart from it whether the next call went through.
    headline: str = ""
    went_through: str = ""

    @property
    def led_to_goal(self) -> bool:
        """The recovery shown comes from a run that then reached its goal."""
        return bool(self.run_succeeded)

    @property
    def summary(self) -> str:
        """The headline, what the match shows, and only then whether calls went through: "after this
        error, 2 of 7 runs reached their goal; what they did next: handed over to a person (1 run),
        retried the call with changed arguments (1 run). Shown: handed over to a person, from a run
        that reached its goal. The next call went through in 5 of 7 runs (3 of them still failed);
        this failure seen 3 times in 2 tasks"."""
        times = "once" if self.seen == 1 else f"{self.seen} times"
        tasks = "1 task" if self.tasks == 1 else f"{self.tasks} tasks"
        parts = [self.headline] if self.headline else []
        if self.next_action:
            if self.run_succeeded:
                parts.append(f"Shown: {self.next_action}, from a run that reached its goal")
            elif self.fix_recovered:
                parts.append(f"Shown: {self.next_action}; it only made the call go through, the run still failed")
            else:
                parts.append(f"Shown: {self.next_action}; the run still failed")
        tail = f"this failure seen {times} in {tasks}"
        parts.append(f"{self.went_through[:1].upper()}{self.went_through[1:]}; {tail}" if self.went_through
                     else tail[:1].upper() + tail[1:])
        return ". ".join(parts)


class RefineResults(BaseModel):
    """What :meth:`TeacherRetriever.refine` found.

    - ``steps``: up to ``k`` experiences per problematic step (each with its best-matching stored
      step), ordered by ``query_step``, then score (best first), then experience id.
    - ``failures``: up to ``k`` failure modes per problematic step that carries an error or issue
      type, ordered by ``query_step``, then those of the step's error class first (a recovery from
      a run that then reached its goal, the form that led to the goal in the most runs first, then
      a concrete one; a recovery that only made the call go through in a run that still failed
      after all of them), then score.
    - ``experiences``: up to ``k`` experience ids over both channels, best first, ranked by
      ``max(step score, failure_weight · failure score)`` over every problematic step.
    - ``notes``: what was adjusted or could not be done (k clamped, issue types classified,
      over-fetch limit reached, failure channel skipped).
    """

    steps: list[StepMatch] = Field(default_factory=list)
    failures: list[FailureMatch] = Field(default_factory=list)
    experiences: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
