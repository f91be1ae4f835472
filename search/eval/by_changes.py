"""A suite report's requests grouped by how many changes they ask for, and by domain: the figures
issue 51 is judged by ("one-change requests ≥ plain cosine + 0.15 in every domain; requests for two
or more changes ≥ best baseline + 0.15").

A request asks for the changes its relevant runs made: the distinct state-changing operations
(:func:`kbgraph.core.shapes.operations`, as ``data/dev/build_sets.py`` defines a run's state changes)
of its first relevant run (every relevant run of the project's request sets makes the same
sequence). Each query counts once, in the strictest leak-free view that judges it
(:func:`kbgraph.search.eval.compare.strictest_per_query`: held out where that view judges it, else
with its own text hidden), with kbgraph's figure and every baseline's from that same view; each
group gives the means, the best baseline and the paired-bootstrap interval of kbgraph's margin over
it and over plain cosine.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.shapes import counted_tool, operations
from kbgraph.search.eval.bootstrap import Interval, paired_bootstrap
from kbgraph.search.eval.compare import HELD_OUT_VIEW, OWN_TEXT_VIEW, strictest_per_query
from kbgraph.search.eval.data import load_qrels, load_queries, qrels_by_query, valid_runs
from kbgraph.search.eval.report import SetRow, SuiteReport

if TYPE_CHECKING:
    from kbgraph.search.eval.suite import SuiteSet

__all__ = ["ChangeGroup", "changes_by_run", "groups_by_changes", "requests_of"]

#: The baseline a one-change request is held to (issue 51: "≥ plain cosine + 0.15").
COSINE = "minilm_cosine"


class ChangeGroup(BaseModel):
    """The requests for one change (``one``) or several (``several``) of one domain (or of all)."""

    changes: str
    domain: str
    queries: int
    kbgraph: float
    baselines: dict[str, float]
    best_baseline: str
    over_best: Interval
    over_cosine: Interval


def changes_by_run(files: Iterable[Path]) -> dict[str, int]:
    """Each run's number of distinct state-changing operations (lines that are no trajectory are skipped)."""
    return {run.id: len(set(operations([counted_tool(s.action, s.arguments) for s in run.steps])))
            for run in valid_runs(files)}


def requests_of(sets: Iterable[SuiteSet], gold: Path) -> tuple[dict[str, dict[str, list[str]]], dict[str, dict[str, str]]]:
    """Of the sets whose requests carry no steps and are answered from ``gold`` (the gold runs'
    folder): each query's relevant runs and its domain, by set."""
    relevant: dict[str, dict[str, list[str]]] = {}
    domains: dict[str, dict[str, str]] = {}
    for found in sets:
        queries = load_queries(found.queries)
        if found.corpus != gold or any(q.steps_so_far for q in queries):
            continue
        domains[found.name] = {q.qid: q.domain for q in queries}
        relevant[found.name] = {qid: [doc for doc, rel in judged.items() if rel > 0]
                                for qid, judged in qrels_by_query(load_qrels(found.qrels)).items()}
    return relevant, domains


def groups_by_changes(report: SuiteReport, relevant: Mapping[str, Mapping[str, Sequence[str]]],
                      domains: Mapping[str, Mapping[str, str]], changes: Mapping[str, int],
                      resamples: int = 10_000) -> list[ChangeGroup]:
    """The report's queries of the sets in ``relevant`` (set → query → its relevant runs; ``domains``:
    set → query → domain) grouped by one or several changes (``changes``: run → its distinct
    operations), per domain and over all domains."""
    figures: dict[tuple[str, str], list[Mapping[str, float]]] = defaultdict(list)
    for row in report.rows:
        if row.set not in relevant:
            continue
        for qid, by_system in _strictest(row).items():
            runs = sorted(relevant[row.set].get(qid, ()))
            if not runs or runs[0] not in changes:
                continue
            group = "one" if changes[runs[0]] <= 1 else "several"
            figures[(group, domains[row.set][qid])].append(by_system)
            figures[(group, "all")].append(by_system)
    return [_group(changes_, domain, rows, resamples) for (changes_, domain), rows in sorted(figures.items())]


def _strictest(row: SetRow) -> dict[str, dict[str, float]]:
    """Each query's figures (every system) in the strictest leak-free view that judges it."""
    if row.own_text is None:
        raise InvalidInputError([f"set {row.set}: the report has no own-text view of its own (a report of eval "
                                 "--suite --per-query from 2026-12-04 on)"])
    if row.per_query == {} and row.queries:
        raise InvalidInputError([f"set {row.set}: the report has no per-query figures (run the suite with --per-query)"])
    views = {OWN_TEXT_VIEW: row.own_text.per_query}
    if row.held_out is not None:
        views[HELD_OUT_VIEW] = row.held_out.per_query
    return strictest_per_query(views)


def _group(changes: str, domain: str, rows: Sequence[Mapping[str, float]], resamples: int) -> ChangeGroup:
    systems = [name for name in rows[0] if all(name in r for r in rows)]
    means = {name: round(sum(r[name] for r in rows) / len(rows), 4) for name in systems}
    baselines = {name: value for name, value in means.items() if name != "kbgraph"}
    best = max(baselines, key=lambda name: baselines[name])
    return ChangeGroup(
        changes=changes, domain=domain, queries=len(rows), kbgraph=means["kbgraph"], baselines=baselines,
        best_baseline=best,
        over_best=paired_bootstrap([r["kbgraph"] - r[best] for r in rows], resamples),
        over_cosine=paired_bootstrap([r["kbgraph"] - r[COSINE] for r in rows], resamples))
