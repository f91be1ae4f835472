"""What a skill shows, as data: the runs it quotes, the errors of its own actions it lists as
pitfalls, the statements of its document it shows, and what its "when to use" claims.

The renderer (:mod:`kbgraph.skills.render`) words these; the audit (:mod:`kbgraph.audit`) holds
them against the evidence and records they come from (:func:`skill_shows`): neither reads the
other's text. Everything here is pure: the plan and the failure rows in, data out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kbgraph.core.generalise import humanise_action
from kbgraph.core.models import StatementRecord
from kbgraph.ingest.integrate_evidence import Statement
from kbgraph.ingest.reflect_rules import about_actions, verbs_named
from kbgraph.skills.names import cut, one_line
from kbgraph.skills.plan import ConceptDoc, FailureRow, Member, PlannedSkill

__all__ = ["DESCRIPTION_TASK_CHARS", "MAX_FAILED_EXAMPLES", "MAX_PITFALLS", "MAX_TASKS_SHOWN", "MAX_WORKED_EXAMPLES",
           "TASK_CHARS", "PitfallGroup", "SkillShows", "about_own_actions", "asked_verbs", "changes_nothing", "description_example",
           "document_of", "document_warnings", "example_tasks", "failed_examples", "own_pitfalls", "pitfall_groups",
           "runs_in", "shown_members", "skill_shows"]

#: What a skill shows at most: example tasks, pitfalls, example runs that worked / failed.
MAX_TASKS_SHOWN, MAX_PITFALLS, MAX_WORKED_EXAMPLES, MAX_FAILED_EXAMPLES = 3, 8, 3, 2
#: Characters of a task quoted in a skill; of the task its description quotes.
TASK_CHARS, DESCRIPTION_TASK_CHARS = 240, 200


def runs_in(skill: PlannedSkill) -> list[Member]:
    """Members whose runs worked, from the best way down, one per task first."""
    ordered = [m for w in skill.ways for m in sorted(w.members, key=lambda m: (-m.worked, -m.runs, m.id)) if m.worked]
    first_per_task: dict[str, Member] = {}
    for member in ordered:
        first_per_task.setdefault(member.task_key, member)
    shown = {m.id for m in first_per_task.values()}
    return [*first_per_task.values(), *(m for m in ordered if m.id not in shown)]


def failed_examples(skill: PlannedSkill, failures: Mapping[str, Sequence[FailureRow]]) -> list[Member]:
    """Members none of whose runs worked and that recorded what went wrong, most runs first."""
    failed = [m for m in skill.members if not m.worked and failures.get(m.id)]
    return sorted(failed, key=lambda m: (-m.runs, m.id))[:MAX_FAILED_EXAMPLES]


def shown_members(skill: PlannedSkill, failures: Mapping[str, Sequence[FailureRow]]) -> list[Member]:
    """The experiences whose steps a skill shows: its best way's representative and the example runs."""
    return [skill.ways[0].representative, *runs_in(skill)[:MAX_WORKED_EXAMPLES], *failed_examples(skill, failures)]


@dataclass(frozen=True)
class PitfallGroup:
    """The failure modes of one action with one (masked) error, and the best thing tried after it."""

    action: str
    error: str
    times: int
    runs: int
    #: Times the next call went through; runs that then succeeded.
    got_past: int
    run_succeeded: int
    best: FailureRow
    #: The failure modes it stands for (its evidence).
    rows: tuple[FailureRow, ...] = ()


def pitfall_groups(failures: Iterable[FailureRow]) -> list[PitfallGroup]:
    """Failure modes grouped by their signature (the same error on the same action, values masked),
    most runs first; each with how often the next step got past it and the recovery to show, as the
    teacher chooses it: one from a run that then reached its goal first (whatever it did), then one
    that went through, then a concrete one."""
    groups: dict[tuple[str, str], list[FailureRow]] = {}
    for failure in failures:
        action, error = failure.action or "", failure.description
        if failure.signed is not None:
            action, error = failure.signed.action, failure.signed.error
            error = re.sub(r"^\s*error\s*:\s*", "", error, flags=re.IGNORECASE)
        groups.setdefault((action, one_line(error)), []).append(failure)
    result = []
    for (action, error), rows in groups.items():
        best = min(rows, key=lambda f: (not f.run_succeeded, not f.recovered, not f.concrete,
                                        f.recovery_kind in (None, "none"), f.run_id or "", f.id))
        result.append(PitfallGroup(action, error, len(rows), len({f.run_id or f.id for f in rows}),
                                   sum(1 for f in rows if f.recovered),
                                   len({f.run_id or f.id for f in rows if f.run_succeeded}), best, tuple(rows)))
    return sorted(result, key=lambda g: (-g.runs, -g.times, g.action, g.error))


def own_pitfalls(skill: PlannedSkill, failures: Mapping[str, Sequence[FailureRow]]) -> list[PitfallGroup]:
    """The errors of the skill's own actions in its runs (all of them: a skill lists the first
    :data:`MAX_PITFALLS`)."""
    own = skill.own_actions
    return [g for g in pitfall_groups(f for m in skill.members for f in failures.get(m.id, ())) if g.action in own]


def document_of(skill: PlannedSkill) -> ConceptDoc:
    return skill.concept or ConceptDoc(id="", name="", version=0)  # a workflow skill has no document


def about_own_actions(record: StatementRecord, own: Collection[str]) -> bool:
    """Whether a statement is about one of the actions ``own``: a look-up before one, the call, an
    error of it or a rule the agent applied to it, by its record's operation; a free lesson, which
    names no operation, when its words name no state change or one of theirs."""
    if record.kind != "lesson":
        return record.operation in {humanise_action(a) for a in own}
    return about_actions(record.text, own)


def document_warnings(skill: PlannedSkill, groups: Sequence[PitfallGroup]) -> list[Statement]:
    """The document's pitfalls about the skill's own actions (:func:`about_own_actions`) but the
    recoveries of an error the skill already lists: the same operation and error class as the record
    of one of ``groups``' failure modes (it would say the same again)."""
    listed = {(f.record.operation, f.record.error) for g in groups for f in g.rows if f.record is not None}
    return [s for s in document_of(skill).of("pitfalls", skill.domains[0])
            if about_own_actions(s.said, skill.own_actions)
            and not (s.kind == "recovery" and (s.said.operation, s.said.error) in listed)]


def _asks_for(skill: PlannedSkill, member: Member, limit: int = TASK_CHARS) -> bool:
    """Whether a task, as far as a skill quotes it (``limit`` characters), asks for what a
    meta-concept skill does (its operation's verb), or the skill names no operation."""
    named = skill.concept.operation_verbs if skill.concept is not None else frozenset()
    return not named or bool(named & verbs_named(cut(member.problem, limit)))


def example_tasks(skill: PlannedSkill) -> list[Member]:
    """The runs a skill quotes as tasks where it worked: for a meta-concept, the tasks that ask for
    its operation first (a task where the cancellation came about on the way is a weaker example)."""
    return sorted(runs_in(skill), key=lambda m: not _asks_for(skill, m))


def changes_nothing(skill: PlannedSkill) -> bool:
    return skill.kind == "workflow" and not skill.ways[0].operations


def asked_verbs(skill: PlannedSkill) -> list[str]:
    """The changes the tasks where it worked asked for (a skill that changes nothing says whether
    they asked for any)."""
    return sorted({v for m in example_tasks(skill) for v in verbs_named(m.problem)})


def description_example(skill: PlannedSkill) -> Member | None:
    """The task the description quotes after its "use when": one that asks for what the skill does."""
    return next((m for m in example_tasks(skill)
                 if changes_nothing(skill) or _asks_for(skill, m, DESCRIPTION_TASK_CHARS)), None)


@dataclass(frozen=True)
class SkillShows:
    """What one skill shows, as the audit checks it."""

    #: The errors it lists under "Pitfalls and recoveries", and the document's pitfalls after them.
    pitfalls: tuple[PitfallGroup, ...]
    warnings: tuple[Statement, ...]
    #: Every statement of its document it shows (when to use, preconditions, how, why, pitfalls).
    statements: tuple[Statement, ...]
    #: The tasks it quotes as where it worked ("When to use" and the example runs that worked).
    tasks: tuple[Member, ...]
    #: Its "when to use" says it is for tasks that only ask for information.
    information_only: bool
    #: What its description says a task needs ("Use when a task needs to …"), and the example it quotes.
    needs: str | None
    example: Member | None


def skill_shows(skill: PlannedSkill, failures: Mapping[str, Sequence[FailureRow]]) -> SkillShows:
    """What ``skill`` shows, given the failure modes of its experiences."""
    groups = own_pitfalls(skill, failures)
    warnings = tuple(document_warnings(skill, groups))
    domain = skill.domains[0]
    doc = document_of(skill)
    statements = (*doc.of("when_to_use", domain), *doc.of("how", domain), *doc.of("why", domain), *warnings)
    tasks = tuple(dict.fromkeys([*example_tasks(skill)[:MAX_TASKS_SHOWN], *runs_in(skill)[:MAX_WORKED_EXAMPLES]]))
    nothing = changes_nothing(skill)
    needs = None if nothing else (skill.concept.name if skill.concept is not None else skill.ways[0].label)
    return SkillShows(pitfalls=tuple(groups[:MAX_PITFALLS]), warnings=warnings, statements=statements, tasks=tasks,
                      information_only=nothing and not asked_verbs(skill), needs=needs,
                      example=description_example(skill))
