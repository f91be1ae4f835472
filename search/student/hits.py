"""Stage 5 of a student search: selection and reading. The direct hits, the workflows and the nodes
reached by traversal meet in one pool; above the threshold θ, runs that only failed attach to the
hit of the same task, MMR diversifies (the shared bank first for a calling agent), and the top k are
read (without embeddings), each with its score breakdown, the channels or edges that found it and,
when it came from traversal, its path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kbgraph.store.experiences import experience_from_record
from kbgraph.store.gateway import Row
from kbgraph.store.plan_shape import NO_ID, at_least_two, id_list
from kbgraph.store.search_version import CHANGE_SEPARATOR
from kbgraph.search.params import SearchWeights
from kbgraph.search.results import FailedAttempt, ScoreBreakdown, SearchHit, WorkflowRuns
from kbgraph.search.scoring import mmr_from_similarity, neo4j_to_cosine, support_score, utility_factor
from kbgraph.search.student.context import Run, SearchContext
from kbgraph.search.student.facts import never_worked
from kbgraph.search.student.graph import Reached
from kbgraph.search.student.parts import Parts
from kbgraph.search.student.rows import NodeFacts
from kbgraph.search.student.scores import Scores

__all__ = ["Pool", "pool_of", "read_hits", "select"]

#: How many candidates, relative to k, MMR chooses from.
_MMR_POOL = 3
#: A run that only failed is shown as a failed attempt of the hit whose problem+goal is at least
#: this similar (cosine) instead of as a hit of its own. No longer a setting (it was
#: ``selection.same_task_similarity``): 0.8 and 0.99 changed no query of the development suite
#: (docs/search.md, "Knobs no set moves").
SAME_TASK_SIMILARITY = 0.9

#: One entry of the pool: (score, breakdown, found by, the path when traversal found it).
Entry = tuple[float, Parts, list[str], Reached | None]


@dataclass
class Pool:
    """Everything a search may return, by id, with each one's scope and scoring facts."""

    entries: dict[str, Entry] = field(default_factory=dict)
    scopes: dict[str, str] = field(default_factory=dict)
    facts: dict[str, NodeFacts] = field(default_factory=dict)


def pool_of(ctx: SearchContext, run: Run, scores: Scores, reached: dict[str, Reached]) -> Pool:
    """The direct hits, then the workflows and the reached nodes, each keeping its best score."""
    w = run.weights
    pool = Pool(scopes={c.id: c.facts.scope for c in scores.scored if c.facts is not None},
                facts={c.id: c.facts for c in scores.scored if c.facts is not None})
    entries = pool.entries
    for c in scores.scored:
        b = scores.breakdowns[c.id]
        entries[c.id] = (b.direct, b, list(c.found_by), None)
    for workflow_id, (score, b, node) in scores.workflows.items():
        pool.facts.setdefault(workflow_id, node.facts)
        pool.scopes.setdefault(workflow_id, node.facts.scope)
        current = entries.get(workflow_id)
        if current is None or score > current[0]:
            found_by = [*(current[2] if current else []), "edge:ABSTRACTION"]
            entries[workflow_id] = (score, b, list(dict.fromkeys(found_by)), node)
        elif "edge:ABSTRACTION" not in current[2]:
            current[2].append("edge:ABSTRACTION")
    for node in reached.values():
        current = entries.get(node.id)
        if current is None:
            facts = node.facts
            explained = ScoreBreakdown(
                semantic=max(0.0, neo4j_to_cosine(facts.semantic)) if facts.semantic is not None else 0.0,
                trans=ctx.trans(run.query.domain, facts.domain, w.coarse.tau),
                success=facts.success_rate,
                support=support_score(facts.support, w.outcomes.support_saturation),
                quality=facts.quality,
                utility=round(min(max(facts.utility, 0.0), 1.0), 6),
            )
            b = Parts({**dict(explained), "utility_factor": round(utility_factor(explained.utility or 0.0, w.outcomes.utility_weight), 6)})
            node.score *= b.utility_factor
            entries[node.id] = (node.score, b, [f"edge:{node.hops[-1].relation.value}"], node)
            pool.scopes[node.id] = facts.scope
            pool.facts.setdefault(node.id, facts)
        elif node.score * current[1].utility_factor > current[0]:
            node.score *= current[1].utility_factor
            entries[node.id] = (node.score, current[1], [*current[2], f"edge:{node.hops[-1].relation.value}"], node)
        else:
            channel = f"edge:{node.hops[-1].relation.value}"
            if channel not in current[2]:
                current[2].append(channel)
    return pool


def select(ctx: SearchContext, run: Run, pool: Pool) -> tuple[list[str], dict[str, list[tuple[str, float]]]]:
    """The ids to return, best first, and the failed attempts attached to them."""
    w, k = run.weights, run.k
    ranked = sorted(
        ((score, hit_id) for hit_id, (score, *_rest) in pool.entries.items() if score >= w.selection.threshold),
        key=lambda pair: (-pair[0], pair[1]),
    )
    attempts = _failed_attempts(ctx, ranked, pool.facts, k)
    if attempts:
        attached = {f for found in attempts.values() for f, _ in found}
        ranked = [pair for pair in ranked if pair[1] not in attached]
    if run.query.agent and w.selection.shared_first:
        # EDV hierarchical retrieval: the shared bank first; the agent's private bank tops up.
        shared = [pair for pair in ranked if pool.scopes.get(pair[1]) != "private"]
        chosen = _diversify(ctx, shared, k, w, pool.facts)
        if len(chosen) < k:
            private = [pair for pair in ranked if pool.scopes.get(pair[1]) == "private"]
            chosen += _diversify(ctx, private, k - len(chosen), w, pool.facts)
    else:
        chosen = _diversify(ctx, ranked, k, w, pool.facts)
    return chosen, attempts


def _failed_attempts(
    ctx: SearchContext, ranked: list[tuple[float, str]], facts: dict[str, NodeFacts], k: int,
) -> dict[str, list[tuple[str, float]]]:
    """Runs that only failed, near the top of the ranking, attached to the hit of the same task
    (problem+goal cosine ≥ :data:`SAME_TASK_SIMILARITY`): a failed run is never handed back as the
    example to follow when a way that worked for that task is known. ``{hit id: [(failed id,
    cosine)]}``; a failed run with no such hit keeps its own place (it is all there is)."""
    window = ranked[: k * _MMR_POOL]
    failed = [i for _, i in window if i in facts and never_worked(facts[i])]
    if not failed:
        return {}
    worked = [i for _, i in window if i not in failed][: k]
    if not worked:
        return {}
    vectors = ctx.unit_pg_vectors(worked + failed, facts)
    attached: dict[str, list[tuple[str, float]]] = {}
    for failed_id in failed:
        score, hit_id = max(((_cosine(vectors, failed_id, h), h) for h in worked), key=lambda p: (p[0], p[1]))
        if score >= SAME_TASK_SIMILARITY:
            attached.setdefault(hit_id, []).append((failed_id, round(score, 6)))
    for found in attached.values():
        found.sort(key=lambda pair: (-pair[1], pair[0]))
    return attached


def _diversify(
    ctx: SearchContext, ranked: list[tuple[float, str]], k: int, w: SearchWeights, facts: dict[str, NodeFacts],
) -> list[str]:
    pool = ranked[: k * _MMR_POOL]
    if w.selection.mmr_lambda >= 1.0 or len(pool) <= 1:
        return [hit_id for _, hit_id in pool[:k]]
    ids = [hit_id for _, hit_id in pool]
    vectors = ctx.unit_pg_vectors(ids, facts)
    similarity = np.eye(len(ids))
    present = [i for i, hit_id in enumerate(ids) if hit_id in vectors]
    if present:  # a hit stored without a vector is like no other
        matrix = np.stack([vectors[ids[i]] for i in present]).astype(np.float64)
        similarity[np.ix_(present, present)] = np.clip(matrix @ matrix.T, -1.0, 1.0)
    order = mmr_from_similarity(np.array([score for score, _ in pool]), similarity, k, w.selection.mmr_lambda)
    return [ids[i] for i in order]


def _cosine(vectors: dict[str, np.ndarray], a: str, b: str) -> float:
    """Cosine of two unit vectors of ``vectors`` (−1 when either is missing: such a pair never
    matches), clamped against float32 rounding."""
    if a not in vectors or b not in vectors:
        return -1.0
    return min(1.0, max(-1.0, float(np.dot(vectors[a], vectors[b]))))


def _read_rows(ctx: SearchContext, wanted: list[str]) -> dict[str, Row]:
    """The rows of ``search_hits_get`` of experiences ``wanted`` that are stored, by id: those kept
    that no write since touched as kept (:mod:`~kbgraph.search.student.kept_hits`), the others read."""
    known, kept = ctx.kept_hits.sent(wanted)
    # Lists in one shape (kbgraph.store.plan_shape): a kept entry of the filler id names no row.
    rows = (ctx.gateway.read("search_hits_get_since", kb=ctx.namespace, ids=id_list(wanted), known=id_list(known),
                             kept=at_least_two(kept, [NO_ID, -1, []]), separator=CHANGE_SEPARATOR) if kept
            else ctx.gateway.read("search_hits_get", kb=ctx.namespace, ids=id_list(wanted)))
    records = _stored([r for r in rows if not r.get("kept")])
    if not rows:
        return records
    version = rows[0]["version"]
    ctx.kept_hits.keep(version, records.values())
    # Rows come back kept only at a version the feed could tell from (never None).
    unchanged = [str(r["experience"]["id"]) for r in rows if r.get("kept")]
    if unchanged:
        sent = {str(i): known[at] for i, at, _ in kept}
        carried = ctx.kept_hits.carried(version, unchanged, sent)
        if carried is None:  # kept otherwise meanwhile by another search: read as if nothing were kept
            carried = _stored(ctx.gateway.read("search_hits_get", kb=ctx.namespace, ids=id_list(unchanged)))
        records.update(carried)
    return records


def _stored(rows: list[Row]) -> dict[str, Row]:
    """Rows of ``search_hits_get`` by id. An experience deleted while the query read it (merged away
    by a concurrent ingest) comes back without properties: it is left out like one deleted between
    the stages."""
    return {r["experience"]["id"]: r for r in rows if r["experience"].get("id") is not None}


def read_hits(
    ctx: SearchContext, chosen: list[str], pool: dict[str, Entry], attempts: dict[str, list[tuple[str, float]]] | None = None,
    feedback_version: str | None = None,
) -> list[SearchHit]:
    """The chosen hits as stored (an experience deleted meanwhile is skipped), best first: as kept
    when every one was read at ``feedback_version``, the one the search read
    (:mod:`~kbgraph.search.student.kept_hits`), else read."""
    if not chosen:
        return []
    attempts = {hit_id: found for hit_id, found in (attempts or {}).items() if hit_id in chosen}
    wanted = [*chosen, *(f for found in attempts.values() for f, _ in found)]
    records = ctx.kept_hits.rows(feedback_version, wanted)
    if records is None:
        records = _read_rows(ctx, wanted)
    hits: list[SearchHit] = []
    for hit_id in chosen:
        record = records.get(hit_id)
        if record is None:  # deleted between the stages
            continue
        score, parts, found_by, reached = pool[hit_id]
        breakdown = parts.explained()
        if reached is not None and breakdown.workflow is None:
            breakdown.path = round(reached.score, 6)
            breakdown.hops = len(reached.hops)
        breakdown.final = round(score, 6)
        breakdown.direct = round(breakdown.direct, 6)
        experience = experience_from_record(record)
        workflow = record.get("workflow")
        hits.append(SearchHit(
            rank=len(hits) + 1, id=hit_id, score=round(score, 6), experience=experience,
            breakdown=breakdown, found_by=found_by,
            path=list(reached.hops) if reached is not None and score == reached.score else [],
            seed_id=reached.seed if reached is not None and score == reached.score else None,
            runs=experience.runs, runs_succeeded=experience.runs_succeeded,
            workflow=WorkflowRuns(id=workflow["id"], runs=int(workflow["runs"]),
                                  succeeded=int(workflow["runs"]) - int(workflow["failed"]),
                                  tasks=int(workflow["tasks"])) if workflow else
            # A workflow no other experience shares: its runs are the experience's own.
            WorkflowRuns(id=hit_id, runs=experience.runs, succeeded=experience.runs_succeeded, tasks=1)
            if experience.kind == "concrete" and experience.runs else None,
            failed_attempts=[_attempt(records[f], cosine) for f, cosine in attempts.get(hit_id, [])
                             if f in records],
        ))
    return hits


def _attempt(record: Row, similarity: float) -> FailedAttempt:
    failed = experience_from_record(record)
    failures = [f.description + (f" — then: {f.recovery}" if f.recovery else "") for f in failed.failure_modes]
    return FailedAttempt(id=failed.key, problem=failed.problem, runs=failed.runs,
                         actions=[s.action for s in failed.steps], failures=failures[:5], similarity=similarity)
