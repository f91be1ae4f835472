"""``kbgraph bench online``: every figure of the online-scale table in one run (see
:mod:`kbgraph.bench.online`), each next to its baseline and its target."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kbgraph.bench.add import DEFAULT_ADDS
from kbgraph.bench.online import DEFAULT_PREFIX, DEFAULT_SIZES, online_namespace, run_online_benchmark
from kbgraph.cli._common import _open, _print_json, _progress, _settings, add_commands, out
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.extras import require
from kbgraph.core.progress import stage_reporter

DEFAULT_DATA = Path("../shared/data")


def register(bench_app: typer.Typer) -> None:
    add_commands(bench_app, {"online": bench_online})


def _write_json(path: Path, report: dict[str, Any]) -> None:
    """Replaces ``path`` whole (written beside it, then renamed): never half a report."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _jsonl_files(folder: Path, option: str, problems: list[str]) -> list[Path]:
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else [folder] if folder.is_file() else []
    if not files:
        problems.append(f"{option} {folder}: no .jsonl files")
    return files


def bench_online(
    sizes: Annotated[list[int] | None, typer.Option(
        "--size", "-s", help="Scaled KB sizes, in experiences (repeatable) [default: 1000, 10000, 100000]")] = None,
    data: Annotated[Path, typer.Option(
        "--data", help="The shared data folder: trajectories/ (ingested, then scaled), real_runs/ (the runs "
                       "added), eval/ (the queries)")] = DEFAULT_DATA,
    queries: Annotated[int, typer.Option("--queries", "-q", help="Search queries per size")] = 200,
    adds: Annotated[int, typer.Option("--adds", help="Runs added incrementally per size")] = DEFAULT_ADDS,
    scratch_adds: Annotated[int, typer.Option(
        "--scratch-adds", help="Runs added from scratch per size (the baseline; each reads the whole namespace)")] = 3,
    concurrent_sizes: Annotated[list[int] | None, typer.Option(
        "--traffic-at", help="Sizes that also get the mixed-traffic rounds (repeatable) [default: 10000]")] = None,
    clients: Annotated[list[int] | None, typer.Option(
        "--clients", "-c", help="Client threads per mixed-traffic round (repeatable) [default: 1, 4, 8]")] = None,
    seconds: Annotated[float, typer.Option("--seconds", help="Duration of each mixed-traffic round")] = 15.0,
    processes: Annotated[int, typer.Option(
        "--processes", help="Worker processes each mixed-traffic round's clients are spread over (1: threads of "
                            "this process, the figure the targets are for)")] = 1,
    keep: Annotated[bool, typer.Option("--keep", help="Leave the benchmark namespaces in place afterwards")] = False,
    prefix: Annotated[str, typer.Option(
        "--prefix", help="Namespaces used: <prefix>-ingest and <prefix>-<size>, cleared first")] = DEFAULT_PREFIX,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the scaled KBs, queries and runs")] = 0,
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="Also write the JSON report to FILE, updated after each size (a stopped run keeps what it "
                      "measured)")] = None,
    settle: Annotated[float, typer.Option(
        "--settle", help="Longest wait, in seconds, for a quiet machine before the warm ingest and each size's "
                         "search (a local Neo4j merges index segments after a build), proportionally longer for "
                         "sizes over 20,000 (600 s at 100,000); 0 measures at once")] = 120.0,
    warmup: Annotated[float, typer.Option(
        "--warmup", help="Seconds of mixed traffic before the measured rounds, reported beside them and not "
                         "counted (a server meets the statements of mixed traffic there first); 0: none")] = 15.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print everything as JSON")] = False,
) -> None:
    """Online memory at scale, every figure in one run: batch ingest, then per size the scaled
    KB's build, search next to exact cosine, add one run next to from scratch, and mixed traffic;
    each figure with its baseline and target. Namespaces bench-online-*, cleared first and after."""
    require("psutil", "bench", "kbgraph bench online")
    chosen = sorted(set(sizes or DEFAULT_SIZES))
    traffic = set(concurrent_sizes if concurrent_sizes is not None else [10_000])
    problems = [f"--size {n}: must be between 100 and 1000000" for n in chosen if not 100 <= n <= 1_000_000]
    problems += [f"--traffic-at {n}: not one of the sizes measured" for n in sorted(traffic) if n not in chosen
                 and concurrent_sizes is not None]
    for name, value, low, high in (("--queries", queries, 1, 100_000), ("--adds", adds, 1, 1000),
                                   ("--scratch-adds", scratch_adds, 0, 1000)):
        if not low <= value <= high:
            problems.append(f"{name} {value}: must be between {low} and {high}")
    problems += [f"--clients {n}: must be between 1 and 256" for n in clients or [] if not 1 <= n <= 256]
    if not 1.0 <= seconds <= 3600.0:
        problems.append(f"--seconds {seconds}: must be between 1 and 3600")
    if not 1 <= processes <= 64:
        problems.append(f"--processes {processes}: must be between 1 and 64")
    if not 0.0 <= settle <= 3600.0:
        problems.append(f"--settle {settle}: must be between 0 and 3600")
    if not 0.0 <= warmup <= 3600.0:
        problems.append(f"--warmup {warmup}: must be between 0 and 3600")
    trajectories = _jsonl_files(data / "trajectories", "--data", problems)
    runs = _jsonl_files(data / "real_runs", "--data", problems)
    if not (data / "eval").is_dir():
        problems.append(f"--data {data}: no eval/ folder (the benchmark queries)")
    if out_file is not None and not (out_file.parent.is_dir() and os.access(out_file.parent, os.W_OK)):
        problems.append(f"--out {out_file}: folder {out_file.parent} is missing or not writable")
    _settings(online_namespace("ingest", prefix))  # a prefix no namespace may have fails here, before connecting
    if problems:
        raise InvalidInputError(problems)
    with _progress() as progress:
        on_progress = stage_reporter(progress)

        report = run_online_benchmark(
            _open, trajectories, runs, data / "eval", sizes=chosen, queries=queries, adds=adds,
            scratch_adds=scratch_adds, concurrent_sizes=sorted(traffic), clients=clients or [1, 4, 8],
            seconds=seconds, seed=seed, keep=keep, prefix=prefix, on_progress=on_progress,
            on_partial=None if out_file is None else partial(_write_json, out_file), settle_s=settle,
            processes=processes, warmup_s=warmup)
    if as_json:
        _print_json(report)
        return
    table = Table("figure", "measured", "baseline (same run)", "target", "met",
                  title=f"online memory at scale: namespaces "
                        f"{', '.join(online_namespace(n, prefix) for n in ('ingest', *map(str, chosen)))}")
    for row in report["figures"]:
        met = {True: "yes", False: "no", None: ""}[row["met"]]
        table.add_row(row["figure"], row["measured"], row["baseline"], row["target"], met)
    out.print(table)
    for size in report["sizes"]:
        search = size["search"]
        stages = ", ".join(f"{k} {v:.1f}" for k, v in search["stages_p50_ms"].items())
        add_stages = ", ".join(f"{k} {v:.0f}" for k, v in size["add"]["incremental"]["stages_p50_ms"].items())
        out.print(f"{size['size']:,}: search stages p50 (ms) {stages}; database {search['database']['experiences']:,} "
                  f"experiences; add one run stages p50 (ms) {add_stages}")
    out.print(f"{report['seconds']:.0f} s in all; load average before {report['load_average_before']}, "
              f"after {report['load_average_after']}")
