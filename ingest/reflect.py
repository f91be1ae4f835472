"""Stage 3 — reflection (BREW reflector): concept–insight pairs per trajectory.

Two implementations share the :class:`Reflector` interface: the rule-based one here and
``kbgraph.ingest.reflect_llm.LLMReflector``.

The rule-based reflector learns what a run shows, filed under the operation it concerns (the
humanised action, e.g. "book reservation"), in sentences that are the same whenever the lesson is
the same, so that many runs add up to evidence (the pipeline stores, per insight, the runs and
tasks it came from, whether its fix went through and whether the run succeeded; documents show
those counts):

- **error → fix**, from every errored step and what followed it (:mod:`kbgraph.ingest.recovery`):
  "When book reservation fails with “payment amount does not add up, total price is #, but paid
  #”, retrying it with changed payment_methods[].amount got past it" (the next call no longer hit
  that error) — or "… did not help", or
  "… the agent switched to transfer to human agents" — with the error's values masked and the
  changed arguments named, not their values;
- **preconditions**, from runs that succeeded: what was read before a state change ("Before
  cancel reservation, get reservation details");
- **how**, from runs that succeeded: the call that made the change, with its argument names;
- **the agent's rules**, from its thoughts: a sentence that states a rule ("basic economy tickets
  cannot be cancelled", "… is only allowed within 24 hours"), not a plan ("I need to …"),
  generalised, filed under the state change the run made next (none: not kept).

Runs without steps teach nothing here, and nothing is said that a run did not show.
"""

from __future__ import annotations

import re
from typing import Protocol

from kbgraph.ingest.generalise import generalise_text, humanise_action, ids_in_trajectory, names_in_trajectory
from kbgraph.ingest.recovery import Recovery, recovery_after, trim_thought
from kbgraph.core.shapes import verb_of
from kbgraph.core.models import ConceptInsight, Experience, Trajectory, TrajectoryStep


class Reflector(Protocol):
    """Reads a trajectory and the experience abstracted from it; returns what was learned, as
    (concept label, one-sentence insight) pairs. Concept labels are short noun phrases
    ("return a delivered item", "verify identity before account changes")."""

    name: str

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]: ...


#: A thought sentence that states a rule of the domain (what may or may not be done, and when)...
_RULE = re.compile(
    r"\b(cannot|can't|can not|not allowed|not eligible|is eligible|are eligible|must|policy|non-refundable|"
    r"not permitted|no more than|at most|unless|prohibit|only (?:if|when|within|be|allowed))", re.IGNORECASE)
#: ... and not a plan ("I need to …", "Let me …"), which is what the agent does next, not why.
_PLAN = re.compile(r"^\s*(i|let me|let's|we|now|next|first|then)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
#: Rules kept per run: the agent's reasoning repeats itself.
RULES_PER_RUN = 2
_ERROR_PREFIX = re.compile(r"^\s*error\s*:\s*", re.IGNORECASE)
_INDEX = re.compile(r"\[\d+\]")


def masked_error(error: str, names: frozenset[str] = frozenset(), ids: frozenset[str] = frozenset()) -> str:
    """The error as an insight quotes it: generalised, values as ``#``, no "Error:" prefix."""
    text = _ERROR_PREFIX.sub("", generalise_text(error, names, ids))
    text = re.sub(r"\{(?:id|number|name|email|url)\}|\$?\d[\d,]*(?:\.\d+)?", "#", text)
    return text.strip().rstrip(".")[:200]


def fix_phrase(recovery: Recovery) -> str:
    """What the agent did about an error, as a lesson: the same words whenever it did the same."""
    if recovery.kind == "retry":
        paths = sorted({_INDEX.sub("[]", c.path) for c in recovery.changes})
        what = ", ".join(paths[:4]) + (" and more" if len(paths) > 4 else "")
        return f"retrying it with changed {what}" if what else "retrying it"
    if recovery.kind == "repeat":
        return "repeating it unchanged"
    if recovery.kind == "switch" and recovery.action:
        return f"switching to {humanise_action(recovery.action)}"
    return "nothing"


def _thought_rules(step: TrajectoryStep, names: frozenset[str], ids: frozenset[str]) -> list[str]:
    texts = [step.thought or ""]
    if step.action == "think" and isinstance(step.arguments.get("thought"), str):
        texts.append(str(step.arguments["thought"]))
    rules: list[str] = []
    for text in texts:
        for sentence in _SENTENCES.split(text.strip()):
            if _RULE.search(sentence) and not _PLAN.match(sentence) and 20 <= len(sentence) <= 300:
                rule = trim_thought(sentence, names, ids)
                if rule and "{" not in rule.split()[0]:
                    rules.append(rule)
    return rules


class RuleBasedReflector:
    """Deterministic reflection on what a run shows (see the module docstring)."""

    name = "rules"

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]:
        steps = trajectory.steps
        if not steps:
            return []
        names, ids = names_in_trajectory(trajectory), ids_in_trajectory(trajectory)
        pairs: list[ConceptInsight] = []
        seen: set[tuple[str, str]] = set()

        def add(concept: str, insight: str, worked: bool | None = None) -> None:
            if (concept, insight) not in seen:
                seen.add((concept, insight))
                pairs.append(ConceptInsight(concept=concept[:200], insight=insight, worked=worked))

        read: list[str] = []
        rules = 0
        for index, step in enumerate(steps):
            operation = humanise_action(step.action)
            changes_state = verb_of(step.action) != "lookup"
            if step.error:
                recovery = recovery_after(trajectory, index, names, ids)
                error = masked_error(step.error, names, ids)
                phrase = fix_phrase(recovery)
                when = f"When {operation} fails with “{error}”"
                if recovery.kind == "none":
                    add(operation, f"{when}, nothing was tried after it.")
                elif recovery.kind == "switch":
                    add(operation, f"{when}, the agent switched to {humanise_action(recovery.action or '')}.",
                        worked=recovery.recovered)
                elif recovery.got_past:
                    # The next call no longer hit this error, whether it then went through or
                    # stopped at another error (a failure mode with its own insight): the lesson
                    # is the change, and runs that show it add up under one sentence.
                    add(operation, f"{when}, {phrase} got past it.", worked=True)
                else:
                    add(operation, f"{when}, {phrase} did not help.", worked=False)
            upcoming = next((humanise_action(s.action) for s in steps[index:] if verb_of(s.action) != "lookup"), None)
            if upcoming is not None and rules < RULES_PER_RUN:
                for rule in _thought_rules(step, names, ids)[: RULES_PER_RUN - rules]:
                    add(upcoming, f"Rule the agent applied: {rule}")
                    rules += 1
            if not changes_state:
                if step.action not in ("think", "calculate") and not step.error:
                    read.append(humanise_action(step.action))
                continue
            if step.error or not trajectory.outcome.success:
                continue
            for lookup in dict.fromkeys(read):
                add(operation, f"Before {operation}, {lookup}.")
            arguments = ", ".join(sorted(step.arguments)) or "no arguments"
            add(operation, f"To {operation}, call {step.action} with {arguments}.")
        return pairs
