"""Stage 7 — linking: the four experience relations of Agent KB, inferred from the graph's content.

- ABSTRACTION: concrete → the abstract experience generated for every workflow (action sequence)
  that two or more concrete experiences share.
- COMPOSITION: sub-workflow → composite, when one workflow's actions appear in order inside a
  longer one's (between one representative per workflow: its abstraction, or its only member).
- ADAPTATION: the same operations (the state-changing verbs: cancel, update → reverse, …) in
  different domains, between each domain's representative; and declared provenance
  (``adapted_from``).
- ALTERNATIVE: a different workflow for a similar problem and goal (cosine ≥ 0.8, same domain),
  the closest few per experience.

Every relation gets a weight in [0, 1] and a reason a person can read. Pure and deterministic:
the same facts give the same plan, whatever order they came in.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.generalise import humanise_action
from kbgraph.ingest.shapes import is_subsequence, operation_shape, verb_of
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


def abstract_experience(actions: tuple[str, ...], members: list[ExperienceFacts]) -> Experience:
    """The generalised experience of one workflow. Its content depends on the workflow only (and
    the members' majority domain), so its id is stable while its group grows."""
    domains = Counter(m.domain for m in members)
    top = max(domains.values())
    changes = [humanise_action(a) for a in dict.fromkeys(actions) if verb_of(a) != "lookup"]
    return Experience(
        kind="abstract",
        problem=f"Any task that is solved by the workflow: {_flow(actions)}",
        goal=("Get done: " + ", then ".join(changes)) if changes else "Find out what the task asks",
        domain=min(d for d, n in domains.items() if n == top),
        steps=[Step(action=a, text=humanise_action(a)) for a in actions],
        success_rate=round(sum(m.success_rate for m in members) / len(members), 6),
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
    by_workflow: dict[tuple[str, ...], list[ExperienceFacts]] = defaultdict(list)
    for fact in concrete:
        if fact.actions:
            by_workflow[fact.actions].append(fact)
    representative: dict[tuple[str, ...], tuple[str, str, np.ndarray]] = {}  # workflow → (id, domain, pg)
    for actions in sorted(by_workflow):
        members = by_workflow[actions]
        if len(members) < 2:
            only = members[0]
            representative[actions] = (only.id, only.domain, only.pg)
            continue
        abstract = abstract_experience(actions, members)
        plan.abstracts.append(abstract)
        centroid = np.mean([m.pg for m in members], axis=0)
        centroid /= float(np.linalg.norm(centroid)) or 1.0
        representative[actions] = (abstract.key, abstract.domain, centroid)
        for member in members:
            plan.relations.append(_relation(
                "ABSTRACTION", member.id, abstract.key, float(member.pg @ centroid),
                f"instance of the workflow {_flow(actions)}, shared by {len(members)} experiences",
            ))
    for fact in declared_abstract:  # abstract experiences given by users represent their workflow too
        if fact.actions and fact.actions not in by_workflow:
            representative[fact.actions] = (fact.id, fact.domain, fact.pg)

    # COMPOSITION: sub-workflow → composite, within a domain, the closest composites first.
    workflows = sorted(representative, key=lambda a: (len(a), a))
    for small in workflows:
        small_id, small_domain, _ = representative[small]
        composites = [big for big in workflows if len(big) > len(small) and representative[big][1] == small_domain
                      and is_subsequence(small, big)]
        for big in composites[:COMPOSITES_PER_WORKFLOW]:
            plan.relations.append(_relation(
                "COMPOSITION", small_id, representative[big][0], len(small) / len(big),
                f"its steps ({_flow(small)}) appear in order inside {_flow(big)}",
            ))

    # ADAPTATION: one verb-level shape in several domains; each domain's best-established workflow.
    by_shape: dict[tuple[str, ...], dict[str, list[tuple[str, ...]]]] = defaultdict(lambda: defaultdict(list))
    for actions in workflows:
        shape = operation_shape(actions)
        if shape:
            by_shape[shape][representative[actions][1]].append(actions)
    for shape in sorted(by_shape):
        domains = by_shape[shape]
        if len(domains) < 2:
            continue
        # Each domain's most-used workflow of this shape (ties: smallest id).
        chosen = {d: min(ws, key=lambda w: (-len(by_workflow.get(w, [])), representative[w][0]))
                  for d, ws in domains.items()}
        ordered = sorted(chosen, key=lambda d: (-len(by_workflow.get(chosen[d], [])), d))
        origin = ordered[0]
        a_id, _, a_pg = representative[chosen[origin]]
        for other in ordered[1:]:
            b_id, _, b_pg = representative[chosen[other]]
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

    # ALTERNATIVE: similar problem and goal, different workflow, same domain.
    by_domain: dict[str, list[ExperienceFacts]] = defaultdict(list)
    for fact in concrete:
        if fact.actions:
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
                if candidate.actions == member.actions:
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
                    f"{_flow(first.actions)} vs {_flow(second.actions)}",
                ))
    return plan
