"""Stage 6 — merging duplicate experiences (AutoRefine).

Experiences of the same kind, the same workflow and the same outcome whose problem+goal
embeddings have cosine ≥ ``threshold`` (0.85) are one experience. The workflow is what a run
changed (:func:`~kbgraph.core.shapes.operations`): two runs of one task that re-read a
reservation a different number of times did the same thing. Runs that all failed merge only among
themselves, so a failed run never enters the provenance of a way that worked. Groups are the
connected components of that relation; the canonical member (whose steps the merged experience
keeps) is the one with the fewest steps (but some), then the smallest id, so the result does not depend on
the order experiences arrived in. Provenance is the union of the members' sources,
counters are summed, success rate is averaged over sources. Pure: the pipeline applies the plan.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.link import ABSTRACT_SOURCE
from kbgraph.core.shapes import operations
from kbgraph.ingest.vector_set import VectorSet

MERGE_THRESHOLD = 0.85


@dataclass(frozen=True)
class MergeGroup:
    canonical: str
    merged_ids: list[str]
    source_ids: list[str]
    failed_source_ids: list[str]
    retrieved: int
    used: int
    succeeded: int
    success_rate: float

    def as_row(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _components(count: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(count))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = defaultdict(list)
    for i in range(count):
        groups[find(i)].append(i)
    return [g for g in groups.values() if len(g) > 1]


BlockKey = tuple[str, tuple[str, ...], str, str, bool]


def block_key(fact: ExperienceFacts) -> BlockKey | None:
    """Only experiences of one kind, one workflow, one outcome and one owner (private banks stay
    apart) can merge; generated workflows never do (None)."""
    if fact.source == ABSTRACT_SOURCE:
        return None
    return fact.kind, operations(fact.actions), fact.scope, fact.owner_agent or "", fact.only_failed


def merge_group(component: list[ExperienceFacts]) -> MergeGroup:
    """What one connected group of near-duplicates becomes: the canonical keeps its steps (the
    shortest way that has any, then the smallest id); provenance is the union of the sources."""
    group = sorted(component, key=lambda m: (not m.actions, len(m.actions), m.id))
    canonical = group[0]
    sources = sorted({s for m in group for s in m.source_ids})
    # Each source counts once: a member whose sources the group already has adds nothing.
    seen: set[str] = set()
    weights = []
    for m in group:
        fresh = set(m.source_ids) - seen
        seen |= fresh
        weights.append(len(fresh) if m.source_ids else 1)
    return MergeGroup(
        canonical=canonical.id,
        merged_ids=[m.id for m in group[1:]],
        source_ids=sources,
        failed_source_ids=sorted({s for m in group for s in m.failed_source_ids}),
        retrieved=sum(m.retrieved for m in group),
        used=sum(m.used for m in group),
        succeeded=sum(m.succeeded for m in group),
        success_rate=round(sum(m.success_rate * w for m, w in zip(group, weights, strict=True))
                           / max(sum(weights), 1), 6),
    )


def groups_of(members: list[ExperienceFacts], pairs: Iterable[tuple[str, str]]) -> list[MergeGroup]:
    """The merge groups of ``members`` (of one block) given their near-duplicate pairs by id."""
    members = sorted(members, key=lambda f: f.id)
    index = {m.id: i for i, m in enumerate(members)}
    components = _components(len(members), [(index[a], index[b]) for a, b in pairs])
    return [merge_group([members[i] for i in component]) for component in components]


def blocks_of(facts: Iterable[ExperienceFacts]) -> dict[BlockKey, list[ExperienceFacts]]:
    """The facts that can merge, by block (generated workflows are in none)."""
    blocks: dict[BlockKey, list[ExperienceFacts]] = defaultdict(list)
    for fact in facts:
        key = block_key(fact)
        if key is not None:
            blocks[key].append(fact)
    return blocks


def plan_merges(facts: list[ExperienceFacts], threshold: float = MERGE_THRESHOLD) -> list[MergeGroup]:
    plan: list[MergeGroup] = []
    for members in blocks_of(facts).values():
        if len(members) < 2:
            continue
        vectors = VectorSet()
        for member in members:
            vectors.add(member.id, member.pg)
        pairs = [(m.id, other) for m, close in zip(members, vectors.close_to([m.pg for m in members], threshold),
                                                   strict=True)
                 for _, other in close if other != m.id]
        plan += groups_of(members, pairs)
    return sorted(plan, key=lambda g: g.canonical)
