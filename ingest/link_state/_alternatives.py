"""Planning ALTERNATIVE relations: each way that worked chooses the closest ways of its domain
(cosine ≥ the threshold, another workflow), and whoever a change concerns chooses again — new
ways, those close to them, and those that had chosen one that left."""

from __future__ import annotations

from collections import defaultdict

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.link import Workflow, alternative_row, is_alternative_candidate, workflow_of
from kbgraph.ingest.link_state._index import FactIndex
from kbgraph.ingest.link_state._ledger import ALTERNATIVE, PartLedger, RelationKey
from kbgraph.ingest.vector_set import VectorSet


class AlternativePlanner:
    """The alternative candidates per domain and each one's choices."""

    def __init__(self, index: FactIndex, ledger: PartLedger, threshold: float, per_experience: int) -> None:
        self._index = index
        self._ledger = ledger
        self.threshold = threshold
        self.per_experience = per_experience
        self._candidates: dict[str, VectorSet] = defaultdict(VectorSet)  # domain -> alternative candidates
        self._choices: dict[str, tuple[str, ...]] = {}  # experience -> the alternatives it chose
        self._workflows: dict[str, Workflow] = {}  # alternative candidate -> its workflow
        self._chosen_by: dict[str, set[str]] = defaultdict(set)

    def replan(self, leaving: list[ExperienceFacts], fresh: list[ExperienceFacts]) -> set[RelationKey]:
        """Takes ``leaving`` experiences out and ``fresh`` ones in (both already re-indexed);
        the relation keys whose contributions changed."""
        facts = self._index.facts
        threshold = self.threshold
        redo: set[str] = set()
        touched: set[RelationKey] = set()
        for fact in leaving:
            self._workflows.pop(fact.id, None)
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
        for domain, news in by_domain.items():
            redo |= {f.id for f in news}
            if len(self._candidates[domain]) == len(news):
                continue  # all of the domain's ways are new (a plan from scratch): each chooses below
            # Whoever is close to a new way may choose it now.
            for fact, close in zip(news, self._candidates[domain].close_to([f.pg for f in news], threshold), strict=True):
                own = self._workflow_of(fact.id)
                redo |= {other for _, other in close if self._workflow_of(other) != own}
        redo = {i for i in redo if i in facts and is_alternative_candidate(facts[i])}
        by_domain = defaultdict(list)
        for i in sorted(redo):
            by_domain[facts[i].domain].append(facts[i])
        for domain, choosers in by_domain.items():
            vectors = [f.pg for f in choosers]
            for fact, close in zip(choosers, self._candidates[domain].close_to(vectors, threshold), strict=True):
                ranked = sorted(close, key=lambda c: (-c[0], c[1]))
                own = self._workflow_of(fact.id)
                chosen = [(cosine, other) for cosine, other in ranked
                          if self._workflow_of(other) != own][: self.per_experience]
                touched |= self._choose(fact.id, tuple(other for _, other in chosen), dict(
                    (other, cosine) for cosine, other in chosen))
        return touched

    def _workflow_of(self, experience: str) -> Workflow:
        workflow = self._workflows.get(experience)
        if workflow is None:
            workflow = self._workflows[experience] = workflow_of(self._index.facts[experience])
        return workflow

    def _choose(self, chooser: str, chosen: tuple[str, ...], cosines: dict[str, float] | None = None) -> set[RelationKey]:
        touched: set[RelationKey] = set()
        for other in self._choices.pop(chooser, ()):
            self._chosen_by[other].discard(chooser)
            pair = (ALTERNATIVE, (chooser, other))
            touched |= self._ledger.keys_of(pair)
            self._ledger.set_part(pair, [], set())
        if chosen:
            self._choices[chooser] = chosen
        for other in chosen:
            self._chosen_by[other].add(chooser)
            row = alternative_row(self._index.facts[chooser], self._index.facts[other], (cosines or {})[other])
            self._ledger.set_part((ALTERNATIVE, (chooser, other)), [row], touched)
        return touched
