"""A namespace's link state: the facts, their merge blocks and the link plan, updated part by part
(:class:`LinkState`), and :func:`plan_links`, the whole plan from every fact."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.link import ALTERNATIVE_THRESHOLD, ALTERNATIVES_PER_EXPERIENCE, LinkPlan, Row, Workflow
from kbgraph.ingest.link_state._alternatives import AlternativePlanner
from kbgraph.ingest.link_state._index import FactIndex, workflows_touched_by
from kbgraph.ingest.link_state._ledger import (
    ADAPTATION,
    DECLARED,
    LinkDelta,
    PartLedger,
    RelationKey,
    relation_key,
)
from kbgraph.ingest.link_state._workflows import WorkflowPlanner
from kbgraph.ingest.merge import MERGE_THRESHOLD, MergeGroup, blocks_of, groups_of
from kbgraph.core.shapes import operation_shape
from kbgraph.ingest.vector_set import VectorSet
from kbgraph.core.models import Experience


class LinkState:
    """The facts (:class:`FactIndex`), the relations each part contributes (:class:`PartLedger`),
    and the two planners that fill it: workflows (ABSTRACTION, COMPOSITION, ADAPTATION) and
    alternatives."""

    def __init__(self, facts: Iterable[ExperienceFacts] = (), alternative_threshold: float = ALTERNATIVE_THRESHOLD,
                 alternatives_per_experience: int = ALTERNATIVES_PER_EXPERIENCE, merge_threshold: float = MERGE_THRESHOLD):
        self.merge_threshold = merge_threshold
        self._index = FactIndex()
        self._ledger = PartLedger()
        self._workflows = WorkflowPlanner(self._index, self._ledger)
        self._alternatives = AlternativePlanner(self._index, self._ledger, alternative_threshold,
                                                alternatives_per_experience)
        self.update(removed=(), upserted=facts)

    @property
    def facts(self) -> dict[str, ExperienceFacts]:
        return self._index.facts

    @property
    def abstracts(self) -> dict[Workflow, Experience]:
        return self._workflows.abstracts

    @property
    def relations(self) -> dict[RelationKey, Row]:
        return self._ledger.relations

    @property
    def alternative_threshold(self) -> float:
        return self._alternatives.threshold

    @property
    def alternatives_per_experience(self) -> int:
        return self._alternatives.per_experience

    # -- reading -----------------------------------------------------------------------------------

    def plan(self) -> LinkPlan:
        order = {"ABSTRACTION": 0, "COMPOSITION": 1, "ADAPTATION": 2, "ALTERNATIVE": 3}
        return LinkPlan(abstracts=[self.abstracts[w] for w in sorted(self.abstracts)],
                        relations=sorted(self.relations.values(), key=lambda r: (order[r["type"]], relation_key(r))))

    # -- merging -----------------------------------------------------------------------------------

    def plan_merges(self, fresh: Iterable[ExperienceFacts]) -> list[MergeGroup]:
        """The merges that ``fresh`` experiences (new, or stored ones whose provenance changed)
        bring: within their blocks, pairs with at least one of them at cosine >= merge_threshold.
        The same groups plan_merges finds over everything, as the stored ones hold no pair."""
        plan: list[MergeGroup] = []
        for key, news in blocks_of(fresh).items():
            stored = self._index.blocks.get(key)
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
            self._index.remove(fact)
        for fact in fresh:
            self._index.add(fact)
        for fact in [*leaving, *fresh]:
            workflows |= workflows_touched_by(fact)
            sources |= set(fact.source_ids)
            if fact.adapted_from:
                declared_facts.add(fact.id)
        touched: set[RelationKey] = set()
        abstracts_before = {w: self.abstracts.get(w) for w in workflows}
        moved = self._workflows.replan_workflows(workflows, touched)
        parts = self._workflows.composition_parts(moved)
        parts |= {(ADAPTATION, shape) for w in workflows if (shape := operation_shape(w[1]))}
        for source in sources:
            declared_facts |= self._index.adapted.get(source, set())
        parts |= {(DECLARED, i) for i in declared_facts}
        touched |= self._workflows.replan_parts(parts)
        touched |= self._alternatives.replan(leaving, fresh)
        delta = self._ledger.delta(touched)
        for workflow, before in abstracts_before.items():
            after = self.abstracts.get(workflow)
            if after is not None:
                delta.abstracts.append(after)
            elif before is not None:
                delta.dissolved.append(before.key)
        return delta


def plan_links(
    facts: list[ExperienceFacts],
    alternative_threshold: float = ALTERNATIVE_THRESHOLD,
    alternatives_per_experience: int = ALTERNATIVES_PER_EXPERIENCE,
) -> LinkPlan:
    """The whole plan from every fact (:class:`LinkState` builds it part by part, so that a later
    ingest can re-plan only the parts it touches)."""
    return LinkState(facts, alternative_threshold, alternatives_per_experience).plan()
