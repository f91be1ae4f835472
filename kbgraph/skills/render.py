"""A skill folder's files: ``SKILL.md`` (front matter and body) and ``references/examples.md``.

The body follows what an agent needs when it picks the skill up: when to use it, what to check
first (preconditions), the steps of the way that worked most often (and the other ways that worked),
how and why (from the meta-concept's document, each sentence with the runs behind it), the pitfalls
— each error agents hit, with the recovery that got past it and how often it did — and the evidence
("worked in n of m runs", per way). ``references/examples.md`` holds example runs, step by step:
some that worked, and some that failed with what went wrong and what the agent did next.

What a skill shows (which runs, errors and statements) is chosen in :mod:`kbgraph.skills.shown`,
which the audit reads too; this module words it. Rendering is pure and deterministic (sorted inputs, no clock): the same namespace renders the same
bytes, which is what makes a re-export idempotent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kbgraph.core.generalise import humanise_action
from kbgraph.search.handoff import hands_off
from kbgraph.skills.folder import MARKER_KEY, MARKER_VALUE, NAMESPACE_KEY, SKILL_FILE
from kbgraph.skills.names import cut, front_matter, one_line, truncate_description
from kbgraph.skills.plan import ConceptDoc, FailureRow, Member, PlannedSkill, StepRow, Workflow, flow, title_case
from kbgraph.skills.shown import (
    DESCRIPTION_TASK_CHARS,
    MAX_PITFALLS,
    MAX_TASKS_SHOWN,
    MAX_WORKED_EXAMPLES,
    TASK_CHARS,
    PitfallGroup,
    asked_verbs,
    changes_nothing,
    description_example,
    document_of,
    document_warnings,
    example_tasks,
    failed_examples,
    own_pitfalls,
    runs_in,
)

__all__ = ["EXAMPLES_FILE", "RenderInput", "describe", "md", "pitfall_line", "quoted", "render_skill", "when_to_use"]

EXAMPLES_FILE = "references/examples.md"
#: Other ways a skill shows at most (what else it shows at most: :mod:`kbgraph.skills.shown`).
MAX_OTHER_WAYS = 4
#: Characters of a recovery, a tool's result quoted in a skill.
RECOVERY_CHARS, OBSERVATION_CHARS = 360, 160


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _worked_in(worked: int, runs: int, tasks: int) -> str:
    return f"worked in {worked} of {_plural(runs, 'run')} over {_plural(tasks, 'task')}"


def md(text: str) -> str:
    """Text from the store on one Markdown line: nothing in it starts a heading, a table cell or code."""
    return one_line(text).replace("|", "\\|").replace("`", "'")


def quoted(text: str, limit: int = TASK_CHARS) -> str:
    return f"“{md(cut(text, limit))}”"


def _call(action: str, args: Mapping[str, str]) -> str:
    inside = ", ".join(f"{name}: {kind}" for name, kind in sorted(args.items()))
    return f"`{md(action)}({md(inside)})`"


def pitfall_line(group: PitfallGroup) -> str:
    """The runs' outcome first ("after it, 4 of 4 runs reached their goal"), then what they did next;
    that the next call went through is the second fact (issue 52: a retry that only got the call
    through, in runs that still failed, is never the headline)."""
    head = f"- **`{md(group.action) or 'a step'}` fails with “{md(cut(group.error, 200))}”**"
    seen = f" — seen {_plural(group.times, 'time')} in {_plural(group.runs, 'run')}"
    recovery = md(cut(group.best.recovery, RECOVERY_CHARS)) if group.best.recovery else ""
    outcome = (f"; after it, {group.run_succeeded} of {_plural(group.runs, 'run')} reached their goal "
               f"(the next call went through {group.got_past} of {group.times} times)")
    if recovery and group.best.run_succeeded:
        what = f"{outcome}. What a run that reached its goal did next: {recovery}"
    elif recovery and group.best.recovered:
        what = f"{outcome}. What got the call through, in a run that still failed: {recovery}"
    else:
        what = f"{outcome}" + (f". What was tried: {recovery}" if recovery else "")
    return head + seen + what.rstrip() + ("" if what.endswith((".", "…")) else ".")


@dataclass
class RenderInput:
    """What rendering one skill needs beyond its plan: steps and failure modes by experience id."""

    namespace: str
    steps: Mapping[str, Sequence[StepRow]]
    failures: Mapping[str, Sequence[FailureRow]]


def when_to_use(skill: PlannedSkill) -> str:
    """The "use when" of a skill, from the tasks where it worked: a way that changed nothing is for
    tasks that only ask for information only when its tasks did; when they asked for changes, it
    is what worked when those changes were not to be made."""
    if changes_nothing(skill):
        asked = asked_verbs(skill)
        if not asked:
            return "Use when a task only asks for information: in the runs where it worked, nothing had to change"
        return ("Use when a task asks for a change that is not to be made, or only for information: in the runs "
                f"where it worked the tasks asked to {', '.join(asked)}, and changing nothing was what succeeded")
    subject = skill.concept.name if skill.concept is not None else skill.ways[0].label
    return f"Use when a task needs to {subject}"


def describe(skill: PlannedSkill) -> str:
    """What the skill does and when to use it, with its evidence, within the specification's limit."""
    domains = skill.domains
    where = f"the {domains[0]} domain" if len(domains) == 1 else "the " + ", ".join(domains) + " domains"
    fitting = description_example(skill)
    example = f", e.g. {quoted(fitting.problem, DESCRIPTION_TASK_CHARS)}" if fitting is not None else ""
    evidence = f"Learnt from real agent runs: it {_worked_in(skill.worked, skill.runs, skill.tasks)}."
    when = f"{when_to_use(skill)}{example}."
    if changes_nothing(skill):
        usual = ", ".join(dict.fromkeys(skill.ways[0].usual_actions)) or "no tool calls"
        what = f"Answer tasks in {where} by looking things up and changing nothing ({usual})."
    else:
        subject = skill.concept.name if skill.concept is not None else skill.ways[0].label
        what = (f"{title_case(subject)} in {where}: the steps that worked, what to check first, and how to "
                "recover from the errors agents hit.")
        conditions = [st.line for st in document_of(skill).of("when_to_use", domains[0])]
        if conditions:
            when += " " + conditions[0]
    return truncate_description(" ".join([what, when, evidence]))


def render_skill(skill: PlannedSkill, given: RenderInput) -> dict[str, str]:
    """The files of one skill folder, by relative path: ``SKILL.md`` and ``references/examples.md``
    (when there are example runs to show)."""
    doc = document_of(skill)
    domain = skill.domains[0]
    metadata = {
        MARKER_KEY: MARKER_VALUE, NAMESPACE_KEY: given.namespace,
        "kbgraph-source": f"{'meta-concept' if skill.kind == 'concept' else 'workflow'} {skill.source_id}",
        "kbgraph-runs": str(skill.runs), "kbgraph-worked": str(skill.worked),
    }
    out = [front_matter(skill.name, describe(skill), metadata), f"# {md(skill.title)}", "",
           f"Learnt by kbgraph from agent runs ({', '.join(skill.domains)}): it "
           f"{_worked_in(skill.worked, skill.runs, skill.tasks)}. Identifiers, names and numbers from the runs are "
           "shown as placeholders such as `{id}`.", ""]
    out += _when_to_use(skill, doc) + _preconditions(skill, doc) + _steps_section(skill, given)
    how = [s for s in doc.of("how", domain) if s.kind != "before"]
    if how:
        out += ["## How it is done", "", *[f"- {md(s.line)}" for s in how], ""]
    if why := doc.of("why", domain):
        out += ["## Why", "", *[f"- {md(s.line)}" for s in why], ""]
    out += _pitfalls(skill, given) + _evidence(skill, given)
    files = {SKILL_FILE: ""}
    examples = _examples(skill, given)
    if examples:
        out += ["## Examples", "", f"[{EXAMPLES_FILE}]({EXAMPLES_FILE}): runs that worked, step by step, and runs "
                "that failed, with what went wrong and what the agent did next.", ""]
        files[EXAMPLES_FILE] = examples
    files[SKILL_FILE] = "\n".join(out).rstrip("\n") + "\n"
    return files


def _when_to_use(skill: PlannedSkill, doc: ConceptDoc) -> list[str]:
    domain = skill.domains[0]
    out = ["## When to use", "", f"- {when_to_use(skill)}.",
           *[f"- {md(s.line)}" for s in doc.of("when_to_use", domain) if s.kind != "before"]]
    tasks = example_tasks(skill)[:MAX_TASKS_SHOWN]
    if tasks:
        out += ["- Tasks like these, where it worked:", *[f"  - {quoted(m.problem)}" for m in tasks]]
    return [*out, ""]


def _preconditions(skill: PlannedSkill, doc: ConceptDoc) -> list[str]:
    """The document's "Before …" statements, and what the steps shown look up before their first change."""
    domain = skill.domains[0]
    before = [s for s in (*doc.of("when_to_use", domain), *doc.of("how", domain))
              if s.kind == "before"]
    out = ["## Preconditions", "", *[f"- {md(s.line)}" for s in before]]
    best = skill.ways[0]
    first_change = next((i for i, a in enumerate(best.usual_actions) if a in best.operations), None)
    lookups = list(dict.fromkeys(best.usual_actions[:first_change])) if first_change is not None else []
    if lookups:
        out.append("- Read before changing anything: " + ", ".join(f"`{md(a)}`" for a in lookups)
                   + " (what the steps below look up before their first change).")
    if not before and not lookups:
        out.append("- None learnt.")
    return [*out, ""]


def _steps_section(skill: PlannedSkill, given: RenderInput) -> list[str]:
    best = skill.ways[0]
    which = "The simplest way that worked (fewest state changes)" if len(skill.ways) > 1 else "The steps that worked"
    out = ["## Steps", "", f"{which}: it {_worked_in(best.worked, best.runs, best.tasks)}.", ""]
    out += _steps(best, given.steps.get(best.representative.id, ()))
    if hands_off(best.operations):
        out += ["", "This way hands the task to a human: graded a success when nothing had to change, but the "
                "request was passed on, not resolved. Prefer a way that resolves the task when one fits."]
    others = [w for w in skill.ways[1:] if w.worked][:MAX_OTHER_WAYS]
    if others:
        out += ["", "Other ways that worked:", ""]
        out += [f"- {md(flow(w.usual_actions) or 'no tool calls')} — {_worked_in(w.worked, w.runs, w.tasks)}."
                for w in others]
    return [*out, ""]


def _pitfalls(skill: PlannedSkill, given: RenderInput) -> list[str]:
    """Each error of the skill's own actions in its runs, with what the agents did next, then the
    document's pitfalls about those actions that do not quote one of those errors (they would say
    the same again)."""
    groups = own_pitfalls(skill, given.failures)
    out = ["## Pitfalls and recoveries", "", *[pitfall_line(g) for g in groups[:MAX_PITFALLS]]]
    if len(groups) > MAX_PITFALLS:
        out.append(f"- … and {_plural(len(groups) - MAX_PITFALLS, 'other error')} seen less often.")
    warnings = document_warnings(skill, groups)
    out += [f"- {md(s.line)}" for s in warnings]
    if not groups and not warnings:
        out.append("- No failures were recorded in the runs behind this skill.")
    return [*out, ""]


def _evidence(skill: PlannedSkill, given: RenderInput) -> list[str]:
    out = ["## Evidence", "",
           f"It {_worked_in(skill.worked, skill.runs, skill.tasks)}. A run is an agent trajectory kbgraph "
           "ingested, or a use an agent reported through feedback; it worked when its outcome was a success.", "",
           "| way (state changes in order) | worked | runs | tasks |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {md(w.label)} ({md(w.domain)}) | {w.worked} | {w.runs} | {w.tasks} |" for w in skill.ways]
    doc = skill.concept
    source = (f"meta-concept “{md(doc.name)}” (`{doc.id}`, document version {doc.version})" if doc is not None
              else f"workflow `{skill.source_id}`")
    return [*out, "", f"Exported from kbgraph namespace `{md(given.namespace)}`, {source}.", ""]


def _steps(way: Workflow, steps: Sequence[StepRow]) -> list[str]:
    """Numbered steps of the way's representative run, consecutive repeats of one call folded."""
    by_order = list(steps) or [StepRow(i, a, humanise_action(a), {}) for i, a in enumerate(way.usual_actions)]
    if not by_order:
        return ["1. No tool calls: answer from what the task says."]
    lines: list[str] = []
    index = 0
    while index < len(by_order):
        step = by_order[index]
        repeats = 1
        while index + repeats < len(by_order) and by_order[index + repeats].action == step.action:
            repeats += 1
        args: dict[str, str] = {}
        for same in by_order[index:index + repeats]:
            args.update(same.args)
        note = " — a state change" if step.action in way.operations else ""
        if repeats > 1:
            note += f" (called {repeats} times in a row in the example run)"
        lines.append(f"{len(lines) + 1}. {_call(step.action, args)}{note}")
        index += repeats
    return lines


def _examples(skill: PlannedSkill, given: RenderInput) -> str:
    worked = runs_in(skill)[:MAX_WORKED_EXAMPLES]
    failed = failed_examples(skill, given.failures)
    if not worked and not failed:
        return ""
    out = [f"# Example runs: {md(skill.title)}", "",
           f"Runs behind the skill `{skill.name}`, as kbgraph stored them: identifiers, names and numbers are "
           "placeholders; a tool's result is cut.", ""]
    if worked:
        out += ["## Runs that worked", ""]
        for number, member in enumerate(worked, start=1):
            out += _example(number, member, given)
    if failed:
        out += ["## Runs that failed", ""]
        for number, member in enumerate(failed, start=1):
            out += _example(number, member, given)
            out += ["What went wrong, and what the agent did next:", ""]
            out += [f"- step {f.step_order if f.step_order is not None else '?'}: {md(cut(f.description, 300))} "
                    f"— then: {md(cut(f.recovery, RECOVERY_CHARS)) or 'nothing'}" for f in given.failures[member.id]]
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _example(number: int, member: Member, given: RenderInput) -> list[str]:
    runs = sorted(set(member.source_ids))
    shown = ", ".join(f"`{md(r)}`" for r in runs[:6]) + (f" and {len(runs) - 6} more" if len(runs) > 6 else "")
    out = [f"### {number}. {quoted(member.problem)}", "",
           f"- Outcome: worked in {member.worked} of {_plural(member.runs, 'run')}" + (f" ({shown})" if runs else ""),
           f"- State changes: {md(flow(member.operations)) or 'none'}", "", "Steps:", ""]
    steps = given.steps.get(member.id, ())
    for index, step in enumerate(steps, start=1):
        out.append(f"{index}. `{md(step.action)}` — {md(cut(step.text, 300))}")
        if step.observation:
            out.append(f"   returned: {md(cut(step.observation, OBSERVATION_CHARS))}")
    if not steps:
        out.append("(no tool calls)")
    return [*out, ""]
