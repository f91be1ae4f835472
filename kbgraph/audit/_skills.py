"""The checks of a skill as an export would write it, held against what it was rendered from
(:func:`kbgraph.skills.shown.skill_shows`: the failure modes it lists, the statements of its
document and their records, the tasks it quotes), never against its rendered text: its pitfalls are
about its own actions, the counts of a pitfall are its failure modes', its "when to use" agrees
with the tasks it quotes, and what it shows of its document passed the document's checks. A
finding names what the skill says as the skill words it."""

from __future__ import annotations

from collections.abc import Sequence

from kbgraph.audit._findings import Finding
from kbgraph.ingest.integrate_evidence import Statement
from kbgraph.ingest.reflect_rules import verbs_named
from kbgraph.skills.names import cut
from kbgraph.skills.plan import PlannedSkill
from kbgraph.skills.render import md, pitfall_line, quoted
from kbgraph.skills.shown import DESCRIPTION_TASK_CHARS, TASK_CHARS, PitfallGroup, SkillShows, about_own_actions

__all__ = ["audit_skill"]

def audit_skill(skill: PlannedSkill, shows: SkillShows, document_findings: Sequence[Finding]) -> list[Finding]:
    """What the skill shows that its evidence does not bear out (see :data:`kbgraph.audit.CHECKS`).
    ``document_findings``: its document's; one follows into the skill when the skill shows every
    statement it is about."""
    where = f"skill {skill.name}"
    shown = {s.text for s in shows.statements}
    findings = [f.model_copy(update={"where": where}) for f in document_findings
                if set(f.about or (f.statement,)) <= shown]
    findings += _other_actions(skill, shows, where)
    findings += [finding for group in shows.pitfalls if (finding := _miscounted(group, where)) is not None]
    findings += _when_to_use(shows, where)
    return findings


def _other_actions(skill: PlannedSkill, shows: SkillShows, where: str) -> list[Finding]:
    """Pitfalls about an action that is not one of the skill's own: an error of another action's,
    or a statement of its document about another operation (:func:`~kbgraph.skills.shown.about_own_actions`)."""
    own = skill.own_actions
    evidence = f"its actions: {', '.join(sorted(own)) or 'none'}"
    findings = []
    for group in shows.pitfalls:
        if group.action not in own:
            findings.append(Finding(check="pitfall-about-another-action", where=where, statement=pitfall_line(group)[2:],
                                    evidence=evidence, detail=f"a pitfall of {group.action}, which is not one of its "
                                                              "own actions"))
    for statement in shows.warnings:
        detail = _about_another(statement, own)
        if detail:
            findings.append(Finding(check="pitfall-about-another-action", where=where, statement=md(statement.line),
                                    evidence=evidence, detail=detail))
    return findings


def _about_another(statement: Statement, own: frozenset[str]) -> str:
    """Why ``statement`` is about none of the skill's actions ("" when it is about one of them)."""
    record = statement.said
    if about_own_actions(record, own):
        return ""
    if record.kind != "lesson":
        return f"a pitfall of {record.operation}, which is not one of its own actions"
    return "a pitfall about " + ", ".join(sorted(verbs_named(record.text))) + ", none of its own actions"


def _miscounted(group: PitfallGroup, where: str) -> Finding | None:
    """A pitfall whose counts are not its failure modes' recount, or that says a run reached its
    goal (or its call went through) after the recovery it shows when that run did not."""
    rows = group.rows
    runs = {f.run_id or f.id for f in rows}
    recount = (len(rows), len(runs), sum(1 for f in rows if f.recovered),
               len({f.run_id or f.id for f in rows if f.run_succeeded}))
    said = (group.times, group.runs, group.got_past, group.run_succeeded)
    evidence = (f"{recount[0]} failure modes in {recount[1]} runs, the next call went through {recount[2]} times, "
                f"{recount[3]} runs reached their goal")
    if said != recount:
        detail = ("it says seen {} times in {} runs, the next call went through {} times, {} runs reached their "
                  "goal").format(*said)
    elif group.best not in rows:
        detail = "the recovery it shows is not one of its failure modes"
    else:
        return None
    return Finding(check="outcome-wording", where=where, statement=pitfall_line(group)[2:], evidence=evidence,
                   detail=detail)


def _when_to_use(shows: SkillShows, where: str) -> list[Finding]:
    """The "use when" of the description and of the body, against the tasks the skill quotes."""
    findings = []
    if shows.information_only:
        for task in dict.fromkeys(quoted(m.problem) for m in shows.tasks if verbs_named(cut(m.problem, TASK_CHARS))):
            asked = verbs_named(task)
            findings.append(Finding(
                check="when-to-use-contradicted", where=where, statement=task,
                evidence=f"the task asks to {', '.join(sorted(asked))}",
                detail="the skill is for tasks that only ask for information, but quotes this one as where it "
                       "worked"))
    if shows.needs and shows.example is not None:
        needed = verbs_named(shows.needs)
        asked = verbs_named(cut(shows.example.problem, DESCRIPTION_TASK_CHARS))
        if needed and asked and not needed & asked:
            example = quoted(shows.example.problem, DESCRIPTION_TASK_CHARS)
            findings.append(Finding(
                check="when-to-use-contradicted", where=where,
                statement=f"Use when a task needs to {shows.needs}, e.g. {example}",
                evidence=f"the task asks to {', '.join(sorted(asked))}",
                detail=f"its example asks for something else than to {shows.needs}"))
    return findings
