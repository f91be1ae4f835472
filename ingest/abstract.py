"""Stage 2 — abstraction: one trajectory becomes one experience ⟨π, γ, S, C, μ, F, R⟩.

Two implementations share the :class:`Abstractor` interface: :class:`RuleBasedAbstractor`
(default; offline and deterministic) and ``kbgraph.ingest.abstract_llm.LLMAbstractor``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, Protocol

from kbgraph.ingest.generalise import (
    describe_step,
    generalise_task,
    generalise_text,
    humanise_action,
    ids_in_trajectory,
    names_in_trajectory,
    type_name,
)
from kbgraph.ingest.recovery import Recovery, error_signature, recovery_after
from kbgraph.core.shapes import changes_state, counted_tool, dispatched_tool
from kbgraph.core.models import (
    MAX_TEXT_CHARS,
    STORED_OBSERVATION_CHARS,
    Difficulty,
    Experience,
    FailureMode,
    Step,
    Trajectory,
)
from kbgraph.core.models.experience import TRANSIENT_ISSUES


class Abstractor(Protocol):
    """Turns a raw trajectory into a generalised experience (ids and numbers as placeholders).

    The experience's ``source_ids`` must contain ``trajectory.id``; ``success_rate`` reflects the
    outcome. Raises :class:`kbgraph.core.errors.KbgraphError` subclasses on failure, never writes.
    """

    name: str

    def abstract(self, trajectory: Trajectory) -> Experience: ...


# -- the rule-based abstractor ---------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Role-play framing and personality lists say who the user is, not what the task is.
_PERSONA = re.compile(
    r"^(you are (playing the role|(\w+, )+\w+\.?$)|your character is|your name is|you are a person)",
    re.IGNORECASE,
)
_LEADING_CONTACT = re.compile(r"^\s*(\{email\}|\{id\})[.:,]?\s*")
_QUESTION = re.compile(r"^(what|how|which|who|when|where|why|is|are|does|do|list|show|tell|find|get)\b", re.I)
PROBLEM_CHARS = 600

_ISSUE_RULES = [
    # A failure of the moment (an overloaded or unreachable service), not of the call: first, so
    # that "429 Too Many Requests" is not a limit of the task's. Its issue types are TRANSIENT_ISSUES.
    ("transient", ("503", "502", "504", "429", "service unavailable", "temporarily unavailable", "bad gateway",
                   "gateway timeout", "too many requests", "rate limit", "try again later", "connection reset",
                   "connection refused")),
    ("not_found", ("not found", "no such", "does not exist", "doesn't exist", "unknown", "404")),
    ("permission_denied", ("permission", "forbidden", "unauthori", "not allowed", "denied", "403")),
    ("timeout", ("timeout", "timed out", "time out")),
    ("limit_exceeded", ("limit", "exceed", "insufficient", "quota", "too many")),
    ("conflict", ("already", "conflict", "duplicate")),
    ("wrong_state", ("cannot be", "can't be", "not eligible", "status", "pending", "expired")),
    ("invalid_argument", ("invalid", "missing", "required", "must", "malformed", "bad request")),
]


def classify_issue(error: str) -> str:
    """A coarse issue type for an error message (what the teacher phase matches on)."""
    # Compare without spaces or underscores too, so "UserNotFound" matches "not found".
    lowered = error.lower()
    compact = re.sub(r"[\s_-]", "", lowered)
    for issue, cues in _ISSUE_RULES:
        if any(cue in lowered or cue.replace(" ", "") in compact for cue in cues):
            return issue
    return "error"


def failed_for_the_moment(error: str) -> bool:
    """The error is of a call that failed for a reason of the moment (its issue type is one of
    :data:`~kbgraph.core.models.experience.TRANSIENT_ISSUES`): what a stored step's
    ``failed_for_the_moment`` says, for an error not yet classified (a query's executed step)."""
    return classify_issue(error) in TRANSIENT_ISSUES


def problem_from_task(task: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str:
    """The task in general terms: role-play, persona and identity sentences dropped, what
    identifies a person or a record as placeholders (``names``/``ids``: the trajectory's, see
    :func:`kbgraph.ingest.generalise.names_in_trajectory`)."""
    text = _LEADING_CONTACT.sub("", generalise_task(task, names, ids))
    kept = [s for s in _SENTENCE_END.split(text) if s.strip() and not _PERSONA.match(s.strip())]
    problem = ""
    for sentence in kept or [text]:
        if problem and len(problem) + len(sentence) > PROBLEM_CHARS:
            break
        problem = f"{problem} {sentence}".strip()
    return problem[:PROBLEM_CHARS] or text[:PROBLEM_CHARS] or "(empty task)"


def goal_from(trajectory: Trajectory, problem: str) -> str:
    """What success means: the state changes made, in order; or the answer sought. A generic call
    counts as the tool it called (:func:`~kbgraph.core.shapes.dispatched_tool`)."""
    tools = [counted_tool(s.action, s.arguments) for s in trajectory.steps]
    changes = [humanise_action(t) for s, t in zip(trajectory.steps, tools, strict=True)
               if not s.error and changes_state(t)]
    changes = list(dict.fromkeys(changes))
    if changes:
        return "Get done: " + ", then ".join(changes)
    lookups = list(dict.fromkeys(humanise_action(t) for t in tools))
    if lookups:
        return "Find out, using: " + ", ".join(lookups)
    first = _SENTENCE_END.split(problem)[0]
    return ("Answer: " if _QUESTION.match(first) else "Complete: ") + first


def stored_observation(observation: str | None, names: Collection[str] = (), ids: Collection[str] = ()) -> dict[str, Any]:
    """A tool's result as a step keeps it: generalised, cut to STORED_OBSERVATION_CHARS, with the
    length it had (``observation_chars``), so a reader knows when it was cut."""
    if observation is None:
        return {}
    text = generalise_text(observation[: STORED_OBSERVATION_CHARS * 4], names, ids)
    cut = text if len(text) <= STORED_OBSERVATION_CHARS else text[: STORED_OBSERVATION_CHARS - 1] + "…"
    return {"observation": cut, "observation_chars": len(observation)}


#: The most characters of a failed step's error the memory stores.
STORED_ERROR_CHARS = 300


def stored_error(error: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str:
    """A failed step's error as the memory stores it: generalised, at most STORED_ERROR_CHARS."""
    return generalise_text(error, names, ids)[:STORED_ERROR_CHARS]


def failed_step_text(text: str, error: str) -> str:
    """A failed step's text: its description, then the stored error. A query's failed step is
    embedded from the same text, so it meets the stored one."""
    return f"{text} — failed: {error}"


def resolution_effectiveness(recovery: Recovery) -> float:
    """How well a failed step was resolved (Agent KB's resolution effectiveness): see
    :func:`effectiveness_of`."""
    return effectiveness_of(recovery.recovered, recovery.run_succeeded)


def effectiveness_of(recovered: bool, run_succeeded: bool) -> float:
    """1 when the fix went through and the run succeeded, 0.75 when the run succeeded another way,
    0.5 when the fix went through but the run still failed, 0 when nothing resolved it."""
    if run_succeeded:
        return 1.0 if recovered else 0.75
    return 0.5 if recovered else 0.0


def difficulty_of(step_count: int) -> Difficulty | None:
    if step_count == 0:
        return None
    return "easy" if step_count <= 2 else "medium" if step_count <= 6 else "hard"


class RuleBasedAbstractor:
    """Deterministic, offline abstraction (the default)."""

    name = "rules"

    def abstract(self, trajectory: Trajectory) -> Experience:
        raw = trajectory.steps
        steps: list[Step] = []
        failures: list[FailureMode] = []
        names, ids = names_in_trajectory(trajectory), ids_in_trajectory(trajectory)
        for order, step in enumerate(raw):
            tool = dispatched_tool(step.action, step.arguments)
            text = describe_step(step.action, step.arguments)
            issue = classify_issue(step.error) if step.error else None
            signature = error_signature(step.action, step.error, step.arguments) if step.error else None
            effectiveness = None
            if step.error:
                error = stored_error(step.error, names, ids)
                text = failed_step_text(text, error)
                recovery = recovery_after(trajectory, order, names, ids)
                effectiveness = resolution_effectiveness(recovery)
                failures.append(FailureMode(
                    description=f"{humanise_action(tool or step.action)} failed: {error}",
                    issue_type=issue, recovery=recovery.text[:MAX_TEXT_CHARS], step_order=order,
                    action=step.action, signature=signature,
                    recovery_kind=recovery.kind, recovered=recovery.recovered, concrete=recovery.concrete,
                    run_id=trajectory.id, run_succeeded=trajectory.outcome.success,
                ))
            steps.append(Step(
                order=order, action=step.action, tool=tool,
                text=text[:MAX_TEXT_CHARS],
                args_schema={name: type_name(value) for name, value in sorted(step.arguments.items())},
                reward=step.reward, issue_type=issue, resolution_effectiveness=effectiveness, signature=signature,
                **stored_observation(step.observation, names, ids),
            ))
        problem = problem_from_task(trajectory.task, names, ids)
        errored = sum(1 for s in raw if s.error)
        return Experience(
            problem=problem,
            goal=goal_from(trajectory, problem),
            domain=trajectory.domain,
            difficulty=difficulty_of(len(raw)),
            steps=steps,
            failure_modes=failures,
            success_rate=1.0 if trajectory.outcome.success else 0.0,
            efficiency=round(1.0 - errored / len(raw), 4) if raw else None,
            source=trajectory.source,
            source_ids=[trajectory.id],
            failed_source_ids=[] if trajectory.outcome.success else [trajectory.id],
        )

