"""``kbgraph bench write | search | concurrent | add``: the write, search, mixed-traffic and add-one-run
benchmarks (:mod:`kbgraph.bench`), each figure next to a baseline measured in the same run."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kbgraph.cli._common import (
    JsonOption,
    NamespaceOption,
    _open,
    _print_json,
    _progress,
    _settings,
    add_commands,
    err,
    out,
)
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.progress import stage_reporter
from kbgraph.core.terminal import plain


def register(bench_app: typer.Typer) -> None:
    add_commands(bench_app, {"write": bench_write, "search": bench_search, "concurrent": bench_concurrent,
                             "add": bench_add})


def bench_write(
    experiences: Annotated[list[int] | None, typer.Option("--experiences", "-e", help="Sizes to write (repeatable)")] = None,
    steps: Annotated[int, typer.Option(help="Steps per experience")] = 8,
    baseline_sample: Annotated[int, typer.Option(help="Experiences the per-transaction baseline writes")] = 200,
    as_json: JsonOption = False,
) -> None:
    """Write throughput (nodes/s) of the batched writer vs one transaction per experience."""
    from kbgraph.bench.write import run_write_benchmark

    sizes = experiences or [1000, 10000]
    problems = [f"--experiences {size}: must be between 1 and 1000000" for size in sizes if not 1 <= size <= 1_000_000]
    if not 1 <= steps <= 100:
        problems.append(f"--steps {steps}: must be between 1 and 100")
    if not 1 <= baseline_sample <= 100_000:
        problems.append(f"--baseline-sample {baseline_sample}: must be between 1 and 100000")
    if problems:  # before connecting: a typo fails at once
        raise InvalidInputError(problems)
    with _open("bench-write") as kb, _progress() as progress:
        on_progress = stage_reporter(progress)

        result = run_write_benchmark(kb, sizes, steps=steps, baseline_sample=baseline_sample, on_progress=on_progress)
    if as_json:
        _print_json(result)
        return
    table = Table("writer", "experiences", "nodes", "seconds", "nodes/s", "experiences/s", "rewrite s")
    for row in result["kbgraph"]:
        table.add_row(f"kbgraph (UNWIND, batch {result['batch_size']})", f"{row['experiences']:,}",
                      f"{row['nodes']:,}", str(row["write_s"]), f"{row['nodes_per_s']:,}",
                      str(row["experiences_per_s"]), str(row["rewrite_s"]))
    b = result["baseline"]
    table.add_row("baseline (1 tx / experience)", f"{b['experiences']:,}", f"{b['nodes']:,}", str(b["write_s"]),
                  f"{b['nodes_per_s']:,}", str(b["experiences_per_s"]), "—")
    out.print(table)


def bench_search(
    sizes: Annotated[list[int] | None, typer.Option(
        "--size", "-s", help="KB sizes in experiences (repeatable); 0 = the namespace as it is. Sizes above 0 "
                             "are scaled up from the source namespace into bench-scaled-<size>")] = None,
    queries: Annotated[int, typer.Option("--queries", "-q", help="Random queries per size")] = 300,
    k: Annotated[int, typer.Option("--k", "-k", help="Results per search")] = 5,
    namespace: NamespaceOption = None,
    corpus: Annotated[Path, typer.Option(
        "--corpus", help="Trajectories ingested into the source namespace first when it is empty")] = Path("../shared/data/trajectories"),
    as_json: JsonOption = False,
) -> None:
    """Student-search latency (p50/p95/p99, embedding excluded) next to exact brute-force cosine."""
    from kbgraph.bench.search import bench_search_cli

    if not 1 <= queries <= 100_000:
        raise InvalidInputError([f"--queries {queries}: must be between 1 and 100000"])
    with _open(namespace) as kb:
        source = kb.namespace
        if kb.count() == 0:
            files = sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else []
            if not files:
                raise InvalidInputError([f"namespace {source!r} is empty and --corpus {corpus} has no .jsonl files to ingest"])
            err.print(f"ingesting {len(files)} files from {corpus} into namespace {source!r} first…")
            kb.ingest(files)
    code = bench_search_cli(sizes or [0], queries, k, as_json, out, err, source=source, namespace=source)
    if code:
        raise typer.Exit(code)


def bench_concurrent(
    clients: Annotated[list[int] | None, typer.Option(
        "--clients", "-c", help="Client threads per round (repeatable)")] = None,
    seconds: Annotated[float, typer.Option("--seconds", help="Duration of each round")] = 30.0,
    write_share: Annotated[float, typer.Option("--write-share", help="Share of operations that add one run")] = 0.1,
    processes: Annotated[int, typer.Option(
        "--processes", help="Worker processes a round's client threads are spread over (1: all in this process)")] = 1,
    namespace: NamespaceOption = None,
    corpus: Annotated[Path, typer.Option(
        "--corpus", help="Trajectories: ingested first when the namespace is empty, and the pool of runs added")]
        = Path("../shared/data/trajectories"),
    as_json: JsonOption = False,
) -> None:
    """Many agents at once: 90 % searches and 10 % runs added, with 1, 4 and 8 client threads; QPS and p50/p95 per operation."""
    from kbgraph.bench.concurrent import load_runs, run_concurrent_benchmark
    from kbgraph.bench.cpu import managed_server_pid

    rounds = clients or [1, 4, 8]
    problems = [f"--clients {n}: must be between 1 and 256" for n in rounds if not 1 <= n <= 256]
    if not 1.0 <= seconds <= 3600.0:
        problems.append(f"--seconds {seconds}: must be between 1 and 3600")
    if not 0.0 <= write_share <= 1.0:
        problems.append(f"--write-share {write_share}: must be between 0 and 1")
    if not 1 <= processes <= 64:
        problems.append(f"--processes {processes}: must be between 1 and 64")
    files = sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else []
    if not files:
        problems.append(f"--corpus {corpus}: no .jsonl files (the runs to add come from there)")
    if problems:
        raise InvalidInputError(problems)
    with _open(namespace or "bench-concurrent") as kb, _progress() as progress:
        if kb.count() == 0:
            err.print(f"ingesting {len(files)} files from {corpus} into namespace {kb.namespace!r} first…")
            kb.ingest(files)
        on_progress = stage_reporter(progress)

        report = run_concurrent_benchmark(kb, load_runs(files), rounds, seconds, write_share, on_progress=on_progress,
                                          server_pid=managed_server_pid(kb.settings), processes=processes)
    if as_json:
        _print_json(report)
        return
    table = Table(title=f"mixed traffic on namespace {report['namespace']!r} ({report['experiences']:,} experiences, "
                        f"{report['write_share']:.0%} add one run), latencies in ms")
    for column in ("clients", "QPS", "search QPS", "search p50", "search p95", "add-run QPS", "add-run p50",
                   "add-run p95", "adds a commit", "CPU an op, client · server", "errors"):
        table.add_column(column, justify="right")
    for r in report["rounds"]:
        cpu = r["cpu_per_operation_ms"]
        shown = str(r["clients"]) + (f" ({r['processes']} processes)" if r["processes"] > 1 else "")
        table.add_row(shown, f"{r['qps']:.1f}", f"{r['search_qps']:.1f}", f"{r['search']['p50']:.1f}",
                      f"{r['search']['p95']:.1f}", f"{r['add_run_qps']:.2f}", f"{r['add_run']['p50']:.0f}",
                      f"{r['add_run']['p95']:.0f}", f"{r['adds_per_commit']:.2f}" if "adds_per_commit" in r else "—",
                      f"{cpu['client_ms']:.1f} · {'—' if cpu['server_ms'] is None else format(cpu['server_ms'], '.1f')}",
                      str(sum(r["errors"].values())))
    out.print(table)
    for r in report["rounds"]:
        for message, count in r["errors"].items():
            err.print(f"{r['clients']} clients: {count} × {plain(message)}")
    out.print(f"load average before {report['load_average_before']}, after {report['load_average_after']}")


def bench_add(
    namespaces: Annotated[list[str] | None, typer.Option(
        "--namespace", "-n", help="Namespaces to add runs to (repeatable) [default: settings]")] = None,
    runs: Annotated[int, typer.Option("--runs", help="Runs added by each path, per namespace")] = 10,
    corpus: Annotated[Path, typer.Option(
        "--corpus", help="Trajectories (a .jsonl file or a folder of them): the pool of runs added")]
        = Path("../shared/data/real_runs"),
    seed: Annotated[int | None, typer.Option("--seed", help="Order of the runs added [default: a new one, printed]")]
        = None,
    as_json: JsonOption = False,
) -> None:
    """What adding one run costs in a long-lived process: incremental next to from scratch (the
    path a process's first ingest takes), alternating, embedding excluded; p50/p95 per namespace."""
    from kbgraph.bench.add import run_add_benchmark
    from kbgraph.bench.concurrent import load_runs

    problems = [] if 1 <= runs <= 1000 else [f"--runs {runs}: must be between 1 and 1000"]
    files = sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else [corpus] if corpus.is_file() else []
    if not files:
        problems.append(f"--corpus {corpus}: no .jsonl files (the runs to add come from there)")
    for name in namespaces or []:
        _settings(name)  # a blank or invalid namespace fails here, before connecting
    if problems:
        raise InvalidInputError(problems)
    with _progress() as progress:
        report_stage = stage_reporter(progress)

        def on_progress(namespace: str, done: int, total: int) -> None:
            report_stage(f"add runs to {namespace}", done, total)

        report = run_add_benchmark(_open, namespaces or [_settings().namespace], load_runs(files, limit=100_000), runs,
                                   secrets.randbelow(1_000_000) if seed is None else seed, on_progress)
    if as_json:
        _print_json(report)
        return
    table = Table(title=f"add one run (kb.add_trajectories, warm process, embedding excluded), {runs} runs per path, ms")
    for column in ("namespace", "experiences", "incremental p50", "p95", "from scratch p50", "p95", "speed-up",
                   "first add"):
        table.add_column(column, justify="right")
    for r in report["namespaces"]:
        table.add_row(plain(r["namespace"]), f"{r['experiences']:,}", f"{r['incremental']['p50']:.0f}",
                      f"{r['incremental']['p95']:.0f}", f"{r['from_scratch']['p50']:.0f}",
                      f"{r['from_scratch']['p95']:.0f}", f"{r['speedup_p50']}x", f"{r['first_add_ms']:.0f}")
    out.print(table)
    for r in report["namespaces"]:
        stages = ", ".join(f"{k} {v:.0f}" for k, v in r["incremental"]["stages_p50_ms"].items())
        out.print(f"{plain(r['namespace'])}: incremental stages p50 (ms): {stages}; new experiences "
                  f"{r['incremental']['new_experiences']} of {runs} incremental adds, "
                  f"{r['from_scratch']['new_experiences']} of {runs} from scratch (the others extended a stored one)")
        for path in ("incremental", "from_scratch"):
            if r[path]["with_maintenance_ms"]:
                out.print(f"  {path}: {len(r[path]['with_maintenance_ms'])} add(s) also ran the automatic maintenance "
                          f"of a growth checkpoint (left out above): {r[path]['with_maintenance_ms']} ms")
    out.print(f"runs in the order of --seed {report['seed']}")
    out.print(f"load average before {report['load_average_before']}, after {report['load_average_after']}")
