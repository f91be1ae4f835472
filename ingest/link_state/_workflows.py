"""Planning the relations between workflows, part by part: each workflow's ABSTRACTION (its
abstract experience and representative), COMPOSITION of the workflows a changed one may contain,
ADAPTATION of a shape across domains, and declared ADAPTATION (``adapted_from``)."""

from __future__ import annotations

from collections import defaultdict

from kbgraph.ingest.link import (
    Row,
    Vector,
    Workflow,
    adaptation_rows,
    composition_rows,
    declared_rows,
    representative_of,
)
from kbgraph.ingest.link_state._index import FactIndex
from kbgraph.ingest.link_state._ledger import (
    ABSTRACTION,
    ADAPTATION,
    COMPOSITION,
    DECLARED,
    PartKey,
    PartLedger,
    RelationKey,
)
from kbgraph.core.shapes import is_subsequence, operation_shape
from kbgraph.ingest.workflow_index import DomainWorkflows
from kbgraph.core.models import Experience

#: Past this many changed workflows in a domain, every COMPOSITION of the domain is planned again
#: rather than looking for those a changed one contains (the check costs more than it saves).
WHOLE_DOMAIN_AFTER = 16


class WorkflowPlanner:
    """The workflows' abstract experiences and representatives, and the parts planned from them."""

    def __init__(self, index: FactIndex, ledger: PartLedger) -> None:
        self._index = index
        self._ledger = ledger
        self.abstracts: dict[Workflow, Experience] = {}
        self._representatives: dict[Workflow, tuple[str, Vector]] = {}
        # domain -> the workflows with a representative, closest first
        self._domain_workflows: dict[str, DomainWorkflows] = defaultdict(DomainWorkflows)
        self._shapes: dict[tuple[str, ...], dict[str, set[Workflow]]] = defaultdict(lambda: defaultdict(set))

    def replan_workflows(self, workflows: set[Workflow], touched: set[RelationKey]) -> set[Workflow]:
        """ABSTRACTION of each workflow; returns those whose representative appeared, vanished or
        changed id (their COMPOSITION is planned again)."""
        moved: set[Workflow] = set()
        for workflow in sorted(workflows):
            before = self._representatives.get(workflow)
            members = self._index.workflow_members(workflow)
            rows: list[Row] = []
            abstract: Experience | None = None
            representative: tuple[str, Vector] | None = None
            if members:
                abstract, representative, rows = representative_of(workflow, members)
            elif declared := self._index.declared.get(workflow):
                chosen = max(declared)  # abstract experiences given by users stand for their workflow too
                representative = (chosen, self._index.facts[chosen].pg)
            if abstract is None:
                self.abstracts.pop(workflow, None)
            else:
                self.abstracts[workflow] = abstract
            self._ledger.set_part((ABSTRACTION, workflow), rows, touched)
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

    def composition_parts(self, moved: set[Workflow]) -> set[PartKey]:
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

    def replan_parts(self, parts: set[PartKey]) -> set[RelationKey]:
        """COMPOSITION, ADAPTATION and DECLARED parts planned again; the relation keys involved."""
        touched: set[RelationKey] = set()
        for part in parts:
            kind, identity = part
            rows: list[Row] = []
            if kind == COMPOSITION:
                rows = self._composition_rows(identity)
            elif kind == ADAPTATION:
                rows = adaptation_rows(identity, {d: sorted(ws) for d, ws in self._shapes.get(identity, {}).items()},
                                       lambda w: len(self._index.workflow_members(w)),
                                       self._representatives.__getitem__)
            elif kind == DECLARED:
                fact = self._index.facts.get(identity)
                rows = declared_rows(fact, self._index.origin_of) if fact is not None else []
            self._ledger.set_part(part, rows, touched)
        return touched

    def _composition_rows(self, small: Workflow) -> list[Row]:
        representative = self._representatives.get(small)
        if representative is None:
            return []
        longer = self._domain_workflows[small[0]].longer_containing(small)
        return composition_rows(small, representative[0], longer, lambda big: self._representatives[big][0])
