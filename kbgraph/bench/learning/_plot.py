"""The simulation's plot: success@1 and nDCG@10 per pass, the repository's size per round."""

from __future__ import annotations

from pathlib import Path

from kbgraph.bench.learning._figures import PassFigures
from kbgraph.bench.learning._simulation import LearningReport


def save_plot(report: LearningReport, path: Path) -> Path:
    """A PNG with two panels: success@1 and nDCG@10 per pass (learning solid, control dashed) and
    the repository's size per re-ingest round (round 0 = before the first)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 4.8), layout="constrained")
    passes, sizes = figure.subplots(1, 2)
    for run, style in (("learning", "-"), ("control", "--")):
        figures: list[PassFigures] = report.learning if run == "learning" else report.control
        if not figures:
            continue
        x = [f.pass_no for f in figures]
        passes.plot(x, [f.success_at_1 for f in figures], style, marker="o", color="tab:blue", label=f"success@1 ({run})")
        passes.plot(x, [f.ndcg for f in figures], style, marker="s", color="tab:orange", label=f"nDCG@10 ({run})")
    passes.set_title(f"Per pass, {report.queries} retail tasks")
    passes.set_xlabel("pass")
    passes.set_ylim(0.0, 1.0)
    passes.set_xticks(range(1, report.options.passes + 1))
    passes.grid(alpha=0.3)
    passes.legend(loc="best", fontsize="small")
    if report.rounds:
        x = [0, *(r.round for r in report.rounds)]
        before = report.growth.before if report.growth else report.ingest.total
        sizes.plot(x, [before, *(r.total for r in report.rounds)], "-", marker="o", color="tab:green", label="total")
        active_before = (report.learning or report.control)[-1].active if (report.learning or report.control) else before
        sizes.plot(x, [active_before, *(r.active for r in report.rounds)], "-", marker="s", color="tab:purple",
                   label="active")
        sizes.set_ylim(0, max(before, *(r.total for r in report.rounds)) * 1.2 + 1)
        sizes.set_xticks(x)
        sizes.legend(loc="best", fontsize="small")
    else:
        sizes.text(0.5, 0.5, "no re-ingest rounds", ha="center", va="center", transform=sizes.transAxes)
    sizes.set_title(f"Experiences per re-ingest round ({report.trajectories} perturbed trajectories each)")
    sizes.set_xlabel("round")
    sizes.grid(alpha=0.3)
    mode = "learning vs control" if report.learning and report.control else ("learning" if report.learning else "control")
    figure.suptitle(f"kbgraph learning loop ({mode}), namespace {report.namespace!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=110)
    return path
