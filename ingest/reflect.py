"""Stage 3 — reflection (BREW reflector): concept–insight pairs per trajectory.

Two implementations share the :class:`Reflector` interface: the rule-based one here and
``kbgraph.ingest.reflect_llm.LLMReflector``, which has a model reword this one's lessons (their
records stay these).

The rule-based reflector learns what a run shows, filed under the operation it concerns (the
humanised action, e.g. "book reservation"), as records of what it says
(:class:`~kbgraph.core.models.StatementRecord`, worded by :func:`kbgraph.ingest.wording.sentence`)
that are the same whenever the lesson is the same, so that many runs add up to evidence (the pipeline stores, per insight, the runs and
tasks it came from, whether its fix went through and whether the run succeeded; documents show
those counts):

- **error → what the agent did next**, from every errored step and what followed it
  (:mod:`kbgraph.core.recovery`): "When book reservation fails with “payment amount does not
  add up, total price is #, but paid #”, the agent retried it with changed
  payment_methods[].amount" — or "… repeated it unchanged", "… switched to transfer to human
  agents", "… nothing was tried after it" — with the error's values masked and the changed
  arguments named, not their values. The sentence says what was done, never how it went: whether
  the next call went through (``worked``) and whether the run succeeded are the evidence of each
  run, added up and said beside it by the document ("the retried call went through in 4 of 4; the
  run still failed in all 4");
- **preconditions**, from runs that succeeded: what was read before a state change ("Before
  cancel reservation, get reservation details");
- **how**, from runs that succeeded: the call that made the change, with its argument names;
- **the agent's rules**, from its thoughts: a sentence that states a rule ("basic economy tickets
  cannot be cancelled", "… is only allowed within 24 hours"), not a plan ("I need to …"),
  generalised, filed under the state change it is about: the run's next change of the operation
  its "cannot / only / must" governs, else the one it names first ("it was created more than 24
  hours ago, so it cannot be canceled due to a change of plans" → cancel reservation), or the next
  change when it names none. A rule about an operation the run never went on to do is
  not kept (it would be filed under another action).

Runs without steps teach nothing here, and nothing is said that a run did not show.
"""

from __future__ import annotations

import re
from typing import Protocol

from kbgraph.core.generalise import generalise_text, humanise_action
from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.recovery import Recovery, recovery_after, trimmed_thought
from kbgraph.ingest.reflect_rules import rule_operation
from kbgraph.core.shapes import changes_state
from kbgraph.core.models import ConceptInsight, Experience, StatementRecord, Trajectory, TrajectoryStep
from kbgraph.ingest.wording import sentence


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
#: A number or an amount as the tool wrote it in its error ("total price is $1,204.50").
_NUMBER = re.compile(r"\$?\d[\d,]*(?:\.\d+)?")


def _masked(kind: str) -> str:
    return "#"


def masked_error(error: str, names: frozenset[str] = frozenset(), ids: frozenset[str] = frozenset()) -> str:
    """The error as an insight quotes it: generalised with every placeholder written ``#``, the
    other numbers and amounts of the error's own text ``#`` too, no "Error:" prefix."""
    text = _ERROR_PREFIX.sub("", generalise_text(error, names, ids, placeholder=_masked))
    text = _NUMBER.sub("#", text)
    return text.strip().rstrip(".")[:200]


def recovery_record(operation: str, error: str, recovery: Recovery) -> StatementRecord:
    """An error and what the agent did about it, as a record: the same whenever it did the same,
    and nothing about how it went (that is evidence, counted per run)."""
    if recovery.kind == "retry":
        paths = tuple(sorted({_INDEX.sub("[]", c.path) for c in recovery.changes}))
        return StatementRecord(kind="recovery", operation=operation, error=error, recovery="retry",
                               changed=(paths,) if paths else ())
    if recovery.kind == "switch" and recovery.action:
        return StatementRecord(kind="recovery", operation=operation, error=error, recovery="switch",
                               action=recovery.action)
    return StatementRecord(kind="recovery", operation=operation, error=error,
                           recovery="repeat" if recovery.kind == "repeat" else "none")


def _thought_rules(step: TrajectoryStep, names: frozenset[str], ids: frozenset[str]) -> list[str]:
    texts = [step.thought or ""]
    if step.action == "think" and isinstance(step.arguments.get("thought"), str):
        texts.append(str(step.arguments["thought"]))
    rules: list[str] = []
    for text in texts:
        for sentence in _SENTENCES.split(text.strip()):
            if _RULE.search(sentence) and not _PLAN.match(sentence) and 20 <= len(sentence) <= 300:
                rule = trimmed_thought(sentence, names, ids)
                # One that opens on a placeholder ("{name} is not eligible …") is about one case.
                if rule is not None and not rule.opens_with_placeholder():
                    rules.append(rule.text)
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

        def add(concept: str, record: StatementRecord, worked: bool | None = None) -> None:
            insight = sentence(record)
            if (concept, insight) not in seen:
                seen.add((concept, insight))
                pairs.append(ConceptInsight(concept=concept[:200], insight=insight, worked=worked, record=record))

        read: dict[str, str] = {}  # look-ups so far, humanised → the first action so named
        rules = 0
        for index, step in enumerate(steps):
            operation = humanise_action(step.action)
            operates = changes_state(step.action)
            if step.error:
                recovery = recovery_after(trajectory, index, names, ids)
                record = recovery_record(operation, masked_error(step.error, names, ids), recovery)
                # worked: the next call went through (None when nothing was tried).
                add(operation, record, worked=None if recovery.kind == "none" else recovery.recovered)
            if rules < RULES_PER_RUN:
                for rule in _thought_rules(step, names, ids):
                    about = rule_operation(rule, [s.action for s in steps[index:]])
                    if about is not None and rules < RULES_PER_RUN:
                        add(humanise_action(about), StatementRecord(kind="rule", operation=humanise_action(about),
                                                                    text=rule))
                        rules += 1
            if not operates:
                if step.action not in ("think", "calculate") and not step.error:
                    read.setdefault(humanise_action(step.action), step.action)
                continue
            if step.error or not trajectory.outcome.success:
                continue
            for lookup in read.values():
                add(operation, StatementRecord(kind="before", operation=operation, action=lookup))
            add(operation, StatementRecord(kind="how", operation=operation, action=step.action,
                                           arguments=tuple(sorted(step.arguments))))
        return pairs
