"""``kbgraph bench learning``: the learning-loop simulation (see :mod:`kbgraph.bench.learning`),
printed per pass and per round, the first pass next to the last, and saved as a PNG plot."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kbgraph.bench.learning import (
    DEFAULT_DATA_DIR,
    PROTECTED_NAMESPACES,
    LearningReport,
    LearningSimulation,
    control_settings,
    load_simulation_data,
    save_plot,
    subset,
)
from kbgraph.cli._common import _print_json, _progress, _settings, add_commands, err, out
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.extras import require
from kbgraph.kb import KnowledgeBase
from kbgraph.core.progress import stage_reporter

DEFAULT_NAMESPACE = "sim"
DEFAULT_PLOT = Path("kbgraph-learning.png")
METRIC_LABELS = {"success_at_1": "success@1", "ndcg": "nDCG@10", "recall": "Recall@10", "mrr": "MRR"}


def register(bench_app: typer.Typer) -> None:
    add_commands(bench_app, {"learning": bench_learning})


def _check_arguments(namespace: str, force: bool, plot: Path, passes: int, rounds: int,
                     queries: int | None, trajectories: int | None) -> list[str]:
    problems = []
    if namespace in PROTECTED_NAMESPACES and not force:
        problems.append(f"--namespace {namespace}: the simulation deletes everything in its namespace first; "
                        f"pick another (default {DEFAULT_NAMESPACE!r}) or add --force")
    if not 1 <= passes <= 50:
        problems.append(f"--passes {passes}: must be between 1 and 50")
    if not 0 <= rounds <= 100:
        problems.append(f"--reingest-rounds {rounds}: must be between 0 and 100")
    for name, value in (("--queries", queries), ("--trajectories", trajectories)):
        if value is not None and value < 1:
            problems.append(f"{name} {value}: must be at least 1")
    if plot.suffix.lower() != ".png":
        problems.append(f"--plot {plot}: must name a .png file")
    elif not plot.parent.is_dir():
        problems.append(f"--plot {plot}: no folder {plot.parent}")
    elif not os.access(plot.parent, os.W_OK):
        problems.append(f"--plot {plot}: folder {plot.parent} is not writable")
    return problems


def bench_learning(
    namespace: Annotated[str, typer.Option(
        "--namespace", "-n", help="Namespace to simulate in; it is deleted first")] = DEFAULT_NAMESPACE,
    passes: Annotated[int, typer.Option("--passes", help="Passes over the queries")] = 2,
    reingest_rounds: Annotated[int, typer.Option(
        "--reingest-rounds", help="Rounds of re-ingesting the trajectories, perturbed")] = 5,
    plot: Annotated[Path, typer.Option("--plot", help="Where to save the PNG plot")] = DEFAULT_PLOT,
    no_learning: Annotated[bool, typer.Option(
        "--no-learning", help="Only the control: the same replay without feedback or maintenance")] = False,
    force: Annotated[bool, typer.Option("--force", help="Allow the default and demo namespaces")] = False,
    data: Annotated[Path, typer.Option(
        "--data", help="The shared data folder (trajectories/retail_train.jsonl, eval/retail_*.jsonl)")] = DEFAULT_DATA_DIR,
    queries: Annotated[int | None, typer.Option(
        "--queries", help="Only the first N queries (a quicker, smaller run)")] = None,
    trajectories: Annotated[int | None, typer.Option(
        "--trajectories", help="Only N trajectories, holding relevant ones of every query")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the perturbations")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON")] = False,
) -> None:
    """Learning-loop simulation: retail queries replayed as tasks with feedback and maintenance,
    pass after pass, next to a control without them; then perturbed re-ingestion, to show the
    repository stays bounded. Figures per pass and per round, and a PNG plot."""
    require("matplotlib", "bench", "kbgraph bench learning (its plot)")
    problems = _check_arguments(namespace, force, plot, passes, reingest_rounds, queries, trajectories)
    if problems:
        raise InvalidInputError(problems)
    # Everything is read and checked before connecting: a typo fails in a moment.
    simulation_data = subset(load_simulation_data(data), queries, trajectories)
    settings = _settings(namespace)
    if no_learning:
        # The control has no maintenance at all, not even kbgraph's own at growth checkpoints.
        settings = control_settings(settings)
    options = {"passes": passes, "reingest_rounds": reingest_rounds, "learning": not no_learning, "seed": seed}
    with KnowledgeBase.from_settings(settings) as kb, _progress() as progress:
        on_progress = stage_reporter(progress)

        err.print(f"simulating in namespace {kb.namespace!r} (cleared first): {len(simulation_data.trajectories)} "
                  f"trajectories, {len(simulation_data.queries)} queries, {passes} passes, {reingest_rounds} rounds")
        report = LearningSimulation(kb, simulation_data, options, on_progress).run()
    report.plot = str(save_plot(report, plot))
    if as_json:
        _print_json(report.model_dump(mode="json"))
        return
    print_report(report)


def _pass_table(report: LearningReport) -> Table:
    table = Table("run", "pass", "success@1", "nDCG@10", "Recall@10", "MRR", "active", "archived", "merged",
                  "archived by maint.", "seconds", title="per pass")
    for row in [*report.control, *report.learning]:
        table.add_row(row.run, str(row.pass_no), f"{row.success_at_1:.4f} ({row.successes}/{row.queries})",
                      f"{row.ndcg:.4f}", f"{row.recall:.4f}", f"{row.mrr:.4f}", str(row.active), str(row.archived),
                      str(row.merged), str(row.archived_by_maintenance), f"{row.seconds:.1f}")
    return table


def _comparison_table(report: LearningReport) -> Table:
    """The first pass next to the last one, for each run, side by side."""
    table = Table("metric", title="first pass vs last pass")
    for c in report.comparisons:
        table.add_column(f"{c.run} pass {c.first_pass}")
        table.add_column(f"{c.run} pass {c.last_pass}")
        table.add_column(f"{c.run} Δ")
    for key, label in METRIC_LABELS.items():
        cells = []
        for c in report.comparisons:
            mark = " ↑" if c.beats[key] else (" ↓" if c.delta[key] < 0 else " =")
            cells += [f"{c.first[key]:.4f}", f"{c.last[key]:.4f}", f"{c.delta[key]:+.4f}{mark}"]
        table.add_row(label, *cells)
    return table


def _round_table(report: LearningReport) -> Table:
    table = Table("round", "records", "new (ingest)", "merged (ingest)", "total", "active", "archived", "growth",
                  "merged (maint.)", "archived (maint.)", "seconds", title="per re-ingest round")
    for row in report.rounds:
        table.add_row(str(row.round), str(row.records), str(row.experiences_new), str(row.experiences_merged),
                      str(row.total), str(row.active), str(row.archived), f"{row.growth:+d}", str(row.merged),
                      str(row.archived_by_maintenance), f"{row.seconds:.1f}")
    return table


def print_report(report: LearningReport) -> None:
    i = report.ingest
    out.print(f"namespace {report.namespace!r}: {report.trajectories} trajectories ingested in {i.seconds} s → "
              f"{i.total} experiences ({i.abstract_experiences} abstract); {report.queries} queries per pass")
    out.print(_pass_table(report))
    if report.comparisons:
        out.print(_comparison_table(report))
    for d in report.learning_minus_control:
        out.print(f"learning − control, pass {d.pass_no}: " + ", ".join(
            f"{label} {d.delta[key]:+.4f}" for key, label in METRIC_LABELS.items()))
    for c in report.comparisons:
        verdict = "beats" if c.beats["success_at_1"] and c.beats["ndcg"] else "does not beat"
        out.print(f"{c.run}: pass {c.last_pass} {verdict} pass {c.first_pass} on both success@1 and nDCG@10")
    if report.control_changed_counters is not None:
        out.print(f"control changed the counters: {'yes' if report.control_changed_counters else 'no'}")
    if report.feedback_changed_counters is not None:
        after = report.counters["after_learning"]
        out.print(f"feedback changed the counters: {'yes' if report.feedback_changed_counters else 'no'} "
                  f"(retrieved {after.retrieved}, used {after.used}, succeeded {after.succeeded})")
    if report.rounds:
        out.print(_round_table(report))
    g = report.growth
    if g is not None:
        flattening = "n/a (one round)" if g.flattening is None else ("yes" if g.flattening else "no")
        out.print(f"bounded: {'yes' if g.bounded else 'no'} — total {g.totals[-1]} after round {len(g.totals)} = "
                  f"{g.ratio:.2f} × {g.totals[0]} after round 1 (limit {g.factor}×); growth per round "
                  f"{', '.join(f'{n:+d}' for n in g.growth)} from {g.before}; flattening: {flattening}")
    for note in report.notes:
        out.print(f"note: {note}", markup=False, highlight=False)
    out.print(f"plot saved to {report.plot} ({report.seconds} s in all)")
