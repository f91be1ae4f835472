"""Stages 6–7 kept up to date: a namespace's merge blocks and link plan, re-planned part by part.

:func:`~kbgraph.ingest.link.plan_links` builds this state from every fact and reads the plan off
it. A consolidation that remembers the state (``KnowledgeBase.link_state``, see
ingest/consolidate.py) hands it only the experiences written since, and it re-plans the parts
they touch:

- merges: only the blocks (kind, workflow, scope, owner, outcome) of new experiences, and within
  them only pairs with a new one — stored experiences were merged already, so no two of them are
  near-duplicates;
- ABSTRACTION of each workflow that gained or lost a member (its abstract experience, its
  representative, its members' relations);
- COMPOSITION of each workflow whose representative appeared, vanished or changed, and of every
  smaller workflow of its domain that it contains;
- ADAPTATION of the shapes of touched workflows, and declared ADAPTATION of experiences whose
  ``adapted_from`` names a run of a changed experience;
- ALTERNATIVE choices (the closest ways that worked, cosine ≥ 0.8, another workflow) of new
  experiences, of those close to them and of those that had chosen one that left.

Every part is computed by the same function in both cases and similar pairs come from
:class:`~kbgraph.ingest.vector_set.VectorSet` (exact per-pair cosines), so the incremental state
equals the one built from scratch (tests/ingest/test_link_state.py checks it on real runs).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.link import (
    ABSTRACT_SOURCE,
    ALTERNATIVE_THRESHOLD,
    ALTERNATIVES_PER_EXPERIENCE,
    LinkPlan,
    Row,
    Vector,
    Workflow,
    adaptation_rows,
    alternative_row,
    composition_rows,
    declared_rows,
    is_alternative_candidate,
    representative_of,
    workflow_of,
)
from kbgraph.ingest.merge import MERGE_THRESHOLD, BlockKey, MergeGroup, block_key, blocks_of, groups_of
from kbgraph.ingest.shapes import is_subsequence, operation_shape
from kbgraph.ingest.vector_set import VectorSet
from kbgraph.ingest.workflow_index import DomainWorkflows
from kbgraph.models import Experience

RelationKey = tuple[str, str, str]  # (type, source id, target id)
# Parts, in the order their rows win when two give the same relation (declared provenance over
# the shape-based adaptation, as written last in a full plan).
ABSTRACTION, COMPOSITION, ADAPTATION, DECLARED, ALTERNATIVE = range(5)
PartKey = tuple[int, Any]
#: Past this many changed workflows in a domain, every COMPOSITION of the domain is planned again
#: rather than looking for those a changed one contains (the check costs more than it saves).
WHOLE_DOMAIN_AFTER = 16


@dataclass
class LinkDelta:
    """What an update changed: relations to write or delete, workflows to write or dissolve."""
    upserted: list[Row] = field(default_factory=list)
    deleted: list[RelationKey] = field(default_factory=list)
    abstracts: list[Experience] = field(default_factory=list)  # new or changed
    dissolved: list[str] = field(default_factory=list)  # abstract ids whose workflow is no longer shared


def _key(row: Row) -> RelationKey:
    return row["type"], row["source_id"], row["target_id"]


class LinkState:
    def __init__(self, facts: Iterable[ExperienceFacts] = (), alternative_threshold: float = ALTERNATIVE_THRESHOLD,
                 alternatives_per_experience: int = ALTERNATIVES_PER_EXPERIENCE, merge_threshold: float = MERGE_THRESHOLD):
        self.alternative_threshold = alternative_threshold
        self.alternatives_per_experience = alternatives_per_experience
        self.merge_threshold = merge_threshold
        self.facts: dict[str, ExperienceFacts] = {}
        self.abstracts: dict[Workflow, Experience] = {}
        self.relations: dict[RelationKey, Row] = {}
        self._blocks: dict[BlockKey, VectorSet] = defaultdict(VectorSet)
        self._members: dict[Workflow, set[str]] = defaultdict(set)  # concrete experiences with steps
        self._stepless: dict[str, set[str]] = defaultdict(set)  # domain -> concrete experiences without steps
        self._declared: dict[Workflow, set[str]] = defaultdict(set)  # user-given abstract experiences
        self._representatives: dict[Workflow, tuple[str, Vector]] = {}
        # domain -> the workflows with a representative, closest first
        self._domain_workflows: dict[str, DomainWorkflows] = defaultdict(DomainWorkflows)
        self._shapes: dict[tuple[str, ...], dict[str, set[Workflow]]] = defaultdict(lambda: defaultdict(set))
        self._sources: dict[str, set[str]] = defaultdict(set)  # run id -> experiences holding it
        self._adapted: dict[str, set[str]] = defaultdict(set)  # run id -> experiences adapted from it
        self._candidates: dict[str, VectorSet] = defaultdict(VectorSet)  # domain -> alternative candidates
        self._choices: dict[str, tuple[str, ...]] = {}  # experience -> the alternatives it chose
        self._workflows: dict[str, Workflow] = {}  # alternative candidate -> its workflow
        self._chosen_by: dict[str, set[str]] = defaultdict(set)
        self._parts: dict[PartKey, dict[RelationKey, Row]] = {}
        self._contributions: dict[RelationKey, dict[PartKey, Row]] = defaultdict(dict)
        self.update(removed=(), upserted=facts)

    # -- reading -----------------------------------------------------------------------------------

    def plan(self) -> LinkPlan:
        order = {"ABSTRACTION": 0, "COMPOSITION": 1, "ADAPTATION": 2, "ALTERNATIVE": 3}
        return LinkPlan(abstracts=[self.abstracts[w] for w in sorted(self.abstracts)],
                        relations=sorted(self.relations.values(), key=lambda r: (order[r["type"]], _key(r))))

    # -- merging -----------------------------------------------------------------------------------

    def plan_merges(self, fresh: Iterable[ExperienceFacts]) -> list[MergeGroup]:
        """The merges that ``fresh`` experiences (new, or stored ones whose provenance changed)
        bring: within their blocks, pairs with at least one of them at cosine >= merge_threshold.
        The same groups plan_merges finds over everything, as the stored ones hold no pair."""
        plan: list[MergeGroup] = []
        for key, news in blocks_of(fresh).items():
            stored = self._blocks.get(key)
            new_ids = {f.id for f in news}
            among = VectorSet()
            for fact in news:
                among.add(fact.id, fact.pg)
            pairs: list[tuple[str, str]] = []
            members = {f.id: f for f in news}
            vectors = [f.pg for f in news]
            for fact, close in zip(news, among.close_to(vectors, self.merge_threshold), strict=True):
                pairs += [(fact.id, other) for _, other in close if other != fact.id]
            if stored is not None:
                for fact, close in zip(news, stored.close_to(vectors, self.merge_threshold), strict=True):
                    for _, other in close:
                        if other not in new_ids:
                            pairs.append((fact.id, other))
                            members[other] = self.facts[other]
            plan += groups_of(list(members.values()), pairs)
        return sorted(plan, key=lambda g: g.canonical)

    def after_merges(self, fresh: Iterable[ExperienceFacts], groups: Iterable[MergeGroup],
                     removed: Iterable[str] = ()) -> LinkDelta:
        """Takes in ``fresh`` experiences once ``groups`` are merged (merged-away ones leave, each
        survivor holds its group's provenance) and ``removed`` ones are gone; returns what the
        link plan changed."""
        upserted = {f.id: f for f in fresh}
        removed = list(removed)
        for group in groups:
            canonical = upserted.get(group.canonical) or self.facts[group.canonical]
            upserted[group.canonical] = replace(
                canonical, source_ids=tuple(group.source_ids), failed_source_ids=tuple(group.failed_source_ids),
                success_rate=group.success_rate)
            for merged in group.merged_ids:
                upserted.pop(merged, None)
                removed.append(merged)
        return self.update(removed, upserted.values())

    # -- updating ----------------------------------------------------------------------------------

    def update(self, removed: Iterable[str], upserted: Iterable[ExperienceFacts]) -> LinkDelta:
        """Removes experiences and adds (or replaces) others, re-plans the parts they touch and
        returns the difference."""
        fresh = list(upserted)
        leaving = [self.facts[i] for i in dict.fromkeys([*removed, *(f.id for f in fresh)]) if i in self.facts]
        workflows: set[Workflow] = set()
        sources: set[str] = set()
        declared_facts: set[str] = set()
        for fact in leaving:
            self._unindex(fact)
        for fact in fresh:
            self._index(fact)
        for fact in [*leaving, *fresh]:
            workflows |= self._workflows_touched_by(fact)
            sources |= set(fact.source_ids)
            if fact.adapted_from:
                declared_facts.add(fact.id)
        touched: set[RelationKey] = set()
        abstracts_before = {w: self.abstracts.get(w) for w in workflows}
        moved = self._replan_workflows(workflows, touched)
        parts = self._composition_parts(moved)
        parts |= {(ADAPTATION, shape) for w in workflows if (shape := operation_shape(w[1]))}
        for source in sources:
            declared_facts |= self._adapted.get(source, set())
        parts |= {(DECLARED, i) for i in declared_facts}
        touched |= self._replan_parts(parts)
        touched |= self._replan_alternatives(leaving, fresh)
        delta = self._delta(touched)
        for workflow, before in abstracts_before.items():
            after = self.abstracts.get(workflow)
            if after is not None:
                delta.abstracts.append(after)
            elif before is not None:
                delta.dissolved.append(before.key)
        return delta

    def _index(self, fact: ExperienceFacts) -> None:
        self.facts[fact.id] = fact
        key = block_key(fact)
        if key is not None:
            self._blocks[key].add(fact.id, fact.pg)
        for source in fact.source_ids:
            self._sources[source].add(fact.id)
        for run in fact.adapted_from:
            self._adapted[run].add(fact.id)
        if fact.source == ABSTRACT_SOURCE:
            return
        if fact.kind == "concrete":
            if fact.actions:
                self._members[workflow_of(fact)].add(fact.id)
            else:
                self._stepless[fact.domain].add(fact.id)
        elif fact.kind == "abstract" and fact.actions:
            self._declared[workflow_of(fact)].add(fact.id)

    def _unindex(self, fact: ExperienceFacts) -> None:
        del self.facts[fact.id]
        self._workflows.pop(fact.id, None)
        key = block_key(fact)
        if key is not None:
            self._blocks[key].remove(fact.id)
        for source in fact.source_ids:
            self._sources[source].discard(fact.id)
        for run in fact.adapted_from:
            self._adapted[run].discard(fact.id)
        if fact.source == ABSTRACT_SOURCE:
            return
        if fact.kind == "concrete":
            if fact.actions:
                self._members[workflow_of(fact)].discard(fact.id)
            else:
                self._stepless[fact.domain].discard(fact.id)
        elif fact.kind == "abstract" and fact.actions:
            self._declared[workflow_of(fact)].discard(fact.id)

    @staticmethod
    def _workflows_touched_by(fact: ExperienceFacts) -> set[Workflow]:
        if fact.source == ABSTRACT_SOURCE or fact.kind not in ("concrete", "abstract"):
            return set()
        if fact.kind == "abstract":
            return {workflow_of(fact)} if fact.actions else set()
        # A run without steps joins its domain's look-up-only workflow, when there is one.
        return {workflow_of(fact) if fact.actions else (fact.domain, ())}

    def _workflow_members(self, workflow: Workflow) -> list[ExperienceFacts]:
        """Its concrete experiences with steps (by id), then — for a domain's look-up-only
        workflow, when it has some — the domain's experiences without steps (by id)."""
        ids = sorted(self._members.get(workflow, ()))
        if ids and not workflow[1]:
            ids += sorted(self._stepless.get(workflow[0], ()))
        return [self.facts[i] for i in ids]

    def _replan_workflows(self, workflows: set[Workflow], touched: set[RelationKey]) -> set[Workflow]:
        """ABSTRACTION of each workflow; returns those whose representative appeared, vanished or
        changed id (their COMPOSITION is planned again)."""
        moved: set[Workflow] = set()
        for workflow in sorted(workflows):
            before = self._representatives.get(workflow)
            members = self._workflow_members(workflow)
            rows: list[Row] = []
            abstract: Experience | None = None
            representative: tuple[str, Vector] | None = None
            if members:
                abstract, representative, rows = representative_of(workflow, members)
            elif declared := self._declared.get(workflow):
                chosen = max(declared)  # abstract experiences given by users stand for their workflow too
                representative = (chosen, self.facts[chosen].pg)
            if abstract is None:
                self.abstracts.pop(workflow, None)
            else:
                self.abstracts[workflow] = abstract
            self._set_part((ABSTRACTION, workflow), rows, touched)
            if representative is None:
                self._representatives.pop(workflow, None)
            else:
                self._representatives[workflow] = representative
            if (before is None) != (representative is None):
                self._place(workflow, present=representative is not None)
            if (before and before[0]) != (representative and representative[0]):
                moved.add(workflow)
        return moved

    def _place(self, workflow: Workflow, present: bool) -> None:
        self._domain_workflows[workflow[0]].place(workflow, present)
        shape = operation_shape(workflow[1])
        if present:
            if shape:
                self._shapes[shape][workflow[0]].add(workflow)
        else:
            if shape:
                self._shapes[shape][workflow[0]].discard(workflow)
                if not self._shapes[shape][workflow[0]]:
                    del self._shapes[shape][workflow[0]]

    def _composition_parts(self, moved: set[Workflow]) -> set[PartKey]:
        """The workflows whose COMPOSITION may have changed: the moved ones and every smaller
        workflow of their domain that a moved one contains."""
        parts = {(COMPOSITION, w) for w in moved}
        by_domain: dict[str, list[Workflow]] = defaultdict(list)
        for workflow in moved:
            by_domain[workflow[0]].append(workflow)
        for domain, changed in by_domain.items():
            workflows = self._domain_workflows.get(domain)
            if workflows is None:
                continue
            if len(changed) > WHOLE_DOMAIN_AFTER:  # e.g. a plan from scratch: every one, without looking
                parts |= {(COMPOSITION, small) for _, small, _ in workflows.entries if small[1]}
                continue
            for big in changed:
                parts |= {(COMPOSITION, small) for small, _ in workflows.shorter_within(big)
                          if small[1] and is_subsequence(small[1], big[1])}
        return parts

    def _replan_parts(self, parts: set[PartKey]) -> set[RelationKey]:
        touched: set[RelationKey] = set()
        for part in parts:
            kind, identity = part
            rows: list[Row] = []
            if kind == COMPOSITION:
                rows = self._composition_rows(identity)
            elif kind == ADAPTATION:
                rows = adaptation_rows(identity, {d: sorted(ws) for d, ws in self._shapes.get(identity, {}).items()},
                                       lambda w: len(self._workflow_members(w)), self._representatives.__getitem__)
            elif kind == DECLARED:
                fact = self.facts.get(identity)
                rows = declared_rows(fact, self._origin_of) if fact is not None else []
            self._set_part(part, rows, touched)
        return touched

    def _composition_rows(self, small: Workflow) -> list[Row]:
        representative = self._representatives.get(small)
        if representative is None:
            return []
        longer = self._domain_workflows[small[0]].longer_containing(small)
        return composition_rows(small, representative[0], longer, lambda big: self._representatives[big][0])

    def _origin_of(self, run: str) -> str | None:
        holders = self._sources.get(run)
        return max(holders) if holders else None

    def _replan_alternatives(self, leaving: list[ExperienceFacts], fresh: list[ExperienceFacts]) -> set[RelationKey]:
        threshold = self.alternative_threshold
        redo: set[str] = set()
        touched: set[RelationKey] = set()
        for fact in leaving:
            if is_alternative_candidate(fact):
                self._candidates[fact.domain].remove(fact.id)
                redo |= self._chosen_by.get(fact.id, set())
                touched |= self._choose(fact.id, ())
        added = [f for f in fresh if is_alternative_candidate(f)]
        by_domain: dict[str, list[ExperienceFacts]] = defaultdict(list)
        for fact in added:
            self._candidates[fact.domain].add(fact.id, fact.pg)
            by_domain[fact.domain].append(fact)
        for domain, facts in by_domain.items():
            redo |= {f.id for f in facts}
            if len(self._candidates[domain]) == len(facts):
                continue  # all of the domain's ways are new (a plan from scratch): each chooses below
            # Whoever is close to a new way may choose it now.
            for fact, close in zip(facts, self._candidates[domain].close_to([f.pg for f in facts], threshold), strict=True):
                own = self._workflow_of(fact.id)
                redo |= {other for _, other in close if self._workflow_of(other) != own}
        redo = {i for i in redo if i in self.facts and is_alternative_candidate(self.facts[i])}
        by_domain = defaultdict(list)
        for i in sorted(redo):
            by_domain[self.facts[i].domain].append(self.facts[i])
        for domain, facts in by_domain.items():
            for fact, close in zip(facts, self._candidates[domain].close_to([f.pg for f in facts], threshold), strict=True):
                ranked = sorted(close, key=lambda c: (-c[0], c[1]))
                own = self._workflow_of(fact.id)
                chosen = [(cosine, other) for cosine, other in ranked
                          if self._workflow_of(other) != own][: self.alternatives_per_experience]
                touched |= self._choose(fact.id, tuple(other for _, other in chosen), dict(
                    (other, cosine) for cosine, other in chosen))
        return touched

    def _workflow_of(self, experience: str) -> Workflow:
        workflow = self._workflows.get(experience)
        if workflow is None:
            workflow = self._workflows[experience] = workflow_of(self.facts[experience])
        return workflow

    def _choose(self, chooser: str, chosen: tuple[str, ...], cosines: dict[str, float] | None = None) -> set[RelationKey]:
        touched: set[RelationKey] = set()
        for other in self._choices.pop(chooser, ()):
            self._chosen_by[other].discard(chooser)
            pair = (ALTERNATIVE, (chooser, other))
            touched |= set(self._parts.get(pair, {}))
            self._set_part(pair, [], set())
        if chosen:
            self._choices[chooser] = chosen
        for other in chosen:
            self._chosen_by[other].add(chooser)
            row = alternative_row(self.facts[chooser], self.facts[other], (cosines or {})[other])
            self._set_part((ALTERNATIVE, (chooser, other)), [row], touched)
        return touched

    def _set_part(self, part: PartKey, rows: list[Row], touched: set[Any]) -> None:
        """Replaces what one part contributes; adds the relation keys involved to ``touched``."""
        before = self._parts.pop(part, {})
        for key in before:
            contributions = self._contributions[key]
            contributions.pop(part, None)
            if not contributions:
                del self._contributions[key]
            touched.add(key)
        now: dict[RelationKey, Row] = {}
        for row in rows:
            now[_key(row)] = row  # within a part, the last row for a relation wins (as in a full plan)
        if now:
            self._parts[part] = now
        for key, row in now.items():
            self._contributions[key][part] = row
            touched.add(key)

    def _delta(self, touched: set[RelationKey]) -> LinkDelta:
        delta = LinkDelta()
        for key in sorted(touched):
            contributions = self._contributions.get(key)
            before = self.relations.get(key)
            if not contributions:
                if before is not None:
                    del self.relations[key]
                    delta.deleted.append(key)
                continue
            # Two choosers of one pair give the same row; declared provenance wins over a shape.
            row = contributions[max(contributions, key=lambda p: (p[0], repr(p[1])))]
            if before != row:
                self.relations[key] = row
                delta.upserted.append(row)
        return delta


class RememberedLinks:
    """A KnowledgeBase's link state of its namespace, with the facts version it holds for and the
    namespace's experience relations by type at that version.

    Consolidations of one namespace run one at a time (the ingest lease, or the caller's own
    order), so one remembered state per KnowledgeBase is enough; the lock only keeps ``take`` and
    ``keep`` whole."""

    def __init__(self) -> None:
        self._remembered: tuple[LinkState, dict[str, int]] | None = None
        self._version: str | None = None
        self._lock = threading.Lock()

    def take(self, version: str | None) -> tuple[LinkState, dict[str, int]] | None:
        """The remembered state and relation totals if the namespace is still at ``version``, else
        None (and forgotten). Taken, they are no longer remembered: a consolidation that fails
        half-way leaves nothing behind."""
        with self._lock:
            remembered, self._remembered = self._remembered, None
            held, self._version = self._version, None
            return remembered if remembered is not None and version is not None and held == version else None

    def keep(self, state: LinkState, version: str, relation_totals: dict[str, int]) -> None:
        with self._lock:
            self._remembered, self._version = (state, dict(relation_totals)), version

    def clear(self) -> None:
        with self._lock:
            self._remembered, self._version = None, None
