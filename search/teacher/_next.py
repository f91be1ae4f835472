"""What the runs that hit an error class did next, and whether they then reached their goal.

The teacher's answer to a failure is built from the runs that hit its error class (the same error,
values masked, on any action): for each run, what it did next (:func:`next_action`, one label per
form of recovery, whatever the arguments were) and whether the run then reached its goal.
:class:`ClassEvidence` counts them in runs, never in failure modes (a run that hit the error three
times is one run), and says it in those numbers: "after this error, 2 of 7 runs reached their goal;
what they did next: handed over to a person (1 run), retried the call with changed arguments
(1 run)". Whether the next call went through is a second fact: a call that went through in a run
that still failed taught nothing about reaching the goal.

Pure functions over the members of the error class's groups (:class:`~._rows.GroupBest`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kbgraph.core.generalise import humanise_action
from kbgraph.core.models import StatementRecord
from kbgraph.search.handoff import is_handoff
from kbgraph.search.teacher._rows import GroupBest

__all__ = ["ClassEvidence", "NextAction", "class_evidence", "next_action"]

RETRY: Final = "retried the call with changed arguments"
REPEAT: Final = "repeated the call unchanged"
HANDOVER: Final = "handed over to a person"
LOOK_UP: Final = "only looked things up, no further call"
NO_CALL: Final = "made no further call (answered the user or stopped)"
UNKNOWN: Final = "not recorded"
#: A switch whose tool is not known: the failure mode was stored before records were kept
#: (re-ingest its runs to name the tool), or given ready-made (its record names no tool).
ANOTHER_CALL: Final = "switched to another call"


def next_action(kind: str | None, record: StatementRecord | None, looked_up: bool | None = None) -> str:
    """The form of what a run did after a failure, from its recovery's ``kind`` and the failure
    mode's record and look-ups (:attr:`~kbgraph.core.models.FailureMode.record`, ``looked_up``):
    a retry with changed arguments, the same call unchanged, a handover to a person
    (:func:`~kbgraph.search.handoff.is_handoff` of the tool switched to), another tool (named), a
    look-up with no further call, or no further call at all. The arguments are detail, not form:
    every retry of a failure class is one form. Nothing is read from the recovery's words; a
    failure mode without a record (stored before records were kept) has its kind only."""
    if kind == "retry":
        return RETRY
    if kind == "repeat":
        return REPEAT
    if kind == "switch":
        tool = record.action if record is not None else ""
        if not tool:
            return ANOTHER_CALL
        return HANDOVER if is_handoff(tool) else f"switched to {humanise_action(tool)}"
    if kind == "none":
        return LOOK_UP if looked_up else NO_CALL
    return UNKNOWN


@dataclass(frozen=True)
class NextAction:
    """One form of what the runs did next: in how many runs, how many of them reached their goal,
    and in how many the call went through."""

    action: str
    runs: int
    reached_goal: int
    went_through: int

    def describe(self) -> str:
        runs = "1 run" if self.reached_goal == 1 else f"{self.reached_goal} runs"
        return f"{self.action} ({runs})"


def _run_key(member: GroupBest) -> str:
    return member.run_id or f"failure:{member.failure_id}"


@dataclass(frozen=True)
class ClassEvidence:
    """The runs that hit one error class, and what they did next."""

    runs: int = 0
    reached_goal: int = 0
    went_through: int = 0
    #: Runs where the call went through but the run did not reach its goal.
    went_through_failed: int = 0
    #: Every form, those that led to the goal in the most runs first.
    actions: tuple[NextAction, ...] = ()

    def reached(self, action: str) -> int:
        """In how many runs ``action`` came next and the run then reached its goal."""
        return next((a.reached_goal for a in self.actions if a.action == action), 0)

    @property
    def headline(self) -> str:
        """"after this error, 2 of 7 runs reached their goal; what they did next: …"."""
        if not self.runs:
            return "no run of this memory hit this error"
        text = f"after this error, {self.reached_goal} of {self.runs} run{'s' if self.runs != 1 else ''} reached their goal"
        led = [a for a in self.actions if a.reached_goal]
        if led:
            text += "; what they did next: " + ", ".join(a.describe() for a in led)
        return text

    @property
    def second_fact(self) -> str:
        """Whether the next call went through, said apart from the headline, with the forms that
        only made it go through: "the next call went through in 7 of 7 runs (5 of them still failed;
        in runs that still failed only: retried the call with changed arguments (5 runs))"."""
        failed = self.went_through_failed
        text = f"the next call went through in {self.went_through} of {self.runs} run{'s' if self.runs != 1 else ''}"
        if not failed:
            return text
        only = [a for a in self.actions if a.went_through and not a.reached_goal]
        text += f" ({failed} of them still failed"
        if only:
            text += "; in runs that still failed only: " + ", ".join(
                f"{a.action} ({a.went_through} run{'s' if a.went_through != 1 else ''})" for a in only)
        return text + ")"


def class_evidence(members: Iterable[GroupBest]) -> ClassEvidence:
    """Count the runs behind ``members`` (every failure mode of one error class): a run counts once
    per form it took, and once in the class, however often it hit the error."""
    runs: set[str] = set()
    reached: set[str] = set()
    through: set[str] = set()
    through_failed: set[str] = set()
    by_action: dict[str, tuple[set[str], set[str], set[str]]] = {}
    for member in members:
        run = _run_key(member)
        action = next_action(member.recovery_kind, member.record, member.looked_up)
        all_runs, goal, went = by_action.setdefault(action, (set(), set(), set()))
        runs.add(run)
        all_runs.add(run)
        if member.run_succeeded:
            reached.add(run)
            goal.add(run)
        if member.recovered:
            through.add(run)
            went.add(run)
            if not member.run_succeeded:
                through_failed.add(run)
    actions = sorted((NextAction(action, len(r), len(g), len(w)) for action, (r, g, w) in by_action.items()),
                     key=lambda a: (-a.reached_goal, -a.runs, a.action))
    return ClassEvidence(runs=len(runs), reached_goal=len(reached), went_through=len(through),
                         actions=tuple(actions), went_through_failed=len(through_failed))
