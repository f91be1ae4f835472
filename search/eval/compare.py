"""Two suite reports side by side, judged by statistics: per set the mean per-query change of kbgraph
with its paired-bootstrap 95 % interval, pooled over every set's leak-free queries, and the
adoption rule (:func:`kbgraph.search.eval.bootstrap.verdict`).

Each set is judged on its **leak-free** views, the figures that count: the column with each query's
own source text hidden (``own_text_hidden``, equal to kbgraph's for a set whose queries exclude
nothing), and the set answered from the corpus without its queries' excluded runs (the ``held_out``
row of ``eval --suite --held-out``) when it has one that judges any query (a set whose excluded runs
are all its relevant ones, as WebArena's leave-one-out, has none). The pooled change counts each
query once, in the strictest view that judges it (:func:`strictest_per_query`): held out where the
held-out corpus judges it, else with its own text hidden; a set vetoes a default when either view's
interval lies wholly below the margin. Both reports need ``--per-query``.

Until 2026-12-04 the pooled change took each set once, in its held-out view where it had one, and
left out every query that view cannot judge: 55 of short_airline's 64, 30 of short_banking's 64
(their requests' classes hold no run that is no request's source). Those queries are leak-free with
their own text hidden too, so they now count there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel

from kbgraph.core.errors import InvalidInputError
from kbgraph.search.eval.bootstrap import Interval, Verdict, paired_bootstrap, verdict
from kbgraph.search.eval.report import SetRow, SuiteReport

__all__ = ["HELD_OUT_VIEW", "OWN_TEXT_VIEW", "SetChange", "SuiteComparison", "compare_reports", "leak_free_per_query",
           "strictest_per_query"]

#: The two leak-free views of a set.
HELD_OUT_VIEW = "held out"
OWN_TEXT_VIEW = "own text hidden"
#: Where a report from before the own-text view had its own row (2026-12-04) kept kbgraph's figure
#: with its own text hidden, query by query.
_EARLIER_OWN_TEXT = "own_text_hidden"


class SetChange(BaseModel):
    """One set's leak-free figure before and after, and the per-query change's interval."""

    set: str
    view: str
    before: float
    after: float
    change: Interval


class SuiteComparison(BaseModel):
    sets: list[SetChange]
    verdict: Verdict


def leak_free_per_query(row: SetRow) -> dict[str, dict[str, float]]:
    """The set's leak-free nDCG by query (kbgraph), by view: ``own text hidden`` always, and ``held
    out`` when the set has a held-out corpus that judges any query. A row without per-query figures
    is an error."""
    if not row.per_query:
        raise _no_per_query(row)
    if row.own_text is not None:
        views = {OWN_TEXT_VIEW: {qid: figures["kbgraph"] for qid, figures in row.own_text.per_query.items()}}
    else:
        views = {OWN_TEXT_VIEW: {qid: figures.get(_EARLIER_OWN_TEXT, figures["kbgraph"])
                                 for qid, figures in row.per_query.items()}}
    if row.held_out is not None and row.held_out.queries > 0:
        if not row.held_out.per_query:
            raise _no_per_query(row)
        views[HELD_OUT_VIEW] = {qid: figures["kbgraph"] for qid, figures in row.held_out.per_query.items()}
    return views


Figure = TypeVar("Figure")


def strictest_per_query(views: Mapping[str, Mapping[str, Figure]]) -> dict[str, Figure]:
    """Each query's figure (kbgraph's, or every system's) once, from the strictest of
    :func:`leak_free_per_query`'s views that judges it: held out (the corpus never held the sources
    of any of the set's requests) where that view judges it, else own text hidden (the corpus
    without its own runs, and without an experience that shows only their text)."""
    out = dict(views.get(OWN_TEXT_VIEW, {}))
    out.update(views.get(HELD_OUT_VIEW, {}))
    return out


def _no_per_query(row: SetRow) -> InvalidInputError:
    return InvalidInputError([f"set {row.set}: the report has no per-query figures (run the suite with --per-query)"])


def compare_reports(before: SuiteReport, after: SuiteReport, resamples: int = 10_000) -> SuiteComparison:
    """kbgraph's leak-free change from ``before`` to ``after``, set by set (the sets both ran), view
    by view, and pooled. The pooled change takes each query once, in the strictest view that judges
    it (:func:`strictest_per_query`); a set is harmed when any of its views is. Queries judged in
    only one of the two reports are left out."""
    earlier: Mapping[str, SetRow] = {row.set: row for row in before.rows}
    pooled: dict[str, list[float]] = {}
    every_view: dict[str, list[float]] = {}
    sets: list[SetChange] = []
    for row in after.rows:
        if row.set not in earlier:
            continue
        now_views, then_views = leak_free_per_query(row), leak_free_per_query(earlier[row.set])
        if set(now_views) != set(then_views):
            raise InvalidInputError([f"set {row.set}: one report has its held-out view and the other not "
                                     "(run both with --held-out, or neither)"])
        for view in sorted(now_views, key=lambda v: v != HELD_OUT_VIEW):  # held out first
            now, then = now_views[view], then_views[view]
            common = sorted(set(now) & set(then))
            changes = [now[q] - then[q] for q in common]
            every_view[f"{row.set} ({view})"] = changes
            sets.append(SetChange(
                set=row.set, view=view, before=round(sum(then[q] for q in common) / max(1, len(common)), 4),
                after=round(sum(now[q] for q in common) / max(1, len(common)), 4),
                change=paired_bootstrap(changes, resamples)))
        now_each, then_each = strictest_per_query(now_views), strictest_per_query(then_views)
        pooled[row.set] = [now_each[q] - then_each[q] for q in sorted(set(now_each) & set(then_each))]
    if not sets:
        raise InvalidInputError(["the two reports have no set in common"])
    judged = verdict(pooled, resamples)
    harmed = verdict(every_view, resamples).harmed
    return SuiteComparison(sets=sets, verdict=judged.model_copy(update={"harmed": harmed,
                                                                        "adopt": judged.pooled.low > 0 and not harmed}))
