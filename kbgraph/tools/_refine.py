"""refine_steps: the plans matching the task and the steps taken, each with its next step and the
pitfalls known there, and past failures like the failed steps with their recoveries.
"""

from __future__ import annotations


from pydantic import BaseModel, Field

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.models import FailureMode, Step
from kbgraph.kb import KnowledgeBase
from kbgraph.search.results import SearchHit
from kbgraph.search.teacher import RefineResults
from kbgraph.tools._arguments import RefineStepsArgs
from kbgraph.tools._convert import step_view
from kbgraph.tools._inputs import TakenStep
from kbgraph.tools._views import MAX_PITFALLS_PER_HIT, PitfallView, StepView

#: Steps of a plan shown after the next one in refine_steps (the rest is in search_experiences).
MAX_STEPS_AFTER_NEXT = 5


def evidence_line(hit: SearchHit) -> str:
    """How often a hit worked: 'worked in 3 of 4 runs', and over its workflow's tasks."""
    exp = hit.experience
    parts: list[str] = []
    if hit.runs:
        parts.append(f"worked in {hit.runs_succeeded} of {hit.runs} run{'s' if hit.runs != 1 else ''}")
    workflow = hit.workflow
    if workflow is not None and (workflow.id != hit.id or exp.kind == "abstract"):
        parts.append(f"this workflow worked in {workflow.succeeded} of {workflow.runs} runs over {workflow.tasks} "
                     f"task{'s' if workflow.tasks != 1 else ''}")
    if not parts:
        parts.append(f"success rate {exp.success_rate:.2f}")
    return "; ".join(parts)


class WayForward(BaseModel):
    """A stored plan for a task like this one, lined up with the steps taken: what comes next."""

    experience_id: str = Field(description="Pass it to record_outcome (used) if you follow it.")
    score: float
    problem: str
    evidence: str = Field(description="How often it worked, e.g. 'worked in 3 of 4 runs'.")
    steps_matched: int = Field(description="How far into its steps yours have got: up to its step that matched your "
                                           "last successful step (a failed step is not done).")
    next_step: StepView | None = Field(description="The step to take next; null when the plan is done.")
    then: list[StepView] = Field(description=f"Up to {MAX_STEPS_AFTER_NEXT} steps after the next one.")
    pitfalls: list[PitfallView] = Field(description="Known failures at the next step (this plan's, then those of the "
                                                    "same action in the other plans found), and how they were "
                                                    "recovered.")


class Recovery(BaseModel):
    """A past failure like one of your failed steps, and how it was recovered."""

    step: int = Field(description="Index (from 0) into steps_taken of the failed step it is about.")
    action: str
    description: str = Field(description="The past failure.")
    recovery: str = Field(description="What fixed it.")
    evidence: str = Field(description="How often it was seen and recovered.")
    experience_id: str
    score: float


class RefineStepsResult(BaseModel):
    next: list[WayForward] = Field(description="Plans for this task, best first, each with its next step.")
    recoveries: list[Recovery] = Field(description="For each failed step: past failures like it and their fixes.")
    retrieved_ids: list[str] = Field(description="Experience ids shown: pass them as 'retrieved' to record_outcome.")
    notes: list[str]


def _steps_matched(steps: list[Step], taken: list[str]) -> int:
    """How far the actions taken walk through a plan's actions, in order (others are skipped)."""
    position = 0
    for action in taken:
        found = next((i for i in range(position, len(steps)) if steps[i].action == action), None)
        if found is not None:
            position = found + 1
    return position


def _pitfalls_at(step: Step, own: list[FailureMode], found: list[SearchHit]) -> list[PitfallView]:
    """The failures known at ``step``: the plan's own at that step, then those of the same action in
    the other plans found (a pitfall seen in another task's run is still one to avoid here)."""
    mine = [f for f in own if f.step_order == step.order or (f.step_order is None and f.action == step.action)]
    others = [f for hit in found for f in hit.experience.failure_modes if f.action == step.action]
    # One per error (its signature: the same error on the same action, values masked), with the
    # recovery most worth copying: one from a run that then reached its goal.
    best: dict[str, FailureMode] = {}
    for failure in mine + others:
        key = failure.signature or failure.description
        if key not in best or _recovery_value(failure) > _recovery_value(best[key]):
            best[key] = failure
    return [PitfallView(description=f.description, issue_type=f.issue_type, recovery=f.recovery,
                        step_order=step.order) for f in list(best.values())[:MAX_PITFALLS_PER_HIT]]


def _recovery_value(failure: FailureMode) -> tuple[bool, bool, bool]:
    """What the run did next counts by whether the run then reached its goal, before whether the
    call went through (a call that went through in a run that still failed taught little)."""
    return bool(failure.run_succeeded), bool(failure.recovered), bool(failure.concrete)


def _way_forward(hit: SearchHit, taken: list[str], found: list[SearchHit]) -> WayForward:
    steps = hit.experience.steps
    done = _steps_matched(steps, taken)
    following = steps[done] if done < len(steps) else None
    return WayForward(
        experience_id=hit.id, score=round(hit.score, 4), problem=hit.experience.problem, evidence=evidence_line(hit),
        steps_matched=done, next_step=step_view(following) if following is not None else None,
        then=[step_view(s) for s in steps[done + 1: done + 1 + MAX_STEPS_AFTER_NEXT]],
        pitfalls=_pitfalls_at(following, hit.experience.failure_modes, found) if following is not None else [])


def _recoveries(refined: RefineResults, failed: list[int], taken: list[TakenStep]) -> list[Recovery]:
    return [
        Recovery(step=failed[match.query_step], action=taken[failed[match.query_step]].action,
                 description=match.description, recovery=match.recovery, evidence=match.summary,
                 experience_id=match.experience_id, score=round(match.score, 4))
        for match in refined.failures
    ]


def refine_steps(kb: KnowledgeBase, args: RefineStepsArgs, agent: str | None = None) -> RefineStepsResult:
    """What to do next in a task, given the steps taken so far: the plans that match the task and
    those steps (:meth:`KnowledgeBase.search` with ``steps_so_far``), each lined up with the steps
    to give its next step and the pitfalls known at it (in that plan, or at the same action in the
    others found); and, for the steps that failed, the past failures like them with their
    recoveries (:meth:`KnowledgeBase.refine`)."""
    executed = [{"action": s.action, "arguments": s.arguments} for s in args.steps_taken]
    results = kb.search(args.task, domain=args.domain, steps_so_far=executed, k=args.k, agent=agent)
    taken = [s.action for s in args.steps_taken if s.error is None]  # a failed step still has to be done
    failed = [i for i, s in enumerate(args.steps_taken) if s.error is not None]
    recoveries: list[Recovery] = []
    notes = list(results.notes)
    if failed:
        try:
            # kb.refine is given the failed steps alone; its problems and notes name each as the
            # caller numbers all the steps taken.
            refined = kb.refine([args.steps_taken[i].model_dump(exclude_none=True) for i in failed],
                                domain=args.domain, k=args.k, agent=agent, step_names=[f"steps_taken.{i}" for i in failed])
        except InvalidInputError as error:
            raise InvalidInputError(error.problems, "invalid steps_taken, nothing was done") from None
        recoveries = _recoveries(refined, failed, args.steps_taken)
        notes += refined.notes
    return RefineStepsResult(next=[_way_forward(hit, taken, results.hits) for hit in results.hits],
                             recoveries=recoveries, retrieved_ids=results.ids(), notes=notes)
