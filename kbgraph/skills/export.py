"""Agent Skills export: what kbgraph learnt, as skill folders that agent frameworks load on demand.

An Agent Skill is a folder holding a ``SKILL.md`` — YAML front matter (``name``, ``description``)
and a Markdown body — and optional ``references/``. An agent sees every skill's name and
description up front and reads a skill's body only when a task calls for it. kbgraph's learnt
workflows, documents, pitfalls and recoveries are that kind of knowledge.

:func:`export_skills` reads a namespace with the named queries ``cypher/queries/skills_*.cypher``
and hands the rows to pure stages, each in its own module:

- :mod:`kbgraph.skills.plan` — which meta-concept documents and workflows pass the threshold
  ("worked in at least ``min_runs`` runs", :data:`DEFAULT_MIN_RUNS` by default);
- :mod:`kbgraph.skills.names` — names and descriptions within the specification's rules;
- :mod:`kbgraph.skills.render` — the files of each skill folder;
- :mod:`kbgraph.skills.folder` — writing them all or nothing, touching only what kbgraph wrote.

The user's guide is ``docs/skills.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from kbgraph.core.errors import InvalidInputError
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.skills.folder import target_problems, write_skill_folders
from kbgraph.skills.plan import (
    DEFAULT_MIN_RUNS, Abstract, FailureRow, SkillKind, SkillPlan, SkippedCandidate, StepRow, concept_from_row,
    failure_from_row, group_workflows, member_from_row, plan_skills, step_from_row,
)
from kbgraph.skills.render import RenderInput, render_skill
from kbgraph.skills.shown import shown_members

__all__ = ["DEFAULT_MIN_RUNS", "ExportedSkill", "SkillsExportReport", "SkippedCandidate", "export_skills",
           "read_skills"]

#: Ids per query when reading the details of the experiences a skill shows.
BATCH = 500
#: The stages ``on_stage`` is told about, in order.
STAGES = ("reading", "details", "writing")


class ExportedSkill(BaseModel):
    """One skill folder of an export."""

    name: str
    kind: SkillKind
    #: The meta-concept's id, or the workflow's (its abstract experience, or its only experience).
    source_id: str
    title: str
    runs: int
    worked: int
    tasks: int
    files: list[str]
    #: ``written`` (new or changed) or ``unchanged`` (the folder already held these exact bytes).
    status: Literal["written", "unchanged"]


class SkillsExportReport(BaseModel):
    """What one skills export did."""

    namespace: str
    directory: str
    min_runs: int
    skills: list[ExportedSkill]
    #: Folders of this namespace's earlier export that are no longer skills, removed.
    removed: list[str]
    #: Meta-concepts and workflows whose evidence is below the threshold, best first.
    below_threshold: list[SkippedCandidate]
    seconds: float


def checked_min_runs(min_runs: Any) -> int:
    if isinstance(min_runs, bool) or not isinstance(min_runs, int) or not 1 <= min_runs <= 1_000_000_000:
        raise InvalidInputError([f"min_runs: must be a whole number from 1 up, not {min_runs!r}"])
    return min_runs


def checked_directory(directory: Any) -> Path:
    if not isinstance(directory, str | os.PathLike) or not str(directory).strip():
        raise InvalidInputError([f"directory: give the folder to export the skills into, not {directory!r}"])
    return Path(directory)


def _batched(ids: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(ids), BATCH):
        yield list(ids[start:start + BATCH])


def read_skills(gateway: Neo4jGateway, namespace: str, min_runs: int,
                stage: Callable[[str], None] = lambda _: None) -> tuple[SkillPlan, RenderInput]:
    """The skills of ``namespace`` at the threshold, and what rendering them needs (read, not
    written: the export writes them, the audit checks them)."""
    stage("reading")
    members = [member_from_row(r) for r in gateway.read("skills_experiences", kb=namespace)]
    abstracts = {str(r["id"]): Abstract(str(r["id"]), int(r["used"]), int(r["succeeded"]))
                 for r in gateway.read("skills_abstract_experiences", kb=namespace)}
    concepts = [concept_from_row(r) for r in gateway.read("skills_meta_concepts", kb=namespace)]
    plan = plan_skills(concepts, group_workflows(members, abstracts), min_runs)

    stage("details")
    failures: dict[str, list[FailureRow]] = {}
    for ids in _batched(sorted({m.id for skill in plan.skills for m in skill.members})):
        for row in gateway.read("skills_failure_modes", kb=namespace, ids=ids):
            failures.setdefault(str(row["experience_id"]), []).append(failure_from_row(row))
    steps: dict[str, list[StepRow]] = {}
    for ids in _batched(sorted({m.id for skill in plan.skills for m in shown_members(skill, failures)})):
        for row in gateway.read("skills_experience_steps", kb=namespace, ids=ids):
            steps[str(row["id"])] = [step_from_row(s) for s in row["steps"]]
    return plan, RenderInput(namespace, steps, failures)


def export_skills(
    gateway: Neo4jGateway, namespace: str, directory: str | os.PathLike[str], *, min_runs: int = DEFAULT_MIN_RUNS,
    on_stage: Callable[[str], None] | None = None,
) -> SkillsExportReport:
    """Writes the skills of ``namespace`` into ``directory`` and returns what it did.

    Raises InvalidInputError, writing nothing, for a folder that is a file, cannot be written or
    holds someone else's folder under a skill's name, and for a threshold below 1; KbgraphError
    when the file system fails midway (the folder is then left as it was)."""
    started = time.perf_counter()
    target = checked_directory(directory)
    threshold = checked_min_runs(min_runs)
    if problems := target_problems(target):  # before reading anything
        raise InvalidInputError(problems, headline="cannot export skills, nothing was written")
    stage = on_stage or (lambda _: None)

    plan, given = read_skills(gateway, namespace, threshold, stage)

    stage("writing")
    rendered = {skill.name: render_skill(skill, given) for skill in plan.skills}
    outcome = write_skill_folders(target, namespace, rendered)
    return SkillsExportReport(
        namespace=namespace, directory=str(target), min_runs=threshold,
        skills=[ExportedSkill(name=s.name, kind=s.kind, source_id=s.source_id, title=s.title, runs=s.runs,
                              worked=s.worked, tasks=s.tasks, files=sorted(rendered[s.name]),
                              status="unchanged" if s.name in outcome.unchanged else "written")
                for s in plan.skills],
        removed=outcome.removed, below_threshold=plan.below_threshold,
        seconds=round(time.perf_counter() - started, 3),
    )
