"""Stage 2 — abstraction: one trajectory becomes one experience ⟨π, γ, S, C, μ, F, R⟩.

Two implementations share the :class:`Abstractor` interface: :class:`RuleBasedAbstractor`
(default; offline and deterministic) and ``kbgraph.ingest.abstract_llm.LLMAbstractor``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, Protocol

from kbgraph.core.experience_rules import (
    SENTENCE_BREAK,
    classify_issue,
    effectiveness_of,
    failed_step_text,
    problem_from_task,
    stored_error,
)
from kbgraph.core.generalise import describe_step, generalise_text, humanise_action, type_name
from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.recovery import Recovery, error_signature, recovery_after
from kbgraph.core.shapes import changes_state, counted_tool, dispatched_tool
from kbgraph.ingest.failure_records import failed_step
from kbgraph.core.models import (
    MAX_TEXT_CHARS,
    STORED_OBSERVATION_CHARS,
    Difficulty,
    Experience,
    FailureMode,
    Step,
    Trajectory,
)


class Abstractor(Protocol):
    """Turns a raw trajectory into a generalised experience (ids and numbers as placeholders).

    The experience's ``source_ids`` must contain ``trajectory.id``; ``success_rate`` reflects the
    outcome. Raises :class:`kbgraph.core.errors.KbgraphError` subclasses on failure, never writes.
    """

    name: str

    def abstract(self, trajectory: Trajectory) -> Experience: ...


# -- the rule-based abstractor ---------------------------------------------------------------------

_QUESTION = re.compile(r"^(what|how|which|who|when|where|why|is|are|does|do|list|show|tell|find|get)\b", re.I)


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
    first = SENTENCE_BREAK.split(problem)[0]
    return ("Answer: " if _QUESTION.match(first) else "Complete: ") + first


def stored_observation(observation: str | None, names: Collection[str] = (), ids: Collection[str] = ()) -> dict[str, Any]:
    """A tool's result as a step keeps it: generalised, cut to STORED_OBSERVATION_CHARS, with the
    length it had (``observation_chars``), so a reader knows when it was cut."""
    if observation is None:
        return {}
    text = generalise_text(observation[: STORED_OBSERVATION_CHARS * 4], names, ids)
    cut = text if len(text) <= STORED_OBSERVATION_CHARS else text[: STORED_OBSERVATION_CHARS - 1] + "…"
    return {"observation": cut, "observation_chars": len(observation)}


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
                text = failed_step_text(text, stored_error(step.error, names, ids))
                failure = failed_step(trajectory, order, names, ids)
                effectiveness = effectiveness_of(bool(failure.recovered), bool(failure.run_succeeded))
                failures.append(failure)
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

