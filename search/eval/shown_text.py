"""Whose text a merged experience shows, so a leave-one-out query can be kept from its own text.

A leave-one-out query (``exclude``: the run it was written from) must not find that run. Search
excludes an experience that stands only for excluded runs; but when the source was merged with
look-alikes (AutoRefine, ``ingest/merge.py``), the merged experience stands for the others too,
and it shows the text of one member (the canonical one: fewest steps, then the smallest id). When
that member is the excluded source, the query is scored against the very text it was written from,
which no baseline sees (each baseline document is one run, and the source is left out). For an
agent this is no defect, since the experience does stand for the other runs, but it lifts a leave-one-out
figure.

This module finds, from the namespace's merged experiences and the corpus, which runs' own
problem text each merged experience shows (:func:`shown_runs`), and, for one query, the experiences
whose shown text belongs only to runs the query excludes (:func:`own_text_of`). The suite's
own-text view (kbgraph.search.eval.own_text) leaves out, for such a query, every run those
experiences stand for (:func:`own_text_runs`), for kbgraph and the baselines alike: kbgraph cannot
find the source's look-alikes merged under its text, so no system may (until 2026-12-04 only
kbgraph's search left them out, and a baseline that found them scored against a kbgraph that could
not).

The runs' problems are computed as ingestion's default, rule-based abstractor
(``kbgraph.ingest.abstract.RuleBasedAbstractor``) computes them, with the rule it uses
(:func:`kbgraph.core.experience_rules.problem_of`); a merged experience whose problem equals
no member's (a namespace built with another abstractor) shows no known run and is never hidden.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kbgraph.core.experience_rules import problem_of
from kbgraph.search.eval.data import valid_runs
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["merged_experiences", "own_text_of", "own_text_runs", "run_problems", "shown_runs"]

#: A merged experience: (id, the problem it shows, the runs it stands for).
Merged = tuple[str, str, Sequence[str]]


def shown_runs(merged: Iterable[Merged], problems: Mapping[str, str]) -> dict[str, frozenset[str]]:
    """For each merged experience, the runs among its sources whose own problem is the one it shows
    (several when runs share a task text); experiences whose problem is no member's are left out."""
    out: dict[str, frozenset[str]] = {}
    for experience_id, problem, sources in merged:
        shown = frozenset(s for s in sources if problems.get(s) is not None and problems[s].strip() == problem.strip())
        if shown:
            out[experience_id] = shown
    return out


def own_text_of(exclude: Iterable[str], shown: Mapping[str, frozenset[str]]) -> list[str]:
    """The experiences whose shown text belongs only to runs in ``exclude`` (sorted ids)."""
    excluded = frozenset(exclude)
    if not excluded:
        return []
    return sorted(experience_id for experience_id, runs in shown.items() if runs <= excluded)


def own_text_runs(exclude: Iterable[str], shown: Mapping[str, frozenset[str]],
                  members: Mapping[str, Sequence[str]]) -> frozenset[str]:
    """The runs besides ``exclude`` that the experiences showing only its own text stand for
    (:func:`own_text_of`; ``members``: the runs each merged experience stands for)."""
    excluded = frozenset(exclude)
    return frozenset(run for experience_id in own_text_of(excluded, shown)
                     for run in members.get(experience_id, ())) - excluded


def run_problems(files: Sequence[Path]) -> dict[str, str]:
    """The problem text ingestion's rule-based abstraction gives each run of these files (lines that
    are no valid trajectory are skipped: the baselines' loader reports them)."""
    return {trajectory.id: problem_of(trajectory) for trajectory in valid_runs(files)}


def merged_experiences(gateway: Neo4jGateway, namespace: str) -> list[Merged]:
    """The concrete experiences of ``namespace`` that stand for more than one run."""
    rows = gateway.read("eval_merged_experiences", kb=namespace)
    return [(str(r["id"]), str(r["problem"]), list(r["source_ids"])) for r in rows]
