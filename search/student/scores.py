"""Stage 3 of a student search: the direct score of every candidate
(:func:`kbgraph.search.scoring.direct_scores`: coarse, fine and the λ(t) stage blend, the lexical
mix α, transferability, success and support, times the task-conditioned feedback), and the score of
each candidate's workflow, which ranks right above the instance that speaks for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
import numpy as np

from kbgraph.core.models import RelationType
from kbgraph.search.params import SearchWeights
from kbgraph.search.results import PathHop
from kbgraph.search.scoring import (
    carried_over, context_factor, direct_scores, fine_score, fit_score, intent_share, lambda_schedule, neo4j_to_cosine,
    outcome_evidence, support_score, utility_factor, workflow_score,
)
from kbgraph.search.student.channels import Candidate, Gathered, StepEvidence
from kbgraph.search.student.context import Run, SearchContext
from kbgraph.search.student.facts import is_excluded, read_facts
from kbgraph.search.student.graph import Reached
from kbgraph.search.student.intent import IntentMatcher
from kbgraph.search.student.parts import Later, Parts
from kbgraph.search.student.rows import CandidateFacts, WorkflowEdge

__all__ = ["WORKFLOW_FIRST", "Scores", "outcome_context", "score_candidates"]

#: What a workflow adds to the score of the instance that speaks for it, so it ranks right above it.
WORKFLOW_FIRST = 1e-6


@dataclass
class Scores:
    """The candidates that may be returned, their direct scores (those the coarse cut kept), and
    the workflows scored from them: ``{abstract id: (score, breakdown, the edge from its instance)}``."""

    scored: list[Candidate]
    breakdowns: dict[str, Parts]
    workflows: dict[str, tuple[float, Parts, Reached]]


#: The direct breakdown's values no stage ranks by: rounded for the hits alone (Parts.unrounded).
SHOWN_ROUNDED = frozenset({"semantic", "structural", "fine", "coarse", "lexical", "textual", "quality", "utility",
                           "context"})


def score_candidates(ctx: SearchContext, run: Run, gathered: Gathered,
                     workflow_facts: dict[str, CandidateFacts]) -> Scores:
    w = run.weights
    lam = lambda_schedule(len(run.steps), w.coarse.lambda_kind, w.coarse.lambda_rate, w.coarse.lambda_floor) if run.steps else 1.0
    scored = [c for c in gathered.candidates.values() if c.facts is not None and not is_excluded(c.facts, run.excluded)]
    breakdowns = _direct(ctx, run, scored, gathered.evidence, lam, gathered.coverage, gathered.intent)
    # Workflows: each abstract experience scores as its best instance that worked.
    workflows = _workflows(ctx, run, scored, breakdowns, workflow_facts) if w.selection.workflows else {}
    return Scores(scored, breakdowns, workflows)


def _direct(
    ctx: SearchContext, run: Run, scored: Sequence[Candidate], evidence: Sequence[StepEvidence], lam: float,
    coverage: float = 0.0, intent: IntentMatcher | None = None,
) -> dict[str, Parts]:
    """The direct score breakdown of every candidate the coarse cut keeps, by id.

    ``has_text``: the query has task text (the semantic and lexical channels ran);
    ``has_flow``: it has a vector for the structural index (task text and/or the executed
    workflow). A query of executed steps only ranks by workflow shape and step match. ``intent``: the
    request's asks (a request without steps), matched with what each candidate's workflow changes."""
    if not scored:
        return {}
    w, domain = run.weights, run.query.domain
    has_text, has_flow = run.pg is not None, run.task is not None
    facts = [c.facts for c in scored if c.facts is not None]
    semantic = np.array([neo4j_to_cosine(f.semantic) if has_text and f.semantic is not None else 0.0
                         for f in facts])
    has_structure = np.array([f.structural is not None and has_flow for f in facts])
    structural = np.array([neo4j_to_cosine(f.structural) if f.structural is not None and s else 0.0
                           for f, s in zip(facts, has_structure)])
    # S_fine = mean over executed steps of the best cosine among the experience's steps. The
    # step index gives it exactly for every experience it returned for that step; any other
    # step scores at most the index's cut-off, which stands in for it (see StepEvidence).
    fine = np.array([fine_score([e.best.get(f.id, e.bound) for e in evidence]) if f.has_steps else 0.0
                     for f in facts])
    # A record without steps of another domain carries nothing here (carried_over).
    # (Each domain's transfer once: ~70 candidates of a few domains.)
    domains = {d: (ctx.trans(domain, d, w.coarse.tau), ctx.same_domain(domain, d)) for d in {f.domain for f in facts}}
    trans = np.array([carried_over(*domains[f.domain], f.has_steps or f.kind == "abstract") for f in facts])
    # A way that hands the task to a human counts its successes at handoff_credit (search/handoff.py),
    # in full when the request asks for a human (Run.handoff_credit).
    credit = run.handoff_credit
    asks_for_human = run.asks_for_human
    success = np.clip(np.array([f.success_rate * (credit if f.hands_off else 1.0)
                                for f in facts]), 0.0, 1.0)
    support = np.array([support_score(f.remaining, w.outcomes.support_saturation) for f in facts])
    quality = np.clip(np.array([f.quality for f in facts]), 0.0, 1.0)
    utility = np.clip(np.array([f.utility for f in facts]), 0.0, 1.0)
    share = np.clip(np.array([f.share for f in facts]), 0.0, 1.0)
    # Task-conditioned feedback: outcomes on tasks like this one (only a text query has them).
    context = np.array([outcome_context(f, w, has_text) for f in facts])
    # Without query text, only the executed steps can rank: λ = 0 puts all weight on fine.
    lam_used = lam if (has_text or has_flow) else 0.0
    # Without executed steps the query's shape comes from its words alone: the less of them the
    # memory's texts cover, the more the request is only an intent, which the workflow shape matches.
    no_step_omega = max(w.coarse.task_structure_weight, w.coarse.intent_structure_weight * (1.0 - coverage))
    # What each candidate's workflow changes against what the request asks (a record without steps
    # has no operations: its coarse score stays as it is).
    sequences: list[tuple[tuple[str, ...], str | None] | None] = [
        (f.operations, f.domain) if intent is not None and f.operations is not None and (f.has_steps or f.kind == "abstract")
        else None for f in facts]
    matches = intent.candidate_scores(sequences) if intent is not None else [None] * len(facts)
    iota = w.intent.weight if intent is not None else 0.0
    # The ramp and the spread trust the match with the operations of the request's own domain; a
    # request of a domain the memory holds no workflow of is matched across domains, scaled by novelty.
    home = intent is None or intent.home
    if iota > 0 and semantic.size:
        scale = "novelty" if w.intent.scale == "ramp" and not home else w.intent.scale
        iota = intent_share(iota, float(semantic.max()), scale, w.intent.new_below, w.intent.known_above)
    parts = direct_scores(
        semantic=semantic, structural=structural, has_structure=has_structure, fine=fine,
        lexical=np.array([c.lexical for c in scored]), trans=trans, success=success, support=support,
        quality=quality, structure_weight=(w.coarse.structure_weight if evidence else no_step_omega) if has_text else 1.0,
        lexical_normalised=w.lexical.scale == "coverage",
        lam=lam_used, alpha=w.lexical.alpha,
        success_floor=w.outcomes.success_floor, support_weight=w.outcomes.support_weight, quality_weight=w.outcomes.quality_weight,
        utility=utility, utility_weight=w.outcomes.utility_weight, share=share,
        intent=np.array([m[0] if m is not None else 0.0 for m in matches]),
        has_intent=np.array([m is not None for m in matches]), intent_weight=iota,
        intent_spread=w.intent.spread and home,
    )
    parts["direct"] = parts["direct"] * context
    # The values shown rounded, made column by column from plain floats (tolist): the same values
    # as rounding each numpy scalar, in a third of the time (~60 candidates x 25 values a search).
    # Those no stage ranks by are rounded only for the hits (Parts.unrounded).
    def shown(values: Any, floor: bool = False) -> list[float]:
        return [round(max(0.0, v) if floor else v, 6) for v in np.asarray(values, dtype=np.float64).tolist()]

    def kept(values: Any) -> list[float]:
        return list(np.asarray(values, dtype=np.float64).tolist())

    col = {"semantic": kept(semantic), "structural": kept(structural), "fine": kept(fine),
           **{name: kept(parts[name]) for name in ("coarse", "lexical", "textual")},
           **{name: shown(parts[name]) for name in ("stage", "utility_factor")},
           "trans": shown(trans), "success": shown(success), "support": shown(support), "quality": kept(quality),
           "utility": kept(utility), "share": shown(share), "context": kept(context)}
    direct, structured = parts["direct"].astype(np.float64).tolist(), has_structure.tolist()
    lam_shown = round(lam_used, 6)
    out: dict[str, Parts] = {}
    for i, c in enumerate(scored):
        match, sequence = matches[i], sequences[i]
        out[c.id] = Parts(dict(
            semantic=col["semantic"][i], structural=col["structural"][i] if structured[i] else None,
            coarse=col["coarse"][i], fine=col["fine"][i] if evidence else None,
            lam=lam_shown, stage=col["stage"][i], lexical=col["lexical"][i], textual=col["textual"][i],
            trans=col["trans"][i], success=col["success"][i], support=col["support"][i], quality=col["quality"][i],
            utility=col["utility"][i], utility_factor=col["utility_factor"][i],
            share=col["share"][i], handed_off=facts[i].hands_off,
            human_asked=facts[i].hands_off and asks_for_human,
            context=col["context"][i], outcomes=len(facts[i].outcomes),
            intent=round(match[0], 6) if match is not None else None,
            # The asks each operation answers: for an explanation, so for the hits alone.
            asks=Later(partial(intent.asks_of, *sequence)) if intent is not None and sequence is not None else None,
            intent_learnt=round(match[1], 6) if match is not None else None,
            direct=direct[i], final=direct[i],
        ), SHOWN_ROUNDED)
    coarse_cut = [c.id for i, c in enumerate(scored) if parts["coarse"][i] < w.coarse.theta and has_text]
    for cut in coarse_cut:
        del out[cut]
    return out


def _workflows(
    ctx: SearchContext, run: Run, scored: Sequence[Candidate], breakdowns: dict[str, Parts],
    workflow_facts: dict[str, CandidateFacts],
) -> dict[str, tuple[float, Parts, Reached]]:
    """Abstract experiences scored from their instances (:func:`workflow_score`): each takes the
    score of its best-fitting instance that worked (stage · trans · success factor · share,
    plus that instance's support), with its own utility and task outcomes, and ranks right
    above that instance: the workflow of the run most like this task is the answer, and it
    stands for all its runs. Instances that only failed do not speak for it. The scoring facts
    of the candidates' workflows came with theirs (``workflow_facts``); one missing there (an
    instance's workflow made while this search ran) is read. Returns
    ``{abstract id: (score, breakdown, the edge from that instance)}``."""
    w, params, has_text = run.weights, run.params, run.pg is not None
    best: dict[str, tuple[float, Candidate]] = {}
    for c in scored:
        facts = c.facts
        breakdown = breakdowns.get(c.id)
        if facts is None or breakdown is None or facts.workflow is None or facts.remaining == 0:
            continue
        relevance = fit_score(breakdown.stage, breakdown.trans, breakdown.success, breakdown.share, w.outcomes.success_floor)
        workflow_id = facts.workflow.id
        if workflow_id not in best or relevance > best[workflow_id][0]:
            best[workflow_id] = (relevance, c)
    if not best:
        return {}
    known = {c.id: c.facts for c in scored if c.id in best and c.facts is not None}
    known.update({i: workflow_facts[i] for i in best if i in workflow_facts and i not in known})
    missing = [i for i in sorted(best) if i not in known]
    if missing:
        known.update({row.id: row for row in read_facts(
            ctx, missing, run.pg_or_anchor, run.task_or_anchor, run.excluded, params, w.outcomes.handoff_credit)})
    out: dict[str, tuple[float, Parts, Reached]] = {}
    for workflow_id, (relevance, member) in best.items():
        facts = known.get(workflow_id)
        if facts is None or (params["domains"] is not None and facts.domain not in params["domains"]):
            continue  # filtered out (status, domain)
        support = breakdowns[member.id].support
        utility = min(max(facts.utility, 0.0), 1.0)
        by_utility, context = utility_factor(utility, w.outcomes.utility_weight), outcome_context(facts, w, has_text)
        # The workflow ranks right above the run that speaks for it (WORKFLOW_FIRST breaks the tie).
        score = workflow_score(min(relevance, 1.0), support, w.outcomes.support_weight) * by_utility * context + WORKFLOW_FIRST
        b = breakdowns[member.id].updated(
            support=round(support, 6), utility=round(utility, 6), utility_factor=round(by_utility, 6),
            context=round(context, 6), outcomes=len(facts.outcomes),
            quality=round(min(max(facts.quality, 0.0), 1.0), 6),
            workflow=round(score, 6), direct=score, final=score,
        )
        edge = (member.facts.workflow if member.facts else None) or WorkflowEdge(workflow_id, 1.0, "")
        hop = PathHop(relation=RelationType.ABSTRACTION, direction="out", from_id=member.id, to_id=workflow_id,
                      weight=min(1.0, max(0.0, edge.weight)), reason=edge.reason)
        out[workflow_id] = (score, b, Reached(workflow_id, member.id, score, [hop], facts, score))
    return out


def outcome_context(facts: CandidateFacts, w: SearchWeights, has_text: bool) -> float:
    """Task-conditioned feedback: exp(w · evidence) from the outcomes on tasks like this one."""
    if not has_text or not facts.outcomes:
        return 1.0
    evidence = outcome_evidence([neo4j_to_cosine(score) for score, _ in facts.outcomes],
                                [outcome for _, outcome in facts.outcomes], w.outcomes.outcome_similarity_floor)
    return context_factor(evidence, w.outcomes.outcome_weight)
