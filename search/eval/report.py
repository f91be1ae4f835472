"""The rows made of the pipeline's run of a set (kbgraph.search.eval.pipeline): one system's
figures, :class:`SystemScores` (``kbgraph eval`` and the teacher phase list one per system), and
the suite's row per set: a set's row and its held-out view share one row type, :class:`SystemsRow`
(kbgraph next to every baseline); each adds what only it has. The JSON field names are the
reports' format: ``kbgraph eval --compare`` reads suite reports saved by earlier versions.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from kbgraph.core.weights import WeightChanges
from kbgraph.search.eval.metrics import ndcg_by_query
from kbgraph.search.eval.pipeline import SetRun
from kbgraph.search.eval.recipes import KBGRAPH

__all__ = ["HeldOutRow", "OwnTextRow", "SetRow", "SuiteReport", "SystemScores", "SystemsRow"]


class SystemScores(BaseModel):
    """One system's figures over a set: the measures of its rankings the set reports (nDCG always)
    and, for a set measured by each query's first answer (the teacher phase), the share of queries
    for which each fact of that answer held. A figure the set does not report is absent."""

    system: str
    ndcg: float
    recall: float | None = None
    mrr: float | None = None
    #: The teacher phase's facts of the first failure match: of the query's error class …
    same_class: float | None = None
    #: … and its run then reached its goal, whatever the recovery ("good") …
    good: float | None = None
    #: … a second fact: of its class, with a concrete recovery whose fix went through (run succeeded or not).
    concrete_success: float | None = None
    #: The queries the figures are over: those judged, or, for a set measured by its answers'
    #: facts, every query asked (nDCG is then over the judged ones only).
    evaluated: int
    seconds: float

    @model_serializer(mode="wrap")
    def _reported_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {name: value for name, value in handler(self).items() if value is not None}

    @classmethod
    def of(cls, run: SetRun, name: str) -> Self:
        """``name``'s row of ``run``."""
        result, shares = run.evaluated[name], run.shares(name)
        return cls(system=name, **{m: round(result[m], 4) for m in run.measures}, **shares,
                   evaluated=run.asked if shares else result["evaluated"], seconds=round(run.seconds[name], 2))


#: With ``per_query``: each query's nDCG@k, by system (kbgraph, every baseline, and in a set's row
#: every ablation column and own_text_hidden): where a figure comes from, query by query. Each row
#: type declares it last, so a report's JSON lists the (long) figures by query after the rest.
PerQuery = dict[str, dict[str, float]]


class SystemsRow(BaseModel):
    """kbgraph next to every baseline over one view of a set (and ``per_query``, declared last by
    each row type)."""

    #: Queries evaluated (those with a relevant run).
    queries: int
    kbgraph: float
    baselines: dict[str, float]
    best_baseline: str
    margin: float

    @classmethod
    def of(cls, run: SetRun, per_query: bool, **own: Any) -> Self:
        """The row of ``run``, with ``own``: the fields of the row's own type (each has ``per_query``)."""
        scores = run.ndcg()
        fields: dict[str, Any] = {"per_query": ndcg_by_query(run.evaluated) if per_query else {}, **own}
        return cls(queries=run.evaluated[KBGRAPH.name]["evaluated"], kbgraph=scores[KBGRAPH.name],
                   baselines={name: scores[name] for name in run.baselines}, best_baseline=run.best_baseline(),
                   margin=run.margin(KBGRAPH.name), **fields)


class HeldOutRow(SystemsRow):
    """A set answered from the corpus less its queries' excluded runs."""

    namespace: str
    runs_left_out: int
    per_query: PerQuery = Field(default_factory=dict)


class OwnTextRow(SystemsRow):
    """A set with each query's own text hidden: for a query whose excluded runs' own text a merged
    experience shows, every run that experience stands for is left out too, for kbgraph and every
    baseline alike, and judged on the runs left (kbgraph.search.eval.shown_text.own_text_runs)."""

    #: Queries with runs left out besides their exclusions, and how many of them no longer have a
    #: relevant run (not judged in this view).
    hiding: int
    unjudged: int
    runs_left_out: int
    per_query: PerQuery = Field(default_factory=dict)


class SetRow(SystemsRow):
    set: str
    ablations: dict[str, float] = Field(default_factory=dict)
    #: kbgraph in the own-text view (``own_text``), and its margin over that view's best baseline;
    #: how many queries had runs left out there. Equal to kbgraph where none had.
    own_text_hidden: float
    own_text_margin: float
    own_text_queries: int = 0
    #: The own-text view, kbgraph and every baseline (reports before 2026-12-04 have none: their
    #: ``own_text_hidden`` is kbgraph's alone, with the baselines of the plain view).
    own_text: OwnTextRow | None = None
    #: With ``held_out``: the set answered from the corpus without its queries' excluded runs
    #: (kbgraph.search.eval.held_out), kbgraph and every baseline over that corpus.
    held_out: HeldOutRow | None = None
    seconds: float
    namespaces: list[str]
    per_query: PerQuery = Field(default_factory=dict)


class SuiteReport(BaseModel):
    k: int
    weights: WeightChanges
    ablations: dict[str, WeightChanges]
    rows: list[SetRow]
    #: The set whose margin over its best baseline is smallest, and that margin.
    worst_set: str
    worst_margin: float
