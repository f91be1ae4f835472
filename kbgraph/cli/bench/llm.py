"""``kbgraph bench llm``: the LLM path (abstractor, reflector, document writer) next to the rule-based
path on the same runs (see :mod:`kbgraph.bench.llm_local`), with the local LLM server of
``kbgraph llm local`` unless another endpoint is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kbgraph.bench.llm_local import DEFAULT_PREFIX, DEFAULT_RUNS_FILE, first_runs, run_llm_benchmark
from kbgraph.cli._common import JsonOption, _print_json, _progress, add_commands, out
from kbgraph.cli.llm import local_server
from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.progress import stage_reporter
from kbgraph.core.settings import Settings


def register(bench_app: typer.Typer) -> None:
    add_commands(bench_app, {"llm": bench_llm})


def bench_llm(
    runs: Annotated[int, typer.Option("--runs", min=1, help="How many runs (the file's first with tool calls, one per task)")] = 5,
    file: Annotated[Path, typer.Option("--file", help="JSON Lines of runs")] = DEFAULT_RUNS_FILE,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="Another OpenAI-compatible endpoint (its other settings from the environment) "
                           "[default: the local server, started if it is not running]")] = None,
    model: Annotated[str | None, typer.Option("--model", help="The model at --base-url")] = None,
    prefix: Annotated[str, typer.Option(
        "--prefix", help="Namespaces <prefix>-rules and <prefix>-llm (cleared first)")] = DEFAULT_PREFIX,
    keep: Annotated[bool, typer.Option("--keep", help="Leave both namespaces in place afterwards")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write the JSON report here")] = None,
    as_json: JsonOption = False,
) -> None:
    """The LLM path (abstractor, reflector, document writer) next to the rule-based path on the same runs:
    seconds per trajectory, answers valid at the first try, fallbacks, and one output of each kind."""
    if not file.is_file():
        raise InvalidInputError([f"--file {file}: no such file"])
    if model is not None and base_url is None:
        raise InvalidInputError(["--model: give --base-url too (the local server has one model)"])
    chosen = first_runs(file, runs)
    local = local_server()
    started_here = False
    if base_url is None:
        started_here = not local.status().running
        local.start()
        llm_settings = local.client_settings()
    else:
        llm_settings = {"abstractor": "llm", "reflector": "llm", "llm_base_url": base_url,
                        **({"llm_model": model} if model else {})}
    try:
        with KnowledgeBase.from_settings(Settings()) as kb, _progress() as progress:
            on_progress = stage_reporter(progress)
            report = run_llm_benchmark(kb, chosen, llm_settings, prefix=prefix, keep=keep,
                                       on_progress=lambda path, done, total: on_progress(
                                           f"{path} path: runs ingested", done, total))
    finally:
        if started_here:
            local.stop()
    if output is not None:
        output.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    if as_json:
        _print_json(report)
        return
    _print_bench(report, out)


def _print_bench(report: dict[str, Any], out: Any) -> None:
    out.print(f"{len(report['runs'])} runs ({', '.join(report['runs'])}); LLM path: {report['model']} at "
              f"{report['endpoint']}", markup=False, highlight=False)
    table = Table("path", "s / trajectory", "abstract s", "reflect s", "concepts s", "valid first try",
                  "repaired or retried", "fell back to rules")
    for path, row in report["paths"].items():
        shares = row.get("shares", {}).get("all")
        stages = row["stage_seconds"]
        table.add_row(path, f"{row['seconds_per_trajectory']:.1f}", f"{stages.get('abstract', 0):.1f}",
                      f"{stages.get('reflect', 0):.1f}", f"{stages.get('concepts', 0):.1f}",
                      *(("—", "—", "—") if shares is None else (
                          f"{shares['valid_first_try']:.0%} of {shares['calls']}",
                          f"{shares['repaired_or_retried']:.0%}", f"{shares['fell_back']:.0%}")))
    out.print(table)
    llm = report["paths"].get("llm", {})
    for stage, shares in llm.get("shares", {}).items():
        if stage != "all":
            reason = llm["llm"][stage]["last_fallback_reason"]
            out.print(f"  {stage}: {shares['calls']} calls, valid first try {shares['valid_first_try']:.0%}, "
                      f"repaired or retried {shares['repaired_or_retried']:.0%}, fell back {shares['fell_back']:.0%}"
                      + (f" (last reason: {reason})" if reason else ""), markup=False, highlight=False)
    for path, row in report["paths"].items():
        for kind, sample in row["samples"].items():
            if sample is not None:
                out.print(f"\n[{path} path] one {kind} (by {sample['by']}):", markup=False, highlight=False)
                shown = sample.get("output", sample.get("document"))
                out.print(shown if isinstance(shown, str) else json.dumps(shown, indent=2, ensure_ascii=False),
                          markup=False, highlight=False)
                for attempt, text in enumerate(sample.get("model_said") or [], start=1):
                    clipped = text if len(text) <= 600 else text[:600] + f"… [{len(text) - 600} more characters]"
                    out.print(f"  the model's answer, attempt {attempt}: {clipped}", markup=False, highlight=False)
