"""What of a namespace becomes an Agent Skill: workflows, meta-concept documents and the threshold.

A **workflow** is a way of doing a task: the experiences of one domain that made the same
state-changing calls in the same order (the grouping behind kbgraph's abstract experiences, see
:mod:`kbgraph.ingest.link`); its evidence is the runs of all of them. The candidates are

1. each **meta-concept document** (BREW): its ways are the workflows of the experiences that
   exhibit it, and its evidence is theirs;
2. each **workflow** that no exported meta-concept skill already contains (an abstract experience,
   or a concrete experience standing alone).

A candidate becomes a skill when it **worked in at least ``min_runs`` runs**. A run is a trajectory
kbgraph ingested (an id in an experience's ``source_ids``; it worked unless it is also in
``failed_source_ids``) or a use an agent reported through ``record_feedback`` (``used``, of which
``succeeded`` worked). Everything here is pure: rows in, plan out (:func:`plan_skills`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel

from kbgraph.core.generalise import humanise_action
from kbgraph.core.models import StatementRecord, stored_record
from kbgraph.core.recovery import ErrorSignature
from kbgraph.ingest.integrate import SECTIONS, Section, sentence_key
from kbgraph.ingest.integrate_evidence import Evidence, EvidencedDocument, Statement
from kbgraph.ingest.reflect_rules import action_verb, verbs_named
from kbgraph.skills.names import unique_names

__all__ = ["DEFAULT_MIN_RUNS", "Abstract", "ConceptDoc", "FailureRow", "Member", "PlannedSkill",
           "SkillKind", "SkillPlan", "SkippedCandidate", "StepRow", "Workflow", "flow", "group_workflows",
           "plan_skills", "title_case"]

#: A skill is exported when it worked in at least this many runs: one successful run can be luck
#: or a path only its task had; two are a way that repeats. ``--min-runs`` / ``min_runs`` change it.
DEFAULT_MIN_RUNS = 2

SkillKind = Literal["concept", "workflow"]


class SkippedCandidate(BaseModel):
    """A meta-concept or workflow whose evidence is below the threshold."""

    kind: SkillKind
    source_id: str
    title: str
    runs: int
    worked: int


# -- rows read from the store -------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    """One active, shared concrete experience, as the export groups and counts it."""

    id: str
    problem: str
    domain: str
    actions: tuple[str, ...]
    operations: tuple[str, ...]
    task_key: str
    source_ids: tuple[str, ...]
    failed_source_ids: frozenset[str]
    used: int = 0
    succeeded: int = 0
    abstract_id: str | None = None
    meta_ids: tuple[str, ...] = ()

    @property
    def runs(self) -> int:
        return len(set(self.source_ids)) + self.used

    @property
    def worked(self) -> int:
        return len(set(self.source_ids) - self.failed_source_ids) + min(self.succeeded, self.used)


@dataclass(frozen=True)
class Abstract:
    """An active abstract experience: its id names its workflow; feedback may have counted uses."""

    id: str
    used: int = 0
    succeeded: int = 0


@dataclass(frozen=True)
class ConceptDoc:
    """A meta-concept and its document (BREW): its statements, each where its evidence put it, for
    the domain of the runs behind it, with that evidence (:mod:`kbgraph.ingest.integrate_evidence`)."""

    id: str
    name: str
    version: int
    statements: tuple[Statement, ...] = ()
    #: The state changes its operation makes, as the write path stored them; None when stored before.
    verbs: frozenset[str] | None = None

    @property
    def operation_verbs(self) -> frozenset[str]:
        """:attr:`verbs`, or for one stored before, read from its name (:func:`kbgraph.ingest.concepts.operation_verbs`)."""
        return self.verbs if self.verbs is not None else verbs_named(self.name)

    def of(self, section: Section, domain: str) -> list[Statement]:
        """The statements of one section for ``domain`` (and those of no known domain)."""
        return [s for s in self.statements if s.section == section and s.domain in (domain, "")]

    def for_domain(self, domain: str) -> ConceptDoc:
        return ConceptDoc(self.id, self.name, self.version,
                          tuple(s for s in self.statements if s.domain in (domain, "")), self.verbs)

@dataclass(frozen=True)
class StepRow:
    """One stored step: its generalised text, its arguments' names and types, what the tool returned."""

    order: int
    action: str
    text: str
    args: Mapping[str, str]
    observation: str | None = None


@dataclass(frozen=True)
class FailureRow:
    """One stored failure mode of an experience (see :class:`kbgraph.core.models.FailureMode`)."""

    experience_id: str
    id: str
    description: str
    action: str | None
    #: The error on its action, values masked (None for a failure mode without a signature).
    signed: ErrorSignature | None
    recovery: str
    recovery_kind: str | None
    recovered: bool | None
    concrete: bool | None
    run_id: str | None
    run_succeeded: bool | None
    step_order: int | None
    #: What the reflector's statement about its error says (operation, error class, what was done
    #: next); None for a failure mode stored before records were kept.
    record: StatementRecord | None = None


def member_from_row(row: Mapping[str, Any]) -> Member:
    return Member(
        id=str(row["id"]), problem=str(row["problem"] or ""), domain=str(row["domain"]),
        actions=tuple(row["actions"]), operations=tuple(row["operations"]),
        task_key=str(row["task_key"] or row["id"]), source_ids=tuple(row["source_ids"]),
        failed_source_ids=frozenset(row["failed_source_ids"]), used=int(row["used"]),
        succeeded=int(row["succeeded"]), abstract_id=row["abstract_id"], meta_ids=tuple(row["meta_ids"]),
    )


def concept_from_row(row: Mapping[str, Any]) -> ConceptDoc:
    """A meta-concept as the skills query reads it: its statements with their evidence; a document
    written before statements were kept has its sentences backed by the insights that say them, for
    no particular domain."""
    statements = EvidencedDocument.from_json(row.get("statements")).statements
    if not row.get("statements"):
        backing: dict[str, Evidence] = {}
        for insight in row["insights"]:
            key = sentence_key(insight["text"])
            backing[key] = backing.get(key, Evidence()) | Evidence(
                frozenset(insight["runs"]), frozenset(insight["tasks"]), frozenset(insight["succeeded"]))
        statements = tuple(Statement(section, "", text, backing.get(sentence_key(text), Evidence()),
                                     (sentence_key(text),))
                           for section in SECTIONS for text in row[section])
    return ConceptDoc(id=str(row["id"]), name=str(row["name"]), version=int(row["version"]), statements=statements,
                      verbs=frozenset(row["verbs"]) if row.get("verbs") is not None else None)


def _args_of(raw: Any) -> dict[str, str]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def step_from_row(row: Mapping[str, Any]) -> StepRow:
    return StepRow(order=int(row.get("order") or 0), action=str(row["action"]), text=str(row.get("text") or ""),
                   args=_args_of(row.get("args_schema")), observation=row.get("observation"))


def failure_from_row(row: Mapping[str, Any]) -> FailureRow:
    return FailureRow(
        experience_id=str(row["experience_id"]), id=str(row["id"]), description=str(row["description"] or ""),
        action=row.get("action"), signed=ErrorSignature.stored(row.get("signature_action"), row.get("signature_error"),
                                                             row.get("signature")), recovery=str(row.get("recovery") or ""),
        recovery_kind=row.get("recovery_kind"), recovered=row.get("recovered"), concrete=row.get("concrete"),
        run_id=row.get("run_id"), run_succeeded=row.get("run_succeeded"), step_order=row.get("step_order"),
        record=stored_record(row.get("record")),
    )


# -- workflows and skills ------------------------------------------------------------------------


def flow(actions: Sequence[str]) -> str:
    """Actions as words in order, a call repeated in a row once with its count:
    ``get reservation details ×3 → cancel reservation``."""
    parts: list[str] = []
    count = 0
    for index, action in enumerate(actions):
        count += 1
        if index + 1 == len(actions) or actions[index + 1] != action:
            parts.append(humanise_action(action) + (f" ×{count}" if count > 1 else ""))
            count = 0
    return " → ".join(parts)


@dataclass
class Workflow:
    """The experiences of one domain that made the same state changes in the same order."""

    domain: str
    operations: tuple[str, ...]
    members: list[Member]
    abstract: Abstract | None = None

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.domain, self.operations

    @property
    def label(self) -> str:
        return flow(self.operations) if self.operations else "look up, change nothing"

    @property
    def runs(self) -> int:
        return sum(m.runs for m in self.members) + (self.abstract.used if self.abstract else 0)

    @property
    def worked(self) -> int:
        extra = min(self.abstract.succeeded, self.abstract.used) if self.abstract else 0
        return sum(m.worked for m in self.members) + extra

    @property
    def tasks(self) -> int:
        return len({m.task_key for m in self.members})

    @property
    def source_id(self) -> str:
        return self.abstract.id if self.abstract is not None else self.representative.id

    @cached_property
    def usual_actions(self) -> tuple[str, ...]:
        """The action sequence that worked in the most runs (every run counts when none worked);
        ties go to the shorter, then the alphabetically first — as kbgraph's abstraction picks it."""
        weights: Counter[tuple[str, ...]] = Counter()
        for member in self.members:
            weights[member.actions] += member.worked
        if not any(weights.values()):
            weights = Counter({m.actions: m.runs or 1 for m in self.members})
        return min(weights, key=lambda a: (-weights[a], len(a), a))

    @cached_property
    def representative(self) -> Member:
        """The experience whose steps show the usual action sequence, the one that worked most."""
        usual = self.usual_actions
        return min((m for m in self.members if m.actions == usual), key=lambda m: (-m.worked, -m.runs, m.id))

    @property
    def worked_tasks(self) -> int:
        """Distinct tasks on which it worked at least once."""
        return len({m.task_key for m in self.members if m.worked})

    def rank(self) -> tuple[bool, int, int, int, float, int, str]:
        """Sort key of a skill's ways, best first: one that worked before one that never did, then
        the simplest (fewest state changes: a way that also did what only its task needed is
        less of a recipe), then the one that worked on more tasks, in more runs, more often, in
        fewer steps; the label decides the rest."""
        share = self.worked / self.runs if self.runs else 0.0
        return (not self.worked, len(self.operations), -self.worked_tasks, -self.worked, -share,
                len(self.usual_actions), self.label)


def group_workflows(members: Iterable[Member], abstracts: Mapping[str, Abstract] | None = None) -> list[Workflow]:
    """Members grouped by (domain, operations), each group with its abstract experience when one of
    its members instantiates an active one; in a stable order (domain, operations)."""
    groups: dict[tuple[str, tuple[str, ...]], list[Member]] = {}
    for member in members:
        groups.setdefault((member.domain, member.operations), []).append(member)
    workflows = []
    for (domain, ops), group in sorted(groups.items()):
        group.sort(key=lambda m: m.id)
        abstract_ids = sorted({m.abstract_id for m in group if m.abstract_id is not None})
        abstract = None
        if abstract_ids:
            abstract = (abstracts or {}).get(abstract_ids[0]) or Abstract(abstract_ids[0])
        workflows.append(Workflow(domain, ops, group, abstract))
    return workflows


@dataclass
class PlannedSkill:
    """A candidate that passed the threshold: its ways (best first) and, for a concept, its document."""

    kind: SkillKind
    source_id: str
    title: str
    ways: list[Workflow]
    concept: ConceptDoc | None = None
    name: str = ""

    @property
    def runs(self) -> int:
        return sum(w.runs for w in self.ways)

    @property
    def worked(self) -> int:
        return sum(w.worked for w in self.ways)

    @property
    def tasks(self) -> int:
        return len({m.task_key for w in self.ways for m in w.members})

    @property
    def domains(self) -> list[str]:
        return sorted({w.domain for w in self.ways})

    @property
    def members(self) -> list[Member]:
        return [m for w in self.ways for m in w.members]

    def name_source(self) -> str:
        if self.kind == "concept":
            return self.title
        return f"{self.ways[0].domain} {self.ways[0].label}"

    @cached_property
    def own_actions(self) -> frozenset[str]:
        """The actions a skill speaks for, so that its pitfalls are about them: a workflow's every
        call; for a meta-concept, the look-ups of its ways and the state changes of the operation
        it names ("cancel reservation": cancel_reservation, not the update its runs also made)."""
        actions = {a for m in self.members for a in m.actions}
        named = self.concept.operation_verbs if self.concept is not None else frozenset()
        if not named:
            return frozenset(actions)
        return frozenset(a for a in actions if action_verb(a) is None or action_verb(a) in named)


@dataclass
class SkillPlan:
    skills: list[PlannedSkill]
    below_threshold: list[SkippedCandidate]


def title_case(text: str) -> str:
    return text[:1].upper() + text[1:]


def plan_skills(concepts: Sequence[ConceptDoc], workflows: Sequence[Workflow], min_runs: int) -> SkillPlan:
    """Which meta-concepts and workflows become skills (see the module docstring), named uniquely:
    the best-supported candidate keeps a contested name."""
    skills: list[PlannedSkill] = []
    skipped: list[SkippedCandidate] = []
    for concept in concepts:
        ways = sorted((w for w in workflows if any(concept.id in m.meta_ids for m in w.members)), key=Workflow.rank)
        domains = sorted({w.domain for w in ways}) or [""]
        for domain in domains:
            # A meta-concept whose runs span domains is one skill per domain: what an agent of one
            # domain learns from another's steps is noise.
            title = title_case(concept.name) + (f" ({domain})" if len(domains) > 1 else "")
            mine = [w for w in ways if w.domain == domain]
            candidate = PlannedSkill("concept", concept.id, title, mine, concept.for_domain(domain))
            if mine and candidate.worked >= min_runs:
                skills.append(candidate)
            else:
                skipped.append(SkippedCandidate(kind="concept", source_id=concept.id, title=candidate.title,
                                                runs=candidate.runs, worked=candidate.worked))
    covered = {w.key for skill in skills for w in skill.ways}
    for workflow in workflows:
        if workflow.key in covered:
            continue
        title = f"{title_case(workflow.label)} ({workflow.domain})"
        if workflow.worked >= min_runs:
            skills.append(PlannedSkill("workflow", workflow.source_id, title, [workflow]))
        else:
            skipped.append(SkippedCandidate(kind="workflow", source_id=workflow.source_id, title=title,
                                            runs=workflow.runs, worked=workflow.worked))
    skills.sort(key=lambda s: (-s.worked, -s.runs, s.title, s.source_id))
    for skill, name in zip(skills, unique_names(s.name_source() for s in skills), strict=True):
        skill.name = name
    skills.sort(key=lambda s: s.name)
    skipped.sort(key=lambda s: (-s.worked, -s.runs, s.title, s.source_id))
    return SkillPlan(skills, skipped)


