"""Maintenance (docs/design.md §4, AutoRefine): keep the store healthy as it grows.

One run plans, then (unless it is a dry run) applies exactly the plan:

1. **Merge** active experiences of the same kind, workflow and owner whose problem+goal vectors
   have cosine ≥ ``merge_threshold`` (0.85): the canonical one (smallest id) keeps the union of
   their provenance (:func:`kbgraph.ingest.merge.plan_merges`). Counters are added up inside the
   write transaction from the nodes as they are then (``experience_merge.cypher``), so feedback
   that arrives between plan and write is kept; a merged-away id stays in the survivor's
   ``merged_ids`` and feedback naming it lands on the survivor.
2. **Prune** — archive, never delete — the bottom ``prune_fraction`` (20 %) by the AutoRefine
   score ``s/(u+ε)·log(1+u)·(1+u/(r+ε))`` among experiences retrieved at least
   ``prune_min_retrieved`` times (an experience nobody has retrieved yet has no record to judge).
   Only scores below the mean of that group are pruned, so a store where everything works
   loses nothing. Experiences whose utility fell below ``prune_utility_below`` are archived too.
   Counters are taken after the merges, as the real run will see them.
3. **Relink** what stays active: generated workflows (abstract experiences) no longer shared by
   two or more active experiences are archived — never deleted — under the run's id; workflows
   newly shared are created, dissolved ones shared again come back. The plan lists these too
   (``stage="relink"``): a dry run reports exactly what the real run changes.

Archived experiences keep everything and are never retrieved; :func:`restore` makes them active
again (one run's, or chosen ids) — a restored workflow whose instances are still merged is archived
again by the next relinking. Merges are not undone (the merged ids stay in ``merged_ids``).
Runs happen on demand or when the number of experiences added crosses 10, 20, 40, … (see
:meth:`Maintainer.after_growth`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from kbgraph.store.gateway import Neo4jGateway, Row
from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.link import ABSTRACT_SOURCE
from kbgraph.ingest.link_state import plan_links
from kbgraph.ingest.merge import MergeGroup, plan_merges
from kbgraph.core.settings import LearningSettings
from kbgraph.core.utility import bottom_fraction, growth_checkpoint_reached, maintenance_score, next_growth_checkpoint
from kbgraph.learning.feedback import row_utility


class MaintenanceChange(BaseModel):
    """One change a maintenance run makes (or, in a dry run, would make), and why."""

    action: Literal["merge", "archive", "create", "restore", "relink"]
    stage: Literal["merge", "prune", "relink"] = Field(
        default="prune", description="merge: a near-duplicate folded in; prune: AutoRefine archive; relink: what "
                                     "rebuilding the workflows over the experiences left active does.")
    id: str
    into: str | None = Field(default=None, description="For a merge: the experience it folds into.")
    reason: str
    score: float | None = Field(default=None, description="AutoRefine score (archive) or cosine (merge).")
    retrieved: int = 0
    used: int = 0
    succeeded: int = 0
    utility: float | None = None


class MaintenanceReport(BaseModel):
    run_id: str
    dry_run: bool
    trigger: str
    at: datetime
    examined: int = Field(default=0, description="Active experiences looked at.")
    eligible_for_pruning: int = 0
    merged: int = 0
    archived: int = 0
    workflows_created: int = Field(default=0, description="Abstract experiences the relinking creates.")
    workflows_restored: int = Field(default=0, description="Dissolved workflows shared again, made active.")
    changes: list[MaintenanceChange] = Field(default_factory=list)


class _Candidate:
    """An active experience as the plan sees it (counters summed over what merges into it), with
    its utility at ``now`` as kb.learning_state reports it and the searches weigh it."""

    def __init__(self, row: Row, settings: LearningSettings, now: datetime):
        self.facts = ExperienceFacts.from_row(row)
        self.retrieved = int(row["retrieved"])
        self.used = int(row["used"])
        self.succeeded = int(row["succeeded"])
        self.utility = row_utility(row, settings.utility_half_life_days, now)


def _run_id(now: datetime, namespace: str) -> str:
    digest = hashlib.sha256(f"{namespace}|{now.isoformat()}".encode()).hexdigest()[:8]
    return f"maint-{now.strftime('%Y%m%dT%H%M%S')}-{digest}"


def plan_merge_changes(candidates: dict[str, _Candidate], groups: list[MergeGroup], threshold: float) -> list[MaintenanceChange]:
    changes = []
    for group in groups:
        canonical = candidates[group.canonical].facts.pg
        for merged_id in group.merged_ids:
            cosine = float(np.dot(candidates[merged_id].facts.pg, canonical))
            changes.append(MaintenanceChange(
                action="merge", stage="merge", id=merged_id, into=group.canonical, score=round(cosine, 4),
                reason=f"same kind and workflow as {group.canonical}, problem+goal cosine {cosine:.3f} "
                       f"(group threshold {threshold}); counters summed into it",
            ))
    return changes


def plan_prune_changes(
    candidates: dict[str, _Candidate], groups: list[MergeGroup], settings: LearningSettings
) -> tuple[int, list[MaintenanceChange]]:
    """The archive changes over the experiences that survive the merges; returns how many were
    eligible for the AutoRefine cut and the changes."""
    merged_away = {m for g in groups for m in g.merged_ids}
    counters = {i: (c.retrieved, c.used, c.succeeded) for i, c in candidates.items() if i not in merged_away}
    for g in groups:
        counters[g.canonical] = (g.retrieved, g.used, g.succeeded)
    scores = {i: maintenance_score(s, u, r) for i, (r, u, s) in counters.items() if r >= settings.prune_min_retrieved}
    chosen: dict[str, str] = {}
    if scores:
        mean = sum(scores.values()) / len(scores)
        for i in bottom_fraction(scores, settings.prune_fraction):
            if scores[i] < mean:
                chosen[i] = (f"AutoRefine score {scores[i]:.3f} in the bottom {settings.prune_fraction:.0%} of the "
                             f"{len(scores)} experiences retrieved at least {settings.prune_min_retrieved} times "
                             f"(mean {mean:.3f})")
    if settings.prune_utility_below > 0:
        for i in counters:
            if i not in chosen and candidates[i].utility < settings.prune_utility_below:
                chosen[i] = f"utility {candidates[i].utility:.3f} below {settings.prune_utility_below}"
    changes = []
    for i in sorted(chosen, key=lambda i: (scores.get(i, 0.0), i)):
        r, u, s = counters[i]
        changes.append(MaintenanceChange(
            action="archive", id=i, reason=chosen[i], score=round(scores[i], 6) if i in scores else None,
            retrieved=r, used=u, succeeded=s, utility=round(candidates[i].utility, 6),
        ))
    return len(scores), changes


def workflows_after(candidates: dict[str, _Candidate], groups: list[MergeGroup], archived: set[str]) -> dict[str, str]:
    """The generated workflows relinking will want once the merges and archives are done: id → problem."""
    merged_away = {m for g in groups for m in g.merged_ids}
    remaining = [c.facts for i, c in candidates.items() if i not in merged_away and i not in archived]
    return {a.key: a.problem for a in plan_links(remaining).abstracts}


def plan_workflow_changes(
    candidates: dict[str, _Candidate], wanted: dict[str, str], archived: set[str], stored: dict[str, Row],
) -> list[MaintenanceChange]:
    """What relinking after the merges and archives does to the generated workflows (abstract
    experiences of two or more active experiences): those no longer shared are archived (restorable;
    they return by themselves when shared again), new ones are created, dissolved ones shared again
    come back. ``wanted``: :func:`workflows_after`; ``stored``: id → {status, dissolved} of those
    that exist."""
    changes = []
    for i, candidate in sorted(candidates.items()):
        if candidate.facts.source == ABSTRACT_SOURCE and i not in wanted and i not in archived:
            changes.append(MaintenanceChange(
                action="archive", stage="relink", id=i, reason="its workflow would no longer be shared by two or more active "
                                               "experiences (after this run's merges and archives)",
                retrieved=candidate.retrieved, used=candidate.used, succeeded=candidate.succeeded,
                utility=round(candidate.utility, 6)))
    for key in sorted(wanted):
        row = stored.get(key)
        if row is None:
            changes.append(MaintenanceChange(action="create", stage="relink", id=key,
                                             reason=f"workflow newly shared: {wanted[key]}"))
        elif row["status"] == "archived" and row["dissolved"]:
            changes.append(MaintenanceChange(action="restore", stage="relink", id=key,
                                             reason="its workflow is shared by two or more active experiences again"))
    return changes


class Maintainer:
    """Plans and applies maintenance for one namespace."""

    def __init__(self, gateway: Neo4jGateway, namespace: str, settings: LearningSettings,
                 relink: Callable[[str], None] | None = None):
        self.gateway = gateway
        self.namespace = namespace
        self.settings = settings
        # Rebuilds workflows and relations over what stays active (given the run's id, under which
        # dissolved workflows are archived); without it, the next ingest does it.
        self.relink = relink

    def plan(self, now: datetime, trigger: str = "on demand", dry_run: bool = True) -> tuple[MaintenanceReport, list[MergeGroup]]:
        rows = self.gateway.read("maintenance_candidates", kb=self.namespace)
        candidates = {row["id"]: _Candidate(row, self.settings, now) for row in rows}
        groups = plan_merges([c.facts for c in candidates.values()], self.settings.merge_threshold)
        merges = plan_merge_changes(candidates, groups, self.settings.merge_threshold)
        eligible, archives = plan_prune_changes(candidates, groups, self.settings)
        workflows: list[MaintenanceChange] = []
        # Always planned, not only after merges: a run interrupted between its merges and its
        # relinking leaves workflows to fix, which the next run must show and do.
        if self.relink is not None:
            archived = {c.id for c in archives}
            wanted = workflows_after(candidates, groups, archived)
            stored = {row["id"]: row for row in self.gateway.read("experience_statuses", kb=self.namespace,
                                                                   ids=sorted(wanted))}
            workflows = plan_workflow_changes(candidates, wanted, archived, stored)
            # A run whose relinking did not finish (the process or Neo4j died after its merges
            # were committed) left relations out: this run relinks, even with nothing else to do.
            state = self.gateway.read("kb_state_get", kb=self.namespace)
            pending = state[0]["relink_pending"] if state else None
            if pending:
                workflows.append(MaintenanceChange(
                    action="relink", stage="relink", id=pending,
                    reason=f"maintenance run {pending} was interrupted before relinking: relations and workflows "
                           "over the experiences it merged or archived are rebuilt"))
        dissolved = [c for c in workflows if c.action == "archive"]
        report = MaintenanceReport(
            run_id=_run_id(now, self.namespace), dry_run=dry_run, trigger=trigger, at=now, examined=len(candidates),
            eligible_for_pruning=eligible, merged=len(merges), archived=len(archives) + len(dissolved),
            workflows_created=sum(c.action == "create" for c in workflows),
            workflows_restored=sum(c.action == "restore" for c in workflows),
            changes=[*merges, *archives, *workflows],
        )
        return report, groups

    def run(self, dry_run: bool = False, trigger: str = "on demand", now: datetime | None = None) -> MaintenanceReport:
        """Plans and, unless ``dry_run``, applies the plan: merges and archives in one transaction.
        A Neo4j lost on the way (after the retries) is the gateway's Neo4jUnavailableError."""
        now = now or datetime.now(UTC)
        report, groups = self.plan(now, trigger, dry_run)
        if dry_run:
            return report
        calls: list[tuple[str, dict[str, Any]]] = []
        if groups:
            calls.append(("experience_merge", {"kb": self.namespace, "groups": [g.as_row() for g in groups]}))
        # Dissolved workflows are archived by the relinking below, which knows them by their run.
        archives = [{"id": c.id, "reason": c.reason, "score": c.score} for c in report.changes
                    if c.action == "archive" and c.stage == "prune"]
        if archives:
            calls.append(("maintenance_archive", {"kb": self.namespace, "rows": archives, "run": report.run_id,
                                                  "now": now}))
        relinks = self.relink is not None and bool(report.changes)
        if groups or archives:  # no process links from what it remembers of them (ingest/consolidate.py)
            calls.append(("kb_state_facts_changed", {"kb": self.namespace}))
        # Committed with the merges: until the relinking below is done, the namespace says so.
        calls.append(("kb_state_maintained", {"kb": self.namespace, "run": report.run_id, "now": now,
                                              "trigger": trigger, "archived": report.archived,
                                              "merged": report.merged, "relink_pending": relinks}))
        self.gateway.write_all(calls)
        if relinks:
            assert self.relink is not None
            self.relink(report.run_id)
            self.gateway.write("kb_state_relinked", kb=self.namespace, run=report.run_id)
        return report

    def restore(self, run_id: str | None = None, ids: Sequence[str] = (), now: datetime | None = None) -> list[str]:
        """Makes archived experiences active again: ``ids``, or every one archived by ``run_id``,
        or — with neither — every one archived by the last maintenance run. Returns their ids."""
        if run_id is None and not ids:
            state = self.gateway.read("kb_state_get", kb=self.namespace)
            run_id = state[0]["last_maintenance_run"] if state else None
            if run_id is None:
                return []
        rows = self.gateway.write_all([
            ("maintenance_restore", {"kb": self.namespace, "ids": list(ids), "run": run_id, "now": now or datetime.now(UTC)}),
            ("kb_state_facts_changed", {"kb": self.namespace}),
        ])[0]
        return [row["id"] for row in rows]

    def after_growth(self, checked: tuple[int, int] | None = None) -> MaintenanceReport | None:
        """Runs maintenance when the experiences counted since the last check (written with
        ``count_growth``, kbgraph.store.writer) took the total across 10, 20, 40, …
        (``maintenance_first_checkpoint``; 0 turns automatic runs off). What an ingest that
        crashed counted is checked by the next one, so a resumed ingest runs what a clean one would.
        ``checked``: the totals (before, after) an add's own transaction already checked
        (kb_state_growth, ingest/one_transaction.py)."""
        first = self.settings.maintenance_first_checkpoint
        if checked is None:
            # Written even when nothing was added, so every ingested namespace has its state node.
            row = self.gateway.write("kb_state_growth", kb=self.namespace, added=0)[0]
            checked = (int(row["before"]), int(row["after"]))
        if first <= 0 or not growth_checkpoint_reached(checked[0], checked[1], first):
            return None
        reached = next_growth_checkpoint(checked[1], first) // 2
        return self.run(trigger=f"growth checkpoint: {reached} experiences added")
