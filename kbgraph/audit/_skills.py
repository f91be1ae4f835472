"""The checks of a skill as an export would write it: its pitfalls are about its own actions, its
outcome words match its counts, its "when to use" agrees with the tasks it quotes, and what it
quotes from its document passed the document's checks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from kbgraph.audit._findings import Finding
from kbgraph.ingest.reflect_rules import about_actions, verbs_named
from kbgraph.skills.plan import PlannedSkill
from kbgraph.skills.render import EXAMPLES_FILE

__all__ = ["audit_skill", "sections_of"]

_FAILING_ACTION = re.compile(r"^- \*\*`([^`]*)` fails with")
_EVIDENCE = re.compile(r" \([^()]*\)$")
# Innermost quotes: not an opening one either, so a line of 100,000 “ without a ” is read in one
# pass (with [^”]* each “ scanned to the end of the line: 43 s, tests/reliability/regex_audit.py).
_QUOTED = re.compile(r"“([^“”]*)”")
_NEEDS = re.compile(r"Use when a task needs to (.+?), e\.g\. “([^”]*)”")
_INFORMATION_ONLY = "only asks for information"


def sections_of(markdown: str) -> dict[str, list[str]]:
    """A Markdown file's lines by its ``## `` headings (the front matter under "")."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections.setdefault(current, [])
        else:
            sections[current].append(line)
    return sections


def audit_skill(skill: PlannedSkill, files: Mapping[str, str], document_findings: Sequence[Finding]) -> list[Finding]:
    """What in the skill's files its evidence does not bear out (see :data:`kbgraph.audit.CHECKS`)."""
    where = f"skill {skill.name}"
    text = files["SKILL.md"]
    sections = sections_of(text)
    own = skill.own_actions
    evidence = f"its actions: {', '.join(sorted(own)) or 'none'}"
    findings = [f.model_copy(update={"where": where}) for f in document_findings if f.statement in text]
    for line in sections.get("Pitfalls and recoveries", []):
        failing = _FAILING_ACTION.match(line)
        if failing and failing[1] not in own:
            findings.append(Finding(check="pitfall-about-another-action", where=where, statement=line[2:],
                                    evidence=evidence, detail=f"a pitfall of {failing[1]}, which is not one of its "
                                                               "own actions"))
        elif line.startswith("- ") and not failing and not about_actions(_EVIDENCE.sub("", line[2:]), own):
            findings.append(Finding(check="pitfall-about-another-action", where=where, statement=line[2:],
                                    evidence=evidence, detail="a pitfall about "
                                    + ", ".join(sorted(verbs_named(line))) + ", none of its own actions"))
    for line in text.splitlines():
        if "got past it" in line and not re.search(r"went through (in )?[1-9]", line):
            findings.append(Finding(check="outcome-wording", where=where, statement=line.lstrip("- "),
                                    evidence="no count of calls that went through", detail="says it got past an "
                                    "error without a run where the next call went through"))
    findings += _when_to_use(skill, sections, files.get(EXAMPLES_FILE, ""), where)
    return findings


def _when_to_use(skill: PlannedSkill, sections: Mapping[str, Sequence[str]], examples: str,
                 where: str) -> list[Finding]:
    """The "use when" of the description and of the body, against the tasks the skill quotes."""
    claims = "\n".join([*sections[""], *sections.get("When to use", [])])
    quoted = [m for line in sections.get("When to use", []) if line.startswith("  - ") for m in _QUOTED.findall(line)]
    worked = sections_of(examples).get("Runs that worked", [])
    quoted += [m for line in worked if line.startswith("### ") for m in _QUOTED.findall(line)]
    findings = []
    if _INFORMATION_ONLY in claims:
        for task in dict.fromkeys(quoted):
            if asked := verbs_named(task):
                findings.append(Finding(
                    check="when-to-use-contradicted", where=where, statement=f"“{task}”",
                    evidence=f"the task asks to {', '.join(sorted(asked))}",
                    detail="the skill is for tasks that only ask for information, but quotes this one as where it "
                           "worked"))
    for subject, task in _NEEDS.findall(claims):
        needed, asked = verbs_named(subject), verbs_named(task)
        if needed and asked and not needed & asked:
            findings.append(Finding(
                check="when-to-use-contradicted", where=where, statement=f"Use when a task needs to {subject}, e.g. “{task}”",
                evidence=f"the task asks to {', '.join(sorted(asked))}",
                detail=f"its example asks for something else than to {subject}"))
    return findings
