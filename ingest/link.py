"""Stage 7 — linking: the four experience relations of Agent KB, inferred from the graph's content.

- ABSTRACTION: concrete → the abstract experience generated for every workflow that two or more
  concrete experiences of a domain share. A workflow is what a run changed: its state-changing
  actions in order (:func:`~kbgraph.ingest.shapes.operations`); the lookups on the way vary from
  run to run. The abstract experience stands for all its instances' runs, successful and failed,
  so it can say how often the workflow worked; its steps are the way that worked most often.
- COMPOSITION: sub-workflow → composite, when one workflow's actions appear in order inside a
  longer one's (between one representative per workflow: its abstraction, or its only member).
- ADAPTATION: the same operations (the state-changing verbs: cancel, update → reverse, …) in
  different domains, between each domain's representative; and declared provenance
  (``adapted_from``).
- ALTERNATIVE: a different workflow for a similar problem and goal (cosine ≥ 0.8, same domain),
  the closest few per experience. Only ways that worked at least once are alternatives: a run
  that only failed is a pitfall of its task, not another way to do it.

Every relation gets a weight in [0, 1] and a reason a person can read. Pure and deterministic:
the same facts give the same plan, whatever order they came in.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import islice
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.generalise import humanise_action
from kbgraph.ids import content_hash
from kbgraph.ingest.shapes import is_subsequence, operation_shape, operations, verb_of
from kbgraph.models import Experience, Step

ABSTRACT_SOURCE = "kbgraph:abstraction"
ALTERNATIVE_THRESHOLD = 0.8
ALTERNATIVES_PER_EXPERIENCE = 3
COMPOSITES_PER_WORKFLOW = 10

Row = dict[str, Any]


@dataclass
class LinkPlan:
    abstracts: list[Experience] = field(default_factory=list)
    relations: list[Row] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(1 for r in self.relations if r["type"] == kind)


def _relation(kind: str, source: str, target: str, weight: float, reason: str) -> Row:
    return {"type": kind, "source_id": source, "target_id": target, "weight": round(float(min(max(weight, 0.0), 1.0)), 4),
            "reason": reason, "inferred": True}


def _flow(actions: tuple[str, ...]) -> str:
    return " → ".join(humanise_action(a) for a in actions)


Workflow = tuple[str, tuple[str, ...]]  # (domain, state-changing actions in order)


def workflow_of(fact: ExperienceFacts) -> Workflow:
    return fact.domain, operations(fact.actions)


def _describe(workflow: Workflow) -> str:
    return _flow(workflow[1]) if workflow[1] else "look up, change nothing"


def _usual_steps(members: list[ExperienceFacts]) -> tuple[str, ...]:
    """The action sequence that worked in the most runs (failed runs count only when none
    succeeded); ties go to the shorter, then the alphabetically first sequence."""
    weights: Counter[tuple[str, ...]] = Counter()
    for member in members:
        weights[member.actions] += len(member.succeeded_sources)
    if not any(weights.values()):
        weights = Counter({m.actions: len(m.source_ids) or 1 for m in members})
    return min(weights, key=lambda a: (-weights[a], len(a), a))


def abstract_experience(workflow: Workflow, members: list[ExperienceFacts]) -> Experience:
    """The generalised experience of one workflow. Its id depends on the workflow only (domain and
    operations), so it is stable while its group grows; its success rate is the share of its
    instances' runs that succeeded."""
    domain, ops = workflow
    steps = _usual_steps(members)
    runs = sum(len(m.source_ids) or 1 for m in members)
    succeeded = sum(len(m.succeeded_sources) if m.source_ids else m.success_rate for m in members)
    changes = [humanise_action(a) for a in dict.fromkeys(ops)]
    problem = (f"Any task that is solved by the workflow: {_flow(ops)}" if ops
               else "Any task answered by looking things up, changing nothing")
    return Experience(
        id=content_hash({"workflow": list(ops), "domain": domain}, "exp"),
        kind="abstract",
        problem=problem,
        goal=("Get done: " + ", then ".join(changes)) if changes else "Find out what the task asks",
        domain=domain,
        steps=[Step(action=a, text=humanise_action(a)) for a in steps],
        success_rate=round(succeeded / runs, 6) if runs else 1.0,
        generalizability=round(min(1.0, len(members) / 10), 4),
        source=ABSTRACT_SOURCE,
    )


def plan_links(
    facts: list[ExperienceFacts],
    alternative_threshold: float = ALTERNATIVE_THRESHOLD,
    alternatives_per_experience: int = ALTERNATIVES_PER_EXPERIENCE,
) -> LinkPlan:
    plan = LinkPlan()
    concrete = sorted((f for f in facts if f.kind == "concrete" and f.source != ABSTRACT_SOURCE), key=lambda f: f.id)
    declared_abstract = [f for f in facts if f.kind == "abstract" and f.source != ABSTRACT_SOURCE]

    # ABSTRACTION: one abstract experience per workflow shared by two or more concrete ones.
    by_workflow: dict[Workflow, list[ExperienceFacts]] = defaultdict(list)
    for fact in concrete:
        if fact.actions:
            by_workflow[workflow_of(fact)].append(fact)
    # A run without steps shows no workflow where steps are not recorded (WebArena's intents); in a
    # domain whose runs do record their tool calls, a run that made none changed nothing: it joins
    # that domain's look-up-only workflow, if there is one.
    for fact in concrete:
        if not fact.actions and (fact.domain, ()) in by_workflow:
            by_workflow[(fact.domain, ())].append(fact)
    representative: dict[Workflow, tuple[str, np.ndarray]] = {}  # workflow → (id, pg)
    for workflow in sorted(by_workflow):
        members = by_workflow[workflow]
        if len(members) < 2:
            only = members[0]
            representative[workflow] = (only.id, only.pg)
            continue
        abstract = abstract_experience(workflow, members)
        plan.abstracts.append(abstract)
        centroid = np.mean([m.pg for m in members], axis=0)
        centroid /= float(np.linalg.norm(centroid)) or 1.0
        representative[workflow] = (abstract.key, centroid)
        for member in members:
            plan.relations.append(_relation(
                "ABSTRACTION", member.id, abstract.key, float(member.pg @ centroid),
                f"instance of the workflow {_describe(workflow)}, shared by {len(members)} experiences",
            ))
    for fact in declared_abstract:  # abstract experiences given by users represent their workflow too
        if fact.actions and workflow_of(fact) not in by_workflow:
            representative[workflow_of(fact)] = (fact.id, fact.pg)

    # COMPOSITION: sub-workflow → composite, within a domain, the closest composites first. A
    # workflow that changes nothing is inside every other one, which says nothing: it is left out.
    workflows = sorted(representative, key=lambda w: (w[0], len(w[1]), w[1]))
    # Only a workflow holding every operation of the smaller one can contain it: a set test (fast)
    # before the order test, among the same domain's longer workflows, in the same order.
    operation_sets = {w: frozenset(w[1]) for w in workflows}
    by_domain_workflows: dict[str, list[Workflow]] = defaultdict(list)
    for workflow in workflows:
        by_domain_workflows[workflow[0]].append(workflow)
    for small in workflows:
        small_id, _ = representative[small]
        if not small[1]:
            continue
        needed = operation_sets[small]
        composites = (big for big in by_domain_workflows[small[0]] if len(big[1]) > len(small[1])
                      and needed <= operation_sets[big] and is_subsequence(small[1], big[1]))
        for big in islice(composites, COMPOSITES_PER_WORKFLOW):  # the closest ones, in order
            plan.relations.append(_relation(
                "COMPOSITION", small_id, representative[big][0], len(small[1]) / len(big[1]),
                f"its operations ({_flow(small[1])}) appear in order inside {_flow(big[1])}",
            ))

    # ADAPTATION: one verb-level shape in several domains; each domain's best-established workflow.
    by_shape: dict[tuple[str, ...], dict[str, list[Workflow]]] = defaultdict(lambda: defaultdict(list))
    for workflow in workflows:
        shape = operation_shape(workflow[1])
        if shape:
            by_shape[shape][workflow[0]].append(workflow)
    for shape in sorted(by_shape):
        domains = by_shape[shape]
        if len(domains) < 2:
            continue
        # Each domain's most-used workflow of this shape (ties: smallest id).
        chosen = {d: min(ws, key=lambda w: (-len(by_workflow.get(w, [])), representative[w][0]))
                  for d, ws in domains.items()}
        ordered = sorted(chosen, key=lambda d: (-len(by_workflow.get(chosen[d], [])), d))
        origin = ordered[0]
        a_id, a_pg = representative[chosen[origin]]
        for other in ordered[1:]:
            b_id, b_pg = representative[chosen[other]]
            plan.relations.append(_relation(
                "ADAPTATION", a_id, b_id, 0.5 + 0.5 * max(0.0, float(a_pg @ b_pg)),
                f"the same operations ({' → '.join(shape)}) carried from {origin} to {other}",
            ))
    by_source = {s: f.id for f in facts for s in f.source_ids}
    for fact in facts:
        for origin_trajectory in fact.adapted_from:
            origin_id = by_source.get(origin_trajectory)
            if origin_id and origin_id != fact.id:
                plan.relations.append(_relation(
                    "ADAPTATION", origin_id, fact.id, 1.0, f"declared: adapted from trajectory {origin_trajectory}",
                ))

    # ALTERNATIVE: similar problem and goal, different workflow, same domain; ways that worked.
    by_domain: dict[str, list[ExperienceFacts]] = defaultdict(list)
    for fact in concrete:
        if fact.actions and not fact.only_failed:
            by_domain[fact.domain].append(fact)
    seen: set[tuple[str, str]] = set()
    for domain in sorted(by_domain):
        members = by_domain[domain]
        if len(members) < 2:
            continue
        vectors = np.stack([m.pg for m in members])
        similarity = vectors @ vectors.T
        for i, member in enumerate(members):
            order = np.argsort(-similarity[i], kind="stable")
            taken = 0
            for j in order:
                if taken >= alternatives_per_experience or similarity[i, j] < alternative_threshold:
                    break
                candidate = members[int(j)]
                if workflow_of(candidate) == workflow_of(member):
                    continue
                taken += 1
                pair = (min(member.id, candidate.id), max(member.id, candidate.id))
                if pair in seen:
                    continue
                seen.add(pair)
                first, second = (member, candidate) if member.id < candidate.id else (candidate, member)
                plan.relations.append(_relation(
                    "ALTERNATIVE", first.id, second.id, float(similarity[i, j]),
                    f"similar problem and goal (cosine {similarity[i, j]:.2f}) solved differently: "
                    f"{_describe(workflow_of(first))} vs {_describe(workflow_of(second))}",
                ))
    return plan
