"""The groups of the search settings (:class:`kbgraph.core.weights.SearchWeights`), one model each:
``coarse``, ``lexical``, ``intent``, ``outcomes``, ``traversal``, ``selection`` and ``scan``.

Each field is defined here once, with its bounds, its default (the one chosen by measurement on the
development sets; docs/search.md has the figures behind each) and what it does. Symbols are those
of docs/design.md §3.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kbgraph.core.models import RelationType

__all__ = [
    "DEFAULT_EXACT_SCAN_MAX", "DEFAULT_OVERFETCH_LIMIT", "CoarseWeights", "ExactScanMax", "IntentWeights",
    "LexicalWeights", "OutcomeWeights", "OverfetchLimit", "ScanLimits", "SelectionWeights", "StrictModel",
    "TraversalWeights", "Unit",
]

#: The default limit (nodes) at or below which a namespace is scanned exactly (see
#: kbgraph.search.namespace_size).
DEFAULT_EXACT_SCAN_MAX = 2000
#: Most nodes asked of one index (``ScanLimits.overfetch_limit``'s default).
DEFAULT_OVERFETCH_LIMIT = 4096

Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
#: The bounds of the two scan limits, wherever a caller may give them (the search settings, a
#: refine call's RefineWeights, the LangGraph store).
ExactScanMax = Annotated[int, Field(ge=0, le=100_000)]
OverfetchLimit = Annotated[int, Field(ge=1, le=100_000)]


class StrictModel(BaseModel):
    """Frozen, no unknown fields, no NaN or infinite numbers: every search parameter's base."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _default_edge_weights() -> dict[RelationType, float]:
    return {
        RelationType.ABSTRACTION: 0.9,
        RelationType.COMPOSITION: 0.7,
        RelationType.ADAPTATION: 0.8,
        RelationType.ALTERNATIVE: 0.6,
    }


class CoarseWeights(StrictModel):
    """The coarse score: the semantic (problem+goal) and structural (workflow shape) indexes, the
    stage blend λ(t) with the fine score, and transferability across domains."""

    structure_weight: Unit = Field(
        default=0.8, description="ω: share of the structural index in S_coarse = (1−ω)·textual + ω·cos(structure), "
        "textual = (1−α)·cos(pg) + α·lexical. Experiences without steps use textual alone.")
    task_structure_weight: Unit = Field(
        default=0.0, description="ω for a query that carries no executed steps: its words alone say what was asked, "
        "not which workflow worked (on real runs the answer is often to refuse or transfer), so the structural index "
        "weighs less than when the executed steps give the query a shape.")
    intent_structure_weight: Unit = Field(
        default=0.2, description="ω for a query without executed steps, scaled by how little of it the memory's words "
        "cover: ω = max(task_structure_weight, intent_structure_weight·(1 − coverage)). A request in words the memory "
        "does not use (\"swap an item that arrived for another colour\") says what kind of change it wants, which is "
        "what a workflow's shape is; one whose words the memory holds (ids, products, places) is matched by its text.")
    query_steps: bool = Field(
        default=True, description="Append the executed actions (a -> b) to the text searched in the structural index.")
    theta: Unit = Field(default=0.0, description="θ_coarse: candidates whose coarse score is below are dropped.")
    lambda_kind: Literal["exponential", "linear", "constant"] = "exponential"
    lambda_rate: Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False)] = Field(
        default=0.25, description="λ(t) = max(floor, exp(−rate·t)) with t the number of steps executed so far.")
    lambda_floor: Unit = 0.2
    tau: Annotated[float, Field(gt=0.0, le=100.0, allow_inf_nan=False)] = Field(
        default=1.0, description="τ of trans = exp(−d_domain/τ); d_domain = 1 − cos of the two domain names' embeddings.")


class LexicalWeights(StrictModel):
    """The lexical channel: BM25 over the candidates, its share α of the textual score."""

    alpha: Unit = Field(default=0.6, description="α: weight of the lexical score within textual (BM25 over the candidates, relative to the best match).")
    scale: Literal["best", "coverage"] = Field(
        default="best", description="The lexical score relative to the best candidate's BM25 (best), or to the BM25 a "
        "document holding every query word would get (coverage: the share of the request the text covers).")
    stop_words: Literal["keep", "drop", "auto"] = Field(
        default="auto", description="English stop words in the full-text query: keep them (as the index does), "
        "drop them, or drop them only from verbose queries (more than verbose_query_terms distinct words).")
    verbose_query_terms: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=20, description="From this many distinct words on, a query is verbose (a story, not a request).")


class IntentWeights(StrictModel):
    """The intent channel of a request without executed steps (kbgraph.search.student.intent): what
    a workflow changes, matched with what the request asks."""

    weight: Unit = Field(
        default=0.9, description="ι: for a request without executed steps, share of the intent match in S_coarse ← "
        "(1−ι)·S_coarse + ι·intent, intent = how well what a workflow changes (its state-changing operations in words) "
        "matches what the request asks, ask by ask (kbgraph.search.scoring.intent_match). 0 turns the intent channel off.")
    scale: Literal["fixed", "novelty", "ramp"] = Field(
        default="ramp", description="How ι applies to one request: as it is (fixed), times how far the request is "
        "from every text the memory holds (novelty: ι·(1 − the best semantic cosine among the candidates)), or all of "
        "ι below new_below, none above known_above and a straight line between (ramp). A request "
        "the memory holds nearly word for word (a task seen before) is answered by its own runs, whatever their "
        "operations; a request in new words by what workflows change (kbgraph.search.scoring.intent_share). The ramp applies "
        "to a request of a domain the memory holds workflows of; another is matched across domains and scaled by novelty.")
    new_below: Unit = Field(
        default=0.45, description="ramp: a request whose best semantic cosine with the candidates is below this is new "
        "to the memory and takes all of ι.")
    known_above: Unit = Field(
        default=0.70, description="ramp: a request whose best semantic cosine is above this is a task the memory holds "
        "and takes no ι.")
    spread: bool = Field(
        default=True, description="Stretch the intent matches of one request's candidates to [0, 1] (min to max) "
        "before mixing them with ι, as the lexical score is relative to the best: a request's intent matches span a "
        "few tenths of cosine, so unstretched they weigh less than ι says (a request of a domain the memory holds "
        "workflows of).")
    candidates: Annotated[int, Field(ge=0, le=2000)] = Field(
        default=10, description="Workflows (distinct sequences of operations) the intent channel adds as candidates, the "
        "best matches of the request's asks, with every experience that stands for them.")
    history_weight: Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False)] = Field(
        default=0.1, description="η: how much the namespace's own history adds to the intent match: intent ← intent + "
        "η·association, the idf-weighted mean lift of the request's words for a workflow's operations over the stored "
        "runs that worked (kbgraph.search.scoring.history_association; a query never counts its own runs). 0 matches "
        "by the operations' words alone (docs/search.md has the suite's figures for both).")
    one_ask_penalty: Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False)] = Field(
        default=3.0, description="γ1 of the intent match of a request of one ask: a workflow of two or more distinct "
        "operations has its match multiplied by (mean over its operations of cos(request, operation) / the request's best "
        "cosine with any operation)^γ1, as one ask is one change (kbgraph.search.scoring.one_ask_matches). 0: matched "
        "as a whole only.")
    human_asks: bool = Field(
        default=True, description="A request that asks to be put through to a human (\"let me talk to a real person\", "
        "kbgraph.search.handoff.asks_for_a_human) is answered by the workflows that hand the task to one: the intent "
        "match takes their handoff operation as the answer to that ask, and their successes count in full "
        "(outcomes.handoff_credit does not apply).")
    state_shift: Unit = Field(
        default=0.1, description="An ask that says the state its object is in (\"the kettle I got\", \"hasn't shipped "
        "yet\", kbgraph.search.order_state) has its cosine with an operation whose name needs that state raised by this "
        "much, and with one that needs another state lowered by it. 0: off.")
    verb_shift: Unit = Field(
        default=0.1, description="An ask that names an operation by its verb (\"can I swap it?\" an exchange, \"send it "
        "back\" a return; kbgraph.search.asked_verbs) has its cosine with each operation of that verb raised by this much. "
        "0: off.")
    payment_joins: bool = Field(
        default=True, description="A piece of a request that only says how to pay (\"pay with a gift card\", "
        "\"charge it to the card ending 7334\", kbgraph.search.asks.pays_only) is part of the ask before it, not an ask "
        "of its own. False: such a piece is an ask like any other (the default until 2026-12-04).")
    order_penalty: Unit = Field(
        default=0.2, description="ε of the intent match of a request of several asks: a workflow's match is multiplied "
        "by 1 − ε·(the share of pairs of asks whose operations it makes in the other order than they were asked), as a "
        "customer asks first for what is to be done first (kbgraph.search.scoring.intent_match). 0: order is not read.")
    repeat_penalty: Annotated[float, Field(ge=0.0, le=10.0, allow_inf_nan=False)] = Field(
        default=0.0, description="ρ: a workflow that repeats a change (credits an account four times, cancels two "
        "orders) has its intent match multiplied by (distinct operations / changes made)^ρ, as the changes it repeats "
        "are changes nobody asked for (kbgraph.search.scoring.repeat_factors). 0: off.")
    unasked_penalty: Unit = Field(
        default=1.0, description="γ of the intent match of a request of several asks: a workflow's match is multiplied by "
        "(mean / max over its operations of how well some ask asks for it)^γ, so changes nobody asked for cost.")

    @model_validator(mode="after")
    def _ramp_rises(self) -> IntentWeights:
        if self.known_above <= self.new_below:
            raise ValueError(f"intent.known_above ({self.known_above}) must exceed intent.new_below ({self.new_below})")
        return self


class OutcomeWeights(StrictModel):
    """What outcomes add: success, support, quality, utility, task-conditioned feedback, handoffs."""

    success_floor: Unit = Field(
        default=0.2, description="Score is multiplied by floor + (1−floor)·success_rate (Agent KB eq. 5 with a floor, so a "
        "failed experience still surfaces, below successful ones).")
    support_weight: Unit = Field(
        default=0.2, description="β: added β·support, support = min(1, ln(1+n)/ln(1+n_sat)) for an experience that stands "
        "for n successful runs (an abstract one: its instances' successful runs). More evidence, more trust.")
    support_saturation: Annotated[int, Field(ge=1, le=1_000_000)] = 100
    quality_weight: Unit = Field(
        default=0.0, description="MAEL/Agent KB: score ← (1−w)·score + w·quality; quality is learnt from feedback.")
    utility_weight: Unit = Field(
        default=0.1, description="Agent KB D.3: score ← score·((1−w) + w·utility); utility = quality decayed since last use "
        "plus the decayed impact of each use (see kbgraph.core.utility). Equal utilities keep the order.")
    outcome_weight: Annotated[float, Field(ge=0.0, le=5.0)] = Field(
        default=0.7, description="Task-conditioned feedback: score ← score·exp(w·evidence), evidence = the outcomes this "
        "experience had on tasks like the query (reported with record_feedback(task=…)), weighted by task similarity. "
        "0 turns it off.")
    outcome_similarity_floor: Annotated[float, Field(ge=0.0, lt=1.0)] = Field(
        default=0.9, description="Past tasks less similar than this (cosine) to the query do not count as evidence.")
    handoff_credit: Unit = Field(
        default=0.5, description="A way that hands the task to a human (transfer_to_human_agents, escalate_to_support) "
        "counts each success at this weight, in its success factor and its share of its task's successes: the agent "
        "passed the request on rather than resolving it (kbgraph.search.handoff). 1 turns it off.")


class TraversalWeights(StrictModel):
    """Graph traversal: the way past a failed step, and the hops along the four relations."""

    hop_decay: Unit = Field(default=0.8, description="δ: per-hop decay of a path score.")
    max_hops: Annotated[int, Field(ge=0, le=3)] = Field(
        default=1, description="Hops of graph traversal. When the query's last executed step failed, the experiences "
        "whose runs failed the same way are reached from that failure (the ALTERNATIVE way past it) and score as the "
        "best direct hit times how well their run resolved it: this is what the default 1 is for (the alternative "
        "development set, docs/search.md). From the best direct hits along ADAPTATION, COMPOSITION, ALTERNATIVE "
        "(and ABSTRACTION), a path decays below its seed and changed no figure of any set; 2-3 go further. "
        "0: traversal takes no part in the ranking.")
    seeds: Annotated[int, Field(ge=0, le=100)] = Field(
        default=0, description="Top direct hits expanded along ADAPTATION, COMPOSITION, ALTERNATIVE and ABSTRACTION "
        "(with max_hops >= 1). 0 by default: those hops changed no figure of any development set, and each search would "
        "pay one more request in sequence for them (docs/search.md); the way past a failed step needs no seeds. 10 "
        "opts in, e.g. for a sparse knowledge base whose direct channels find little.")
    neighbours_per_seed: Annotated[int, Field(ge=1, le=1000)] = 20
    edge_weights: dict[RelationType, Unit] = Field(default_factory=_default_edge_weights)

    @field_validator("edge_weights", mode="before")
    @classmethod
    def _complete_edge_weights(cls, value: Any) -> Any:
        if isinstance(value, dict):
            merged: dict[Any, Any] = dict(_default_edge_weights())
            for key, weight in value.items():
                try:
                    merged[RelationType(str(key).upper())] = weight
                except ValueError:
                    allowed = ", ".join(t.value for t in RelationType)
                    raise ValueError(f"unknown relation {key!r} (allowed: {allowed})") from None
            return merged
        return value


class SelectionWeights(StrictModel):
    """Which experiences become candidates and hits, and how many."""

    candidates: Annotated[int, Field(ge=1, le=2000)] = Field(
        default=40, description="Candidates each channel (vector, full-text, steps) contributes.")
    step_candidates: Annotated[int, Field(ge=0, le=2000)] = Field(
        default=10, description="Of the experiences owning a step near an executed step, how many (the nearest) join the "
        "candidates; all of them (up to `candidates`) still give the fine score its evidence. Steps such as finding "
        "the user start most runs of a domain, so beyond the nearest few this channel adds runs alike only in that "
        "step, and each candidate costs its scoring facts (retail nDCG@10 0.5316 with 40, 20, 10, 5 or 0).")
    concepts: Annotated[int, Field(ge=0, le=20)] = Field(default=3, description="Meta-concept documents returned (BREW: 3).")
    mmr_lambda: Unit = Field(default=1.0, description="MMR λ over the final candidates; 1 = no diversity.")
    threshold: Unit = Field(default=0.0, description="θ: results below this final score are not returned.")
    workflows: bool = Field(
        default=True, description="An abstract experience (a workflow) scores as its best-fitting instance that worked "
        "and ranks right above it: the workflow of the run most like the task is the answer, standing for all its runs.")
    shared_first: bool = Field(
        default=True, description="EDV hierarchical retrieval for a calling agent: shared experiences first, its "
        "private ones only to fill up k. False ranks both banks together by score.")


class ScanLimits(StrictModel):
    """When a namespace is scanned exactly, and how far a shared index is asked above that: the two
    limits every candidate search reads (kbgraph.search.candidates, which calls it ``ScanPolicy``)."""

    exact_scan_max: ExactScanMax = Field(
        default=DEFAULT_EXACT_SCAN_MAX, description="A namespace with at most this many experiences (steps, for the "
        "step channel) is scanned exactly instead of asking the shared vector indexes (HNSW, approximate, and crowded "
        "by other namespaces): results are then exact and do not depend on what else the database holds. A scan "
        "costs about 7 µs a node on 2 cores, so 2000 nodes stay near 14 ms. 0 always asks the indexes.")
    overfetch_limit: OverfetchLimit = Field(
        default=DEFAULT_OVERFETCH_LIMIT,
        description="Most nodes asked of one index before falling back to an exact namespace scan.")

    def overridden(self, exact_scan_max: int | None = None, overfetch_limit: int | None = None) -> ScanLimits:
        """These limits with a call's own, where it gives them (validated)."""
        changes = {name: value for name, value in (("exact_scan_max", exact_scan_max),
                                                   ("overfetch_limit", overfetch_limit)) if value is not None}
        return ScanLimits.model_validate({**self.model_dump(), **changes}) if changes else self

    def scans(self, count: int) -> bool:
        """A namespace holding ``count`` nodes of the kind searched is scanned exactly."""
        return count <= self.exact_scan_max
