"""Stage 3 — reflection (BREW reflector): concept–insight pairs per trajectory.

Two implementations share the :class:`Reflector` interface: the rule-based one here and
``kbgraph.ingest.reflect_llm.LLMReflector``.
"""

from __future__ import annotations

from typing import Protocol

from kbgraph.ingest.generalise import humanise_action
from kbgraph.ingest.shapes import verb_of
from kbgraph.models import ConceptInsight, Experience, Trajectory


class Reflector(Protocol):
    """Reads a trajectory and the experience abstracted from it; returns what was learned, as
    (concept label, one-sentence insight) pairs. Concept labels are short noun phrases
    ("return a delivered item", "verify identity before account changes")."""

    name: str

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]: ...


class RuleBasedReflector:
    """Deterministic reflection from the workflow itself: one concept per state-changing operation
    (how it was done), one per failure (what went wrong and what recovered it), one for a failed
    outcome. Trajectories without steps teach nothing here."""

    name = "rules"

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]:
        pairs: list[ConceptInsight] = []
        lookups: list[str] = []
        seen: set[str] = set()
        for step in trajectory.steps:
            action = humanise_action(step.action)
            if verb_of(step.action) == "lookup":
                if action not in lookups:
                    lookups.append(action)
                continue
            if step.error or action in seen:
                continue
            seen.add(action)
            args = ", ".join(sorted(step.arguments)) or "no arguments"
            if lookups:
                text = f"To {action}, first {', then '.join(lookups)}, then call {step.action} with {args}."
            else:
                text = f"To {action}, call {step.action} with {args}."
            pairs.append(ConceptInsight(concept=action, insight=text))
        for failure in experience.failure_modes:
            order = failure.step_order
            known_step = order is not None and order < len(experience.steps)
            action = humanise_action(experience.steps[order].action) if known_step and order is not None else "a step"
            issue = (failure.issue_type or "error").replace("_", " ")
            pairs.append(ConceptInsight(
                concept=f"{issue} during {action}"[:200],
                insight=f"Pitfall: {action} can fail ({failure.description[:200]}); recovery: {failure.recovery[:200]}.",
            ))
        if trajectory.steps and not trajectory.outcome.success:
            last = humanise_action(trajectory.steps[-1].action)
            pairs.append(ConceptInsight(
                concept=last,
                insight=f"Pitfall: a task that ended with {last} failed; check the preconditions before trying it.",
            ))
        return pairs
