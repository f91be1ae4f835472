"""The facts a link state holds, indexed the ways its planners look them up: merge blocks, each
workflow's members, a domain's experiences without steps, user-given abstract experiences, and
which experiences hold (or were adapted from) each run."""

from __future__ import annotations

from collections import defaultdict

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.link import ABSTRACT_SOURCE, Workflow, workflow_of
from kbgraph.ingest.merge import BlockKey, block_key
from kbgraph.ingest.vector_set import VectorSet


class FactIndex:
    def __init__(self) -> None:
        self.facts: dict[str, ExperienceFacts] = {}
        self.blocks: dict[BlockKey, VectorSet] = defaultdict(VectorSet)
        self.members: dict[Workflow, set[str]] = defaultdict(set)  # concrete experiences with steps
        self.stepless: dict[str, set[str]] = defaultdict(set)  # domain -> concrete experiences without steps
        self.declared: dict[Workflow, set[str]] = defaultdict(set)  # user-given abstract experiences
        self.sources: dict[str, set[str]] = defaultdict(set)  # run id -> experiences holding it
        self.adapted: dict[str, set[str]] = defaultdict(set)  # run id -> experiences adapted from it

    def add(self, fact: ExperienceFacts) -> None:
        self.facts[fact.id] = fact
        key = block_key(fact)
        if key is not None:
            self.blocks[key].add(fact.id, fact.pg)
        for source in fact.source_ids:
            self.sources[source].add(fact.id)
        for run in fact.adapted_from:
            self.adapted[run].add(fact.id)
        if fact.source == ABSTRACT_SOURCE:
            return
        if fact.kind == "concrete":
            if fact.actions:
                self.members[workflow_of(fact)].add(fact.id)
            else:
                self.stepless[fact.domain].add(fact.id)
        elif fact.kind == "abstract" and fact.actions:
            self.declared[workflow_of(fact)].add(fact.id)

    def remove(self, fact: ExperienceFacts) -> None:
        del self.facts[fact.id]
        key = block_key(fact)
        if key is not None:
            self.blocks[key].remove(fact.id)
        for source in fact.source_ids:
            self.sources[source].discard(fact.id)
        for run in fact.adapted_from:
            self.adapted[run].discard(fact.id)
        if fact.source == ABSTRACT_SOURCE:
            return
        if fact.kind == "concrete":
            if fact.actions:
                self.members[workflow_of(fact)].discard(fact.id)
            else:
                self.stepless[fact.domain].discard(fact.id)
        elif fact.kind == "abstract" and fact.actions:
            self.declared[workflow_of(fact)].discard(fact.id)

    def workflow_members(self, workflow: Workflow) -> list[ExperienceFacts]:
        """Its concrete experiences with steps (by id), then — for a domain's look-up-only
        workflow, when it has some — the domain's experiences without steps (by id)."""
        ids = sorted(self.members.get(workflow, ()))
        if ids and not workflow[1]:
            ids += sorted(self.stepless.get(workflow[0], ()))
        return [self.facts[i] for i in ids]

    def origin_of(self, run: str) -> str | None:
        """The experience that holds ``run`` (the greatest id, when several do)."""
        holders = self.sources.get(run)
        return max(holders) if holders else None


def workflows_touched_by(fact: ExperienceFacts) -> set[Workflow]:
    """The workflows whose ABSTRACTION changes when ``fact`` comes or goes."""
    if fact.source == ABSTRACT_SOURCE or fact.kind not in ("concrete", "abstract"):
        return set()
    if fact.kind == "abstract":
        return {workflow_of(fact)} if fact.actions else set()
    # A run without steps joins its domain's look-up-only workflow, when there is one.
    return {workflow_of(fact) if fact.actions else (fact.domain, ())}
