"""The simulation's figures: each task's outcome, a pass's metrics, passes compared (first and last,
learning minus control), each re-ingest round's size and the growth verdict. Pure functions and
pydantic models."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from kbgraph.search.eval.metrics import evaluate

RunName = Literal["learning", "control"]


class QueryOutcome(BaseModel):
    """One task of one pass: what the search returned, what the agent used and how it went."""

    qid: str
    retrieved: list[str] = Field(description="Experience ids, best first.")
    ranking: list[str] = Field(description="The trajectories they stand for, best first (at most k).")
    used: str | None = Field(default=None, description="The top-1 experience the agent used.")
    used_actions: list[str] = Field(default_factory=list, description="Its state-changing actions.")
    success: bool


class PassMetrics(BaseModel):
    queries: int
    successes: int
    success_at_1: float
    ndcg: float
    recall: float
    mrr: float
    evaluated: int = Field(description="Queries with a relevant trajectory in the corpus (nDCG, Recall, MRR).")


class PassFigures(PassMetrics):
    run: RunName
    pass_no: int
    active: int
    archived: int
    total: int
    merged: int = Field(default=0, description="Experiences merged away by the maintenance after this pass.")
    archived_by_maintenance: int = 0
    maintenance_run: str | None = None
    seconds: float = 0.0


def aggregate_pass(outcomes: Sequence[QueryOutcome], qrels: Mapping[str, Mapping[str, float]], k: int = 10) -> PassMetrics:
    """success@1 over every task of the pass; nDCG@k, Recall@k and MRR (kbgraph.search.eval.metrics)
    over the tasks whose judgements name a trajectory of the corpus."""
    judged = {o.qid: qrels[o.qid] for o in outcomes if o.qid in qrels}
    scores = evaluate({o.qid: o.ranking for o in outcomes}, judged, k)
    successes = sum(o.success for o in outcomes)
    return PassMetrics(
        queries=len(outcomes), successes=successes,
        success_at_1=round(successes / len(outcomes), 4) if outcomes else 0.0,
        ndcg=round(scores["ndcg"], 4), recall=round(scores["recall"], 4), mrr=round(scores["mrr"], 4),
        evaluated=scores["evaluated"],
    )


COMPARED = ("success_at_1", "ndcg", "recall", "mrr")


class PassComparison(BaseModel):
    """First pass next to the last one of a run (the second, by default)."""

    run: RunName
    first_pass: int
    last_pass: int
    first: dict[str, float]
    last: dict[str, float]
    delta: dict[str, float]
    beats: dict[str, bool] = Field(description="Last pass strictly above the first, per metric.")


def compare_passes(passes: Sequence[PassFigures]) -> PassComparison | None:
    """None with fewer than two passes."""
    if len(passes) < 2:
        return None
    first, last = passes[0], passes[-1]
    values = {name: (float(getattr(first, name)), float(getattr(last, name))) for name in COMPARED}
    return PassComparison(
        run=first.run, first_pass=first.pass_no, last_pass=last.pass_no,
        first={n: a for n, (a, _) in values.items()}, last={n: b for n, (_, b) in values.items()},
        delta={n: round(b - a, 4) for n, (a, b) in values.items()},
        beats={n: b > a for n, (a, b) in values.items()},
    )


class PassDelta(BaseModel):
    """Learning minus the control, for one pass: what feedback and maintenance added (or cost)."""

    pass_no: int
    delta: dict[str, float]


def learning_minus_control(learning: Sequence[PassFigures], control: Sequence[PassFigures]) -> list[PassDelta]:
    """Per pass both runs made, learning's figures minus the control's."""
    by_pass = {f.pass_no: f for f in control}
    return [
        PassDelta(pass_no=f.pass_no, delta={n: round(float(getattr(f, n)) - float(getattr(by_pass[f.pass_no], n)), 4)
                                            for n in COMPARED})
        for f in learning if f.pass_no in by_pass
    ]


class RoundFigures(BaseModel):
    round: int
    records: int
    experiences_new: int
    experiences_merged: int = Field(description="Merged away by the ingest's own merge stage.")
    active: int
    archived: int
    total: int
    growth: int = Field(description="Total experiences added since the previous round (or the passes).")
    merged: int = Field(default=0, description="Merged away by the maintenance after this round.")
    archived_by_maintenance: int = 0
    maintenance_run: str | None = None
    growth_checkpoint_run: str | None = Field(default=None, description="Maintenance the ingest itself triggered.")
    seconds: float = 0.0


class GrowthVerdict(BaseModel):
    before: int = Field(description="Total experiences before the first round.")
    totals: list[int]
    growth: list[int]
    factor: float
    ratio: float = Field(description="Total after the last round / total after round 1.")
    within_factor: bool
    flattening: bool | None = Field(description="Last round added no more than round 1 (None with one round).")
    bounded: bool


def growth_verdict(before: int, totals: Sequence[int], factor: float = 1.5) -> GrowthVerdict | None:
    """Is the repository bounded under repeated re-ingestion? The total after the last round must
    be at most ``factor`` × the total after round 1, and the last round must add no more than the
    first did (give or take 1 % of round 1's total, so one stray experience is not a trend).
    None without rounds."""
    if not totals:
        return None
    growth = [totals[0] - before] + [b - a for a, b in zip(totals, totals[1:], strict=False)]
    ratio = totals[-1] / totals[0] if totals[0] else (1.0 if totals[-1] == 0 else math.inf)
    within = totals[-1] <= factor * totals[0]
    slack = max(1, math.ceil(0.01 * totals[0]))
    flattening = None if len(totals) < 2 else growth[-1] <= growth[0] + slack
    return GrowthVerdict(before=before, totals=list(totals), growth=growth, factor=factor, ratio=round(ratio, 4),
                         within_factor=within, flattening=flattening, bounded=within and flattening is not False)


class CounterTotals(BaseModel):
    """The learning counters summed over the namespace."""

    experiences: int
    retrieved: int
    used: int
    succeeded: int
    quality_sum: float


class IngestSummary(BaseModel):
    records: int
    experiences_new: int
    experiences_merged: int
    abstract_experiences: int
    total: int
    seconds: float
    growth_checkpoint_run: str | None = None
