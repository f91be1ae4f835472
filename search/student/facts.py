"""Stage 2 of a student search: the scoring facts of every candidate, computed in the database
(``search_candidates_score``: cosines against the query's vectors, the inner max of the fine score,
support, utility, outcomes), so no embedding leaves Neo4j; then the lexical score, BM25 over the
candidates' own texts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from kbgraph.search.handoff import hands_off
from kbgraph.search.lexical import bm25_with_ceiling
from kbgraph.search.student.channels import Gathered
from kbgraph.store.gateway import Row
from kbgraph.store.plan_shape import id_list
from kbgraph.search.student.context import FilterParams, Run, SearchContext
from kbgraph.search.student.kept_channels import KeptNow
from kbgraph.search.student.rows import CandidateFacts, NodeFacts
from kbgraph.search.task_ways import task_ways, unique_ways, way_share

__all__ = ["attach_facts", "is_excluded", "never_worked", "read_facts", "read_kept_facts"]


def attach_facts(ctx: SearchContext, run: Run, gathered: Gathered) -> dict[str, CandidateFacts]:
    """Reads the candidates' scoring facts into them (with the scores the vector channels already
    returned) and sets their lexical scores. Returns the facts of the candidates' workflows, which
    come with theirs (for the workflow scores)."""
    candidates, w = gathered.candidates, run.weights
    pg, task = run.pg_or_anchor, run.task_or_anchor
    known = {c.id: c.known for c in candidates.values() if c.known}
    if not candidates:
        facts = []
    elif gathered.kept is not None and gathered.kept.facts is not None:
        facts = read_kept_facts(ctx, gathered.kept, list(candidates), pg, task, run.excluded, run.params,
                                run.handoff_credit, known)
    else:
        facts = read_facts(ctx, list(candidates), pg, task, run.excluded, run.params, run.handoff_credit,
                           known=known, split=run.split)
    workflow_facts: dict[str, CandidateFacts] = {}
    for row in facts:
        candidate = candidates.get(row.id)
        if candidate is None:  # the workflow of a candidate, for the workflow scores
            workflow_facts[row.id] = row
        else:
            candidate.facts = row
    # Lexical: BM25 over the candidates' own texts (see kbgraph.search.lexical: the index's
    # scores depend on every namespace of the database).
    with_facts = [c for c in candidates.values() if c.facts is not None]
    if gathered.terms and with_facts:
        texts = [c.facts.text for c in with_facts if c.facts]
        raw, ceiling = bm25_with_ceiling(gathered.terms, texts)
        # How much of the request the best candidate covers; with lexical_scale=coverage every
        # candidate is scored that way (against the request, not against the best candidate).
        gathered.coverage = min(1.0, max(raw) / ceiling) if ceiling > 0 else 0.0
        scale = ceiling if ceiling > 0 and w.lexical.scale == "coverage" else None
        for c, value in zip(with_facts, raw, strict=True):
            c.lexical = value if scale is None else min(1.0, value / scale)
    return workflow_facts


def read_facts(
    ctx: SearchContext, ids: list[str], pg: list[float], task: list[float], excluded: set[str], params: FilterParams,
    handoff_credit: float, known: Mapping[str, Mapping[str, float]] | None = None, split: bool = False,
) -> list[CandidateFacts]:
    """Scoring facts of experiences ``ids`` (``search_candidates_score``), each with its way's
    share of its task (:func:`~kbgraph.search.task_ways.way_share`). ``known``: by id, the scores
    (``semantic``, ``structural``) the vector channels already returned, which the query then
    does not compute again."""
    known = known or {}

    def read(part: list[str]) -> list[Row]:
        return ctx.gateway.read(
            "search_candidates_score", kb=ctx.namespace, ids=id_list(part), pg=pg, task=task, exclude=id_list(sorted(excluded)),
            decay=ctx.utility_decay, today=ctx.today, statuses=params["statuses"],
            semantic_known=id_list(i for i, scores in known.items() if "semantic" in scores),
            structural_known=id_list(i for i, scores in known.items() if "structural" in scores),
        )

    results = ctx.in_halves(read, ids, split)
    if not results:  # none of the ids is (still) stored
        return []
    ways = task_ways(unique_ways(r["ways"] for r in results), handoff_credit)
    # A candidate deleted while the query read it has no id: it is dropped. A workflow of
    # candidates in both halves comes back from each, the same.
    rows: dict[str, Row] = {}
    for result in results:
        for row in result["rows"]:
            if row["id"] is not None:
                rows.setdefault(row["id"], row)
    facts: list[CandidateFacts] = []
    for row in rows.values():
        scores = known.get(row["id"], {})
        facts.append(CandidateFacts.from_record(
            row, share=way_share(row["task_key"], row["operations"], ways) if row["kind"] == "concrete" else 1.0,
            hands_off=hands_off(row["operations"] or ()), semantic=scores.get("semantic"),
            structural=scores.get("structural"),
        ))
    return facts


def read_kept_facts(
    ctx: SearchContext, kept_now: KeptNow, ids: list[str], pg: list[float], task: list[float], excluded: set[str],
    params: FilterParams, handoff_credit: float, known: Mapping[str, Mapping[str, float]],
) -> list[CandidateFacts]:
    """:func:`read_facts`'s facts, the stored ones taken from the kept facts (the namespace's, at
    the version the search read: :mod:`~kbgraph.search.student.kept_facts`) and the rest, what
    ``search_candidates_feedback`` reads (quality, utility, the task outcomes, and the cosines the
    vector channels did not return), worked out from what feedback changes when that is kept at
    the feedback version the search read (:mod:`~kbgraph.search.student.kept_feedback`), else read."""
    kept = kept_now.facts
    assert kept is not None
    found = kept.with_workflows(ids, params["statuses"])
    if not found:
        return []
    semantic = [i for i in found if "semantic" not in known.get(i, {})]
    structural = [i for i in found if kept.by_id[i].has_steps and "structural" not in known.get(i, {})]
    rows = None
    if kept_now.feedback is not None and kept_now.vectors is not None:
        rows = kept_now.feedback.rows(found, pg, task, semantic, structural, kept, kept_now.vectors,
                                      ctx.today or datetime.now(UTC).date(), ctx.utility_decay)
    if rows is None:
        # One request, not halves: it is light (~4 ms at 10,000), and a second one costs more CPU
        # than it saves.
        rows = ctx.gateway.read(
            "search_candidates_feedback", kb=ctx.namespace, ids=id_list(found), pg=pg, task=task, decay=ctx.utility_decay,
            today=ctx.today, semantic_ids=id_list(semantic), structural_ids=id_list(structural))[0]["rows"]
    return kept.candidate_facts(found, rows, params["statuses"], excluded, handoff_credit, known)


def is_excluded(facts: CandidateFacts, excluded: set[str]) -> bool:
    """The query excludes this experience, or it stands only for excluded runs (e.g. the task's
    own record)."""
    if not excluded:
        return False
    if facts.id in excluded:
        return True
    return facts.kind != "abstract" and facts.runs > 0 and facts.runs_left == 0


def never_worked(facts: NodeFacts) -> bool:
    """Every run the experience stands for failed (facts without runs are not judged)."""
    return facts.runs > 0 and facts.support == 0
