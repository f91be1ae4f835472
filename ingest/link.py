"""Stage 7 — linking: the four experience relations of Agent KB, inferred from the graph's content.

- ABSTRACTION: concrete → the abstract experience generated for every workflow that two or more
  concrete experiences of a domain share. A workflow is what a run changed: its state-changing
  actions in order (:func:`~kbgraph.core.shapes.operations`); the lookups on the way vary from
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

from collections import Counter
from collections.abc import Callable, Iterable
from itertools import islice
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.core.generalise import humanise_action
from kbgraph.core.ids import content_hash
from kbgraph.core.shapes import is_subsequence, operations
from kbgraph.core.models import Experience, Step

ABSTRACT_SOURCE = "kbgraph:abstraction"
ALTERNATIVE_THRESHOLD = 0.8
ALTERNATIVES_PER_EXPERIENCE = 3
COMPOSITES_PER_WORKFLOW = 10

Row = dict[str, Any]
Vector = npt.NDArray[np.float32]


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


def representative_of(workflow: Workflow, members: list[ExperienceFacts]) -> tuple[Experience | None, tuple[str, Vector], list[Row]]:
    """ABSTRACTION for one workflow: its abstract experience (two or more members), what stands for
    it in the other relations (the abstraction with the members' centroid, or its only member) and
    each member's ABSTRACTION relation."""
    if len(members) < 2:
        only = members[0]
        return None, (only.id, only.pg), []
    abstract = abstract_experience(workflow, members)
    centroid = np.mean([m.pg for m in members], axis=0)
    centroid /= float(np.linalg.norm(centroid)) or 1.0
    rows = [_relation("ABSTRACTION", member.id, abstract.key, float(member.pg @ centroid),
                      f"instance of the workflow {_describe(workflow)}, shared by {len(members)} experiences")
            for member in members]
    return abstract, (abstract.key, centroid), rows


def composition_rows(small: Workflow, small_id: str, longer: Iterable[tuple[Workflow, frozenset[str]]],
                     id_of: Callable[[Workflow], str]) -> list[Row]:
    """COMPOSITION from ``small`` to the first workflows of ``longer`` (the same domain's longer
    workflows, closest first, with their sets of operations) that hold its operations in order,
    each by its representative (``id_of``). Only a workflow holding every operation of the smaller
    one can contain it: a set test (fast) before the order test. A workflow that changes nothing
    is inside every other one, which says nothing: none."""
    if not small[1]:
        return []
    needed = frozenset(small[1])
    composites = (big for big, operation_set in longer
                  if needed <= operation_set and is_subsequence(small[1], big[1]))
    return [_relation("COMPOSITION", small_id, id_of(big), len(small[1]) / len(big[1]),
                      f"its operations ({_flow(small[1])}) appear in order inside {_flow(big[1])}")
            for big in islice(composites, COMPOSITES_PER_WORKFLOW)]


def adaptation_rows(shape: tuple[str, ...], by_domain: dict[str, list[Workflow]],
                    size: Callable[[Workflow], int], representative: Callable[[Workflow], tuple[str, Vector]]) -> list[Row]:
    """ADAPTATION for one verb-level shape found in several domains: from the domain where it is
    best established to each other one, between each domain's most-used workflow of the shape
    (ties: the smallest representative id)."""
    if len(by_domain) < 2:
        return []
    chosen = {d: min(ws, key=lambda w: (-size(w), representative(w)[0])) for d, ws in by_domain.items()}
    ordered = sorted(chosen, key=lambda d: (-size(chosen[d]), d))
    origin = ordered[0]
    a_id, a_pg = representative(chosen[origin])
    rows = []
    for other in ordered[1:]:
        b_id, b_pg = representative(chosen[other])
        rows.append(_relation("ADAPTATION", a_id, b_id, 0.5 + 0.5 * max(0.0, float(a_pg @ b_pg)),
                              f"the same operations ({' → '.join(shape)}) carried from {origin} to {other}"))
    return rows


def declared_rows(fact: ExperienceFacts, origin_of: Callable[[str], str | None]) -> list[Row]:
    """Declared provenance: ADAPTATION from the experience holding each ``adapted_from`` run."""
    rows = []
    for origin_trajectory in fact.adapted_from:
        origin_id = origin_of(origin_trajectory)
        if origin_id and origin_id != fact.id:
            rows.append(_relation("ADAPTATION", origin_id, fact.id, 1.0,
                                  f"declared: adapted from trajectory {origin_trajectory}"))
    return rows


def alternative_row(a: ExperienceFacts, b: ExperienceFacts, cosine: float) -> Row:
    first, second = (a, b) if a.id < b.id else (b, a)
    return _relation("ALTERNATIVE", first.id, second.id, cosine,
                     f"similar problem and goal (cosine {cosine:.2f}) solved differently: "
                     f"{_describe(workflow_of(first))} vs {_describe(workflow_of(second))}")


def is_alternative_candidate(fact: ExperienceFacts) -> bool:
    """Only ways that worked at least once are alternatives: a run that only failed is a pitfall
    of its task, not another way to do it."""
    return fact.kind == "concrete" and fact.source != ABSTRACT_SOURCE and bool(fact.actions) and not fact.only_failed

