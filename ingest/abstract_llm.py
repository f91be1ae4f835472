"""Stage 2 with a model: an LLM reads one trajectory and writes the generalised experience.

The model answers a fixed JSON shape (:class:`AbstractionAnswer`); everything it cannot know —
domain, provenance, success, rewards — comes from the trajectory itself. An answer that is not
that shape, or that drops every step of a trajectory that has some, is asked again and in the
end reported as :class:`kbgraph.llm.LLMOutputError`; it is never turned into an experience.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from kbgraph.core.shapes import dispatched_tool
from kbgraph.ingest.failure_records import with_run_evidence
from kbgraph.llm import LLMClient, describe_validation_error
from kbgraph.core.models import (
    Difficulty,
    Experience,
    FailureMode,
    Name,
    ShortText,
    Step,
    Trajectory,
    TrajectoryStep,
    Unit,
)

# What the model sees of a trajectory. Long tool outputs are cut first; the limits halve until the
# whole text fits the budget (~10k tokens), so one huge observation cannot crowd out the steps.
PROMPT_BUDGET_CHARS = 40_000
TASK_CHARS = 6_000
FIELD_CHARS = {"arguments": 600, "thought": 400, "observation": 600, "error": 600}
MAX_SHOWN_STEPS = 60  # beyond this, only the first HEAD_STEPS and the last TAIL_STEPS are shown
HEAD_STEPS, TAIL_STEPS = 45, 15

SYSTEM_PROMPT = """\
You turn one AI agent's trajectory (a task, the tool calls it made, the outcome) into a reusable \
experience for a memory of agent workflows. Write it so it helps with any task of the same kind, \
not only this one.
- problem: the kind of problem, in one or two sentences, with no concrete names, ids, numbers, \
amounts, emails or urls.
- goal: what a successful outcome achieves, just as general.
- difficulty: easy, medium or hard.
- steps: one per tool call, in the order they were made (failed calls included). action is the \
exact tool name. text says what the step does, every concrete value replaced by a placeholder in \
braces named after what it is: {order_id}, {user_id}, {email}, {amount}, {url}, {date}. \
args_schema maps each argument name to its type (string, integer, number, boolean, list[string], \
object).
- failure_modes: what went wrong (errors, wrong states, dead ends) and how it was or could be \
recovered; issue_type is a short snake_case label; step_order is the 0-based index of the step \
where it happened, or null. Empty when nothing went wrong.
- generalizability: 0 to 1, how well this workflow transfers to other tasks of its kind.
If the task failed, still describe the workflow that was attempted and say in failure_modes why it \
failed."""


class _Answer(BaseModel):
    # Lenient on purpose: extra keys a model adds are ignored, "0.8" is read as 0.8.
    model_config = ConfigDict(extra="ignore")


class StepAnswer(_Answer):
    action: Name
    text: ShortText = ""
    args_schema: dict[str, str] = Field(default_factory=dict)

    @field_validator("args_schema", mode="before")
    @classmethod
    def _types_as_text(cls, value: Any) -> Any:
        # Models write {"item_ids": ["string"]} or {"n": null} as often as "list[string]".
        if value is None:
            return {}
        if isinstance(value, dict):
            return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
        return value


class FailureAnswer(_Answer):
    description: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=8_000)]
    issue_type: Name | None = None
    recovery: ShortText = ""
    step_order: Annotated[int, Field(ge=0)] | None = None


class AbstractionAnswer(_Answer):
    """One agent trajectory, abstracted into a reusable experience."""

    problem: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=20_000)]
    goal: Annotated[str, StringConstraints(strip_whitespace=True, max_length=20_000)]
    difficulty: Difficulty | None = None
    steps: list[StepAnswer]
    failure_modes: list[FailureAnswer] = Field(default_factory=list)
    generalizability: Unit | None = None


def clip(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def render_trajectory(trajectory: Trajectory, budget: int = PROMPT_BUDGET_CHARS) -> str:
    """The trajectory as the model reads it: task, numbered steps, outcome — within ``budget``."""
    scale = 1.0
    while True:
        text = _render(trajectory, scale)
        if len(text) <= budget or scale < 0.1:
            return text if len(text) <= budget else clip(text, budget)
        scale /= 2


def _render(trajectory: Trajectory, scale: float) -> str:
    limits = {name: max(80, int(chars * scale)) for name, chars in FIELD_CHARS.items()}
    lines = [f"Domain: {trajectory.domain}", "", "Task:", clip(trajectory.task, max(400, int(TASK_CHARS * scale)))]
    lines += ["", f"Tool calls ({len(trajectory.steps)}):"]
    indexed = list(enumerate(trajectory.steps))
    if len(indexed) > MAX_SHOWN_STEPS:
        # The start shows how the agent approached the task, the end how it finished.
        head, tail = indexed[:HEAD_STEPS], indexed[len(indexed) - TAIL_STEPS :]
        omitted = len(indexed) - HEAD_STEPS - TAIL_STEPS
        lines += [*_render_steps(head, limits), f"… {omitted} calls omitted …", *_render_steps(tail, limits)]
    else:
        lines += _render_steps(indexed, limits)
    outcome = "success" if trajectory.outcome.success else "failure"
    if trajectory.outcome.reward is not None:
        outcome += f" (reward {trajectory.outcome.reward:g})"
    lines += ["", f"Outcome: {outcome}"]
    return "\n".join(lines)


def _render_steps(indexed: list[tuple[int, TrajectoryStep]], limits: dict[str, int]) -> list[str]:
    lines: list[str] = []
    for index, step in indexed:
        lines.append(f"{index}. {step.action}")
        if step.arguments:
            arguments = json.dumps(step.arguments, ensure_ascii=False, default=str)
            lines.append("   arguments: " + clip(arguments, limits["arguments"]))
        for name in ("thought", "observation", "error"):
            value = getattr(step, name)
            if value:
                lines.append(f"   {name}: " + clip(" ".join(value.split()), limits[name]))
        if step.reward is not None:
            lines.append(f"   reward: {step.reward:g}")
    return lines


MIN_PROBLEM_WORDS = 3


def steps_out_of_order(actions: list[str], calls: list[str]) -> str | None:
    """Why ``actions`` are not the tool ``calls`` in the order they were made (calls may be left
    out: an answer cut to its complete steps is shorter), or None when they are."""
    remaining = iter(calls)
    for index, action in enumerate(actions):
        if action not in remaining:  # consumes the calls up to the match: order is enforced
            shown = ", ".join(calls[:12]) + (", …" if len(calls) > 12 else "")
            return (f"answer.steps.{index}.action: {action!r} is not the next tool call of the trajectory "
                    f"(its calls in order: {shown or 'none'})")
    return None


class LLMAbstractor:
    """The :class:`kbgraph.ingest.abstract.Abstractor` that asks a chat model."""

    name = "llm"

    def __init__(self, llm: LLMClient):
        self.llm = llm

    def abstract(self, trajectory: Trajectory) -> Experience:
        def check(answer: AbstractionAnswer) -> str | None:
            if trajectory.steps and not answer.steps:
                return f"answer.steps is empty but the trajectory has {len(trajectory.steps)} steps"
            # What a small model writes when it rambles: a label for a problem, the prompt copied
            # into steps, a step repeated. Well-formed JSON, but not this trajectory's experience.
            if len(answer.problem.split()) < MIN_PROBLEM_WORDS:
                return f"answer.problem: {answer.problem!r} is not a sentence describing the kind of problem"
            if problem := steps_out_of_order([s.action for s in answer.steps], [s.action for s in trajectory.steps]):
                return problem
            try:
                self._experience(trajectory, answer)
            except ValidationError as exc:
                return describe_validation_error(exc, root="experience")
            return None

        answer = self.llm.complete_json(SYSTEM_PROMPT, render_trajectory(trajectory), AbstractionAnswer, check)
        return self._experience(trajectory, answer)

    @staticmethod
    def _experience(trajectory: Trajectory, answer: AbstractionAnswer) -> Experience:
        # Rewards belong to tool calls; they can be carried over only when steps are calls one to one.
        same_steps = len(answer.steps) == len(trajectory.steps)
        worded = [
            FailureMode(
                description=f.description, issue_type=f.issue_type, recovery=f.recovery,
                # An index past the last step points nowhere; keep the failure, drop the pointer.
                step_order=f.step_order if f.step_order is not None and f.step_order < len(answer.steps) else None,
            )
            for f in answer.failure_modes
        ]
        issue_at = {f.step_order: f.issue_type for f in reversed(worded) if f.step_order is not None and f.issue_type}
        tools = _tools_called([s.action for s in answer.steps], trajectory)
        steps = [
            Step(
                action=s.action, tool=tools[i], text=s.text, args_schema=s.args_schema,
                reward=trajectory.steps[i].reward if same_steps else None,
                issue_type=issue_at.get(i),
            )
            for i, s in enumerate(answer.steps)
        ]
        # What the run shows of each errored call (its record, what was done next), in the model's words.
        failures = with_run_evidence(worded, steps, trajectory)
        return Experience(
            problem=answer.problem, goal=answer.goal, steps=steps, domain=trajectory.domain,
            difficulty=answer.difficulty, kind="concrete",
            success_rate=1.0 if trajectory.outcome.success else 0.0,
            generalizability=answer.generalizability, source=trajectory.source,
            source_ids=[trajectory.id], failure_modes=failures,
            failed_source_ids=[] if trajectory.outcome.success else [trajectory.id],
        )


def _tools_called(actions: list[str], trajectory: Trajectory) -> list[str | None]:
    """The tool each step of the answer called through a wrapper (``dispatched_tool``), read from
    the trajectory's call it stands for: the answer keeps the run's actions in order
    (``steps_out_of_order``), so each is paired with the next call of that action."""
    calls = iter(trajectory.steps)
    tools: list[str | None] = []
    for action in actions:
        call = next((c for c in calls if c.action == action), None)
        tools.append(dispatched_tool(call.action, call.arguments) if call is not None else None)
    return tools
