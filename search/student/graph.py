"""Stage 4 of a student search: traversal. From the best seeds along ABSTRACTION, COMPOSITION,
ADAPTATION and ALTERNATIVE (both directions), a reached node scores
``score(seed) · Π w(edge)·w(type) · δ^hops · trans`` (:func:`~kbgraph.search.scoring.path_score`)
and keeps its best path.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbgraph.search.results import PathHop, ScoreBreakdown
from kbgraph.search.scoring import path_score
from kbgraph.search.student.context import Run, SearchContext
from kbgraph.search.student.rows import Neighbour, NodeFacts

__all__ = ["Reached", "traverse"]


@dataclass
class Reached:
    """A node reached by traversal: its best path so far."""

    id: str
    seed: str
    chain: float  # score(seed) · Π w(edge)·w(type) · δ^hops, before the node's trans
    hops: list[PathHop]
    facts: NodeFacts
    score: float = 0.0


def traverse(ctx: SearchContext, run: Run, breakdowns: dict[str, ScoreBreakdown]) -> dict[str, Reached]:
    """The nodes reached from the ``w.seeds`` best direct hits within ``w.max_hops``, by id."""
    w, domain, excluded = run.weights, run.query.domain, run.excluded
    pg = run.pg_or_anchor
    if w.max_hops == 0 or w.seeds == 0 or not breakdowns:
        return {}
    seeds = sorted(breakdowns.items(), key=lambda item: (-item[1].direct, item[0]))[: w.seeds]
    type_weights = {t.value: weight for t, weight in w.edge_weights.items()}
    frontier: dict[str, tuple[str, float, list[PathHop]]] = {sid: (sid, b.direct, []) for sid, b in seeds}
    visited = set(frontier)
    reached: dict[str, Reached] = {}

    def neighbours(of: list[str]) -> list[Neighbour]:
        result = ctx.gateway.read("search_neighbours", seeds=of, pg=pg, per_seed=w.neighbours_per_seed,
                                  decay=ctx.utility_decay, **run.params)
        # A node deleted while the query read it comes back without an id: it is dropped.
        return [Neighbour.from_record(row) for record in result for row in record["rows"] if row["id"] is not None]

    for _hop in range(w.max_hops):
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
            new_chain = path_score(chain, [edge_weight], w.hop_decay, type_weights, [relation.value])
            trans = ctx.trans(domain, row.domain, w.tau)
            score = new_chain * trans
            best = reached.get(node_id)
            if best is None or score > best.score:
                reached[node_id] = Reached(node_id, seed, new_chain, path, row, score)
            previous = next_frontier.get(node_id)
            if node_id not in visited and (previous is None or new_chain > previous[1]):
                next_frontier[node_id] = (seed, new_chain, path)
        visited |= set(next_frontier)
        frontier = dict(sorted(next_frontier.items(), key=lambda item: (-item[1][1], item[0]))[: w.seeds])
    return reached
