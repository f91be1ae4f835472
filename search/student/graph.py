"""Stage 4 of a student search: traversal. From the best seeds along ABSTRACTION, COMPOSITION,
ADAPTATION and ALTERNATIVE (both directions), a reached node scores
``score(seed) · Π w(edge)·w(type) · δ^hops · trans`` (:func:`~kbgraph.search.scoring.path_score`)
and keeps its best path.

When the query's last executed step failed, traversal also takes the ALTERNATIVE way past that
failure (:func:`ways_past_failure`): from the stored failure modes with the same error signature
(the same error on the same action, values masked) to the experiences whose runs hit it. Such an
experience is not a neighbour of a hit but is reached from the query's own failure, so its score
does not decay from a seed's: it scores as the best direct hit times how well its run resolved
that failure (1 when the fix went through and the run succeeded, 0.75 succeeded another way, 0.5
the fix went through but the run failed). A hop from a seed decays below the seed, which is why
the four relations never reach the top ten (docs/search.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from kbgraph.core.models import RelationType
from kbgraph.core.experience_rules import effectiveness_of
from kbgraph.core.recovery import error_signature
from kbgraph.search.results import PathHop
from kbgraph.search.student.parts import Parts
from kbgraph.search.scoring import path_score
from kbgraph.search.student.context import Run, SearchContext
from kbgraph.search.student.facts import is_excluded, read_facts
from kbgraph.search.student.rows import Neighbour, NodeFacts, PastFailure

__all__ = ["Reached", "traverse", "ways_past_failure"]


@dataclass
class Reached:
    """A node reached by traversal: its best path so far."""

    id: str
    seed: str
    chain: float  # score(seed) · Π w(edge)·w(type) · δ^hops, before the node's trans
    hops: list[PathHop]
    facts: NodeFacts
    score: float = 0.0


def traverse(ctx: SearchContext, run: Run, breakdowns: dict[str, Parts]) -> dict[str, Reached]:
    """The nodes reached from the ``w.traversal.seeds`` best direct hits within ``w.traversal.max_hops``, by id."""
    w, domain, excluded = run.weights, run.query.domain, run.excluded
    pg = run.pg_or_anchor
    if w.traversal.max_hops == 0:
        return {}
    reached = ways_past_failure(ctx, run, breakdowns)
    if w.traversal.seeds == 0 or not breakdowns:
        return reached
    seeds = sorted(breakdowns.items(), key=lambda item: (-item[1].direct, item[0]))[: w.traversal.seeds]
    type_weights = {t.value: weight for t, weight in w.traversal.edge_weights.items()}
    frontier: dict[str, tuple[str, float, list[PathHop]]] = {sid: (sid, b.direct, []) for sid, b in seeds}
    visited = set(frontier)

    def neighbours(of: list[str]) -> list[Neighbour]:
        result = ctx.gateway.read("search_neighbours", seeds=of, pg=pg, per_seed=w.traversal.neighbours_per_seed,
                                  decay=ctx.utility_decay, today=ctx.today, **run.params)
        # A node deleted while the query read it comes back without an id: it is dropped.
        return [Neighbour.from_record(row) for record in result for row in record["rows"] if row["id"] is not None]

    for _hop in range(w.traversal.max_hops):
        if not frontier:
            break
        # Halves keep the seeds' order, so the rows come in the order one request gives them.
        rows = ctx.in_halves(neighbours, list(frontier), run.split)
        next_frontier: dict[str, tuple[str, float, list[PathHop]]] = {}
        for row in rows:
            node_id = row.id
            # A seed reached from another seed competes too (it keeps the better of its direct
            # and path scores); only expanding it again is skipped.
            if node_id in excluded or node_id == row.seed:
                continue
            seed, chain, hops = frontier[row.seed]
            relation = row.relation
            edge_weight = min(1.0, max(0.0, row.weight))
            hop = PathHop(
                relation=relation, direction="out" if row.outgoing else "in",
                from_id=row.seed, to_id=node_id, weight=edge_weight, reason=row.reason,
            )
            path = [*hops, hop]
            new_chain = path_score(chain, [edge_weight], w.traversal.hop_decay, type_weights, [relation.value])
            trans = ctx.trans(domain, row.domain, w.coarse.tau)
            score = new_chain * trans
            best = reached.get(node_id)
            if best is None or score > best.score:
                reached[node_id] = Reached(node_id, seed, new_chain, path, row, score)
            previous = next_frontier.get(node_id)
            if node_id not in visited and (previous is None or new_chain > previous[1]):
                next_frontier[node_id] = (seed, new_chain, path)
        visited |= set(next_frontier)
        frontier = dict(sorted(next_frontier.items(), key=lambda item: (-item[1][1], item[0]))[: w.traversal.seeds])
    return reached


def ways_past_failure(ctx: SearchContext, run: Run, breakdowns: dict[str, Parts]) -> dict[str, Reached]:
    """When the query's last executed step failed: the experiences whose runs failed the same way,
    each scored ``best direct score · effectiveness · trans`` (module docstring), by id."""
    steps = run.query.steps_so_far
    error = steps[-1].error if steps else None
    if error is None:
        return {}
    past = [PastFailure.from_record(row) for row in ctx.gateway.read(
        PastFailure.QUERY, signature=error_signature(steps[-1].action, error, steps[-1].arguments), exclude=sorted(run.excluded),
        **run.params)]
    if not past:
        return {}
    # The best direct score before utility: the way is scored with its own utility (hits.pool_of),
    # not with the best hit's as well (a tie between two ways would break on another experience's
    # feedback or age).
    anchor = max((b.direct / b.utility_factor if b.utility_factor else b.direct for b in breakdowns.values()),
                 default=1.0)
    facts = {row.id: row for row in read_facts(
        ctx, sorted({p.id for p in past}), run.pg_or_anchor, run.task_or_anchor, run.excluded, run.params,
        run.handoff_credit) if not is_excluded(row, run.excluded)}
    reached: dict[str, Reached] = {}
    for failure in sorted(past, key=lambda p: p.id):
        node = facts.get(failure.id)
        if node is None:
            continue
        effectiveness = effectiveness_of(failure.recovered, failure.run_succeeded)
        hop = PathHop(relation=RelationType.ALTERNATIVE, direction="in", from_id=failure.failure, to_id=failure.id,
                      weight=effectiveness, reason=f"got past the same failure ({failure.description}): "
                                                   f"{failure.recovery}".strip())
        trans = ctx.trans(run.query.domain, node.domain, run.weights.coarse.tau)
        # No hop decay: the way is reached from the query's own failure, not from another hit.
        chain = path_score(anchor, [effectiveness], 1.0)
        reached[failure.id] = Reached(failure.id, failure.failure, chain, [hop], node, chain * trans)
    return reached
