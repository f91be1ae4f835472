"""A skill folder's files: ``SKILL.md`` (front matter and body) and ``references/examples.md``.

The body follows what an agent needs when it picks the skill up: when to use it, what to check
first (preconditions), the steps of the way that worked most often (and the other ways that worked),
how and why (from the meta-concept's document, each sentence with the runs behind it), the pitfalls
— each error agents hit, with the recovery that got past it and how often it did — and the evidence
("worked in n of m runs", per way). ``references/examples.md`` holds example runs, step by step:
some that worked, and some that failed with what went wrong and what the agent did next.

Rendering is pure and deterministic (sorted inputs, no clock): the same namespace renders the same
bytes, which is what makes a re-export idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kbgraph.core.generalise import humanise_action
from kbgraph.ingest.reflect_rules import about_actions, verbs_named
from kbgraph.search.handoff import hands_off
from kbgraph.skills.folder import MARKER_KEY, MARKER_VALUE, NAMESPACE_KEY, SKILL_FILE
from kbgraph.skills.names import cut, front_matter, one_line, truncate_description
from kbgraph.skills.plan import ConceptDoc, FailureRow, Member, PlannedSkill, StepRow, Workflow, flow, title_case

__all__ = ["EXAMPLES_FILE", "PitfallGroup", "RenderInput", "changes_nothing", "describe", "example_tasks",
           "pitfall_groups", "render_skill", "shown_members", "when_to_use"]

EXAMPLES_FILE = "references/examples.md"
#: What a skill shows at most: other ways, example tasks, pitfalls, example runs that worked / failed.
MAX_OTHER_WAYS, MAX_TASKS_SHOWN, MAX_PITFALLS, MAX_WORKED_EXAMPLES, MAX_FAILED_EXAMPLES = 4, 3, 8, 3, 2
#: Characters of a task, a recovery, a tool's result quoted in a skill.
TASK_CHARS, RECOVERY_CHARS, OBSERVATION_CHARS = 240, 360, 160
#: Characters of the task a description quotes.
DESCRIPTION_TASK_CHARS = 200


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _worked_in(worked: int, runs: int, tasks: int) -> str:
    return f"worked in {worked} of {_plural(runs, 'run')} over {_plural(tasks, 'task')}"


def _md(text: str) -> str:
    """Text from the store on one Markdown line: nothing in it starts a heading, a table cell or code."""
    return one_line(text).replace("|", "\\|").replace("`", "'")


def _quoted(text: str, limit: int = TASK_CHARS) -> str:
    return f"“{_md(cut(text, limit))}”"


def _call(action: str, args: Mapping[str, str]) -> str:
    inside = ", ".join(f"{name}: {kind}" for name, kind in sorted(args.items()))
    return f"`{_md(action)}({_md(inside)})`"


def _runs_in(skill: PlannedSkill) -> list[Member]:
    """Members whose runs worked, from the best way down, one per task first."""
    ordered = [m for w in skill.ways for m in sorted(w.members, key=lambda m: (-m.worked, -m.runs, m.id)) if m.worked]
    first_per_task: dict[str, Member] = {}
    for member in ordered:
        first_per_task.setdefault(member.task_key, member)
    shown = {m.id for m in first_per_task.values()}
    return [*first_per_task.values(), *(m for m in ordered if m.id not in shown)]


def _failed_examples(skill: PlannedSkill, failures: Mapping[str, Sequence[FailureRow]]) -> list[Member]:
    """Members none of whose runs worked and that recorded what went wrong, most runs first."""
    failed = [m for m in skill.members if not m.worked and failures.get(m.id)]
    return sorted(failed, key=lambda m: (-m.runs, m.id))[:MAX_FAILED_EXAMPLES]


def shown_members(skill: PlannedSkill, failures: Mapping[str, Sequence[FailureRow]]) -> list[Member]:
    """The experiences whose steps a skill shows: its best way's representative and the example runs."""
    return [skill.ways[0].representative, *_runs_in(skill)[:MAX_WORKED_EXAMPLES], *_failed_examples(skill, failures)]


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


def pitfall_groups(failures: Iterable[FailureRow]) -> list[PitfallGroup]:
    """Failure modes grouped by their signature (the same error on the same action, values masked),
    most runs first; each with how often the next step got past it and the recovery to show, as the
    teacher chooses it: one from a run that then reached its goal first (whatever it did), then one
    that went through, then a concrete one."""
    groups: dict[tuple[str, str], list[FailureRow]] = {}
    for failure in failures:
        action, error = failure.action or "", failure.description
        if failure.signature and "|" in failure.signature:
            action, _, error = failure.signature.partition("|")
            error = re.sub(r"^\s*error\s*:\s*", "", error, flags=re.IGNORECASE)
        groups.setdefault((action, one_line(error)), []).append(failure)
    result = []
    for (action, error), rows in groups.items():
        best = min(rows, key=lambda f: (not f.run_succeeded, not f.recovered, not f.concrete,
                                        f.recovery_kind in (None, "none"), f.run_id or "", f.id))
        result.append(PitfallGroup(action, error, len(rows), len({f.run_id or f.id for f in rows}),
                                   sum(1 for f in rows if f.recovered),
                                   len({f.run_id or f.id for f in rows if f.run_succeeded}), best))
    return sorted(result, key=lambda g: (-g.runs, -g.times, g.action, g.error))


def _pitfall_line(group: PitfallGroup) -> str:
    """The runs' outcome first ("after it, 4 of 4 runs reached their goal"), then what they did next;
    that the next call went through is the second fact (issue 52: a retry that only got the call
    through, in runs that still failed, is never the headline)."""
    head = f"- **`{_md(group.action) or 'a step'}` fails with “{_md(cut(group.error, 200))}”**"
    seen = f" — seen {_plural(group.times, 'time')} in {_plural(group.runs, 'run')}"
    recovery = _md(cut(group.best.recovery, RECOVERY_CHARS)) if group.best.recovery else ""
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


def _asks_for(skill: PlannedSkill, member: Member, limit: int = TASK_CHARS) -> bool:
    """Whether a task, as far as a skill quotes it (``limit`` characters), asks for what a
    meta-concept skill does (its operation's verb), or the skill names no operation."""
    named = verbs_named(skill.concept.name) if skill.concept is not None else frozenset()
    return not named or bool(named & verbs_named(cut(member.problem, limit)))


def example_tasks(skill: PlannedSkill) -> list[Member]:
    """The runs a skill quotes as tasks where it worked: for a meta-concept, the tasks that ask for
    its operation first (a task where the cancellation came about on the way is a weaker example)."""
    return sorted(_runs_in(skill), key=lambda m: not _asks_for(skill, m))


def changes_nothing(skill: PlannedSkill) -> bool:
    return skill.kind == "workflow" and not skill.ways[0].operations


def when_to_use(skill: PlannedSkill) -> str:
    """The "use when" of a skill, from the tasks where it worked: a way that changed nothing is for
    tasks that only ask for information only when its tasks did; when they asked for changes, it
    is what worked when those changes were not to be made."""
    examples = example_tasks(skill)
    if changes_nothing(skill):
        asked = sorted({v for m in examples for v in verbs_named(m.problem)})
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
    fitting = [m for m in example_tasks(skill) if changes_nothing(skill) or _asks_for(skill, m, DESCRIPTION_TASK_CHARS)]
    example = f", e.g. {_quoted(fitting[0].problem, DESCRIPTION_TASK_CHARS)}" if fitting else ""
    evidence = f"Learnt from real agent runs: it {_worked_in(skill.worked, skill.runs, skill.tasks)}."
    when = f"{when_to_use(skill)}{example}."
    if changes_nothing(skill):
        usual = ", ".join(dict.fromkeys(skill.ways[0].usual_actions)) or "no tool calls"
        what = f"Answer tasks in {where} by looking things up and changing nothing ({usual})."
    else:
        subject = skill.concept.name if skill.concept is not None else skill.ways[0].label
        what = (f"{title_case(subject)} in {where}: the steps that worked, what to check first, and how to "
                "recover from the errors agents hit.")
        conditions = [st.line for st in _doc(skill).of("when_to_use", domains[0])]
        if conditions:
            when += " " + conditions[0]
    return truncate_description(" ".join([what, when, evidence]))


def _doc(skill: PlannedSkill) -> ConceptDoc:
    return skill.concept or ConceptDoc(id="", name="", version=0)  # a workflow skill has no document


def render_skill(skill: PlannedSkill, given: RenderInput) -> dict[str, str]:
    """The files of one skill folder, by relative path: ``SKILL.md`` and ``references/examples.md``
    (when there are example runs to show)."""
    doc = _doc(skill)
    domain = skill.domains[0]
    metadata = {
        MARKER_KEY: MARKER_VALUE, NAMESPACE_KEY: given.namespace,
        "kbgraph-source": f"{'meta-concept' if skill.kind == 'concept' else 'workflow'} {skill.source_id}",
        "kbgraph-runs": str(skill.runs), "kbgraph-worked": str(skill.worked),
    }
    out = [front_matter(skill.name, describe(skill), metadata), f"# {_md(skill.title)}", "",
           f"Learnt by kbgraph from agent runs ({', '.join(skill.domains)}): it "
           f"{_worked_in(skill.worked, skill.runs, skill.tasks)}. Identifiers, names and numbers from the runs are "
           "shown as placeholders such as `{id}`.", ""]
    out += _when_to_use(skill, doc) + _preconditions(skill, doc) + _steps_section(skill, given)
    how = [s for s in doc.of("how", domain) if s.kind != "before"]
    if how:
        out += ["## How it is done", "", *[f"- {_md(s.line)}" for s in how], ""]
    if why := doc.of("why", domain):
        out += ["## Why", "", *[f"- {_md(s.line)}" for s in why], ""]
    out += _pitfalls(skill, doc, given) + _evidence(skill, given)
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
           *[f"- {_md(s.line)}" for s in doc.of("when_to_use", domain) if s.kind != "before"]]
    tasks = example_tasks(skill)[:MAX_TASKS_SHOWN]
    if tasks:
        out += ["- Tasks like these, where it worked:", *[f"  - {_quoted(m.problem)}" for m in tasks]]
    return [*out, ""]


def _preconditions(skill: PlannedSkill, doc: ConceptDoc) -> list[str]:
    """The document's "Before …" statements, and what the steps shown look up before their first change."""
    domain = skill.domains[0]
    before = [s for s in (*doc.of("when_to_use", domain), *doc.of("how", domain))
              if s.kind == "before"]
    out = ["## Preconditions", "", *[f"- {_md(s.line)}" for s in before]]
    best = skill.ways[0]
    first_change = next((i for i, a in enumerate(best.usual_actions) if a in best.operations), None)
    lookups = list(dict.fromkeys(best.usual_actions[:first_change])) if first_change is not None else []
    if lookups:
        out.append("- Read before changing anything: " + ", ".join(f"`{_md(a)}`" for a in lookups)
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
        out += [f"- {_md(flow(w.usual_actions) or 'no tool calls')} — {_worked_in(w.worked, w.runs, w.tasks)}."
                for w in others]
    return [*out, ""]


def _pitfalls(skill: PlannedSkill, doc: ConceptDoc, given: RenderInput) -> list[str]:
    """Each error of the skill's own actions in its runs, with what the agents did next, then the
    document's pitfalls about those actions that do not quote one of those errors (they would say
    the same again)."""
    own = skill.own_actions
    groups = [g for g in pitfall_groups(f for m in skill.members for f in given.failures.get(m.id, ()))
              if g.action in own]
    out = ["## Pitfalls and recoveries", "", *[_pitfall_line(g) for g in groups[:MAX_PITFALLS]]]
    if len(groups) > MAX_PITFALLS:
        out.append(f"- … and {_plural(len(groups) - MAX_PITFALLS, 'other error')} seen less often.")
    errors = [g.error.casefold() for g in groups if len(g.error) >= 8]
    warnings = [s for s in doc.of("pitfalls", skill.domains[0])
                if about_actions(s.text, own) and not any(e in s.text.casefold() for e in errors)]
    out += [f"- {_md(s.line)}" for s in warnings]
    if not groups and not warnings:
        out.append("- No failures were recorded in the runs behind this skill.")
    return [*out, ""]


def _evidence(skill: PlannedSkill, given: RenderInput) -> list[str]:
    out = ["## Evidence", "",
           f"It {_worked_in(skill.worked, skill.runs, skill.tasks)}. A run is an agent trajectory kbgraph "
           "ingested, or a use an agent reported through feedback; it worked when its outcome was a success.", "",
           "| way (state changes in order) | worked | runs | tasks |", "| --- | ---: | ---: | ---: |"]
    out += [f"| {_md(w.label)} ({_md(w.domain)}) | {w.worked} | {w.runs} | {w.tasks} |" for w in skill.ways]
    doc = skill.concept
    source = (f"meta-concept “{_md(doc.name)}” (`{doc.id}`, document version {doc.version})" if doc is not None
              else f"workflow `{skill.source_id}`")
    return [*out, "", f"Exported from kbgraph namespace `{_md(given.namespace)}`, {source}.", ""]


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
    worked = _runs_in(skill)[:MAX_WORKED_EXAMPLES]
    failed = _failed_examples(skill, given.failures)
    if not worked and not failed:
        return ""
    out = [f"# Example runs: {_md(skill.title)}", "",
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
            out += [f"- step {f.step_order if f.step_order is not None else '?'}: {_md(cut(f.description, 300))} "
                    f"— then: {_md(cut(f.recovery, RECOVERY_CHARS)) or 'nothing'}" for f in given.failures[member.id]]
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _example(number: int, member: Member, given: RenderInput) -> list[str]:
    runs = sorted(set(member.source_ids))
    shown = ", ".join(f"`{_md(r)}`" for r in runs[:6]) + (f" and {len(runs) - 6} more" if len(runs) > 6 else "")
    out = [f"### {number}. {_quoted(member.problem)}", "",
           f"- Outcome: worked in {member.worked} of {_plural(member.runs, 'run')}" + (f" ({shown})" if runs else ""),
           f"- State changes: {_md(flow(member.operations)) or 'none'}", "", "Steps:", ""]
    steps = given.steps.get(member.id, ())
    for index, step in enumerate(steps, start=1):
        out.append(f"{index}. `{_md(step.action)}` — {_md(cut(step.text, 300))}")
        if step.observation:
            out.append(f"   returned: {_md(cut(step.observation, OBSERVATION_CHARS))}")
    if not steps:
        out.append("(no tool calls)")
    return [*out, ""]
