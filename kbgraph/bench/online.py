"""Online memory at scale, every figure in one run (``kbgraph bench online``).

One run measures what an agent memory costs when it is written after every task and read before
every task, at several sizes, each figure next to its baseline from the same run and to the target
it is held to (:data:`TARGETS`):

1. **batch ingest** — the shared trajectory files are ingested into a fresh namespace
   (``bench-online-ingest``; the prefix is a parameter) twice: the first pass fills the embedding cache if it is cold, the
   namespace is cleared and the second pass is timed (warm cache: the memory's cost, not MiniLM's).
   That namespace's active experiences then seed the scaled KBs, so a run needs nothing but the
   data folder.
2. **per size** N (default 1,000, 10,000 and 100,000), in namespace ``bench-online-<N>``, cleared
   first:

   a. *build* the scaled KB (:mod:`kbgraph.bench.scale`: ~8 steps per experience, the seed graph's
      relations mirrored) through ``add_experiences``, timed;
   b. *search* (:func:`~kbgraph.bench.search.run_search_benchmark`): random benchmark queries,
      embedding excluded, next to an exact numpy cosine over the same vectors; queries with
      executed steps apart; the CPU per search (client and managed server, which a shared
      machine's load does not move as it moves latency) and the query embedding of each MiniLM
      runtime beside it;
   b'. *the teacher* (:func:`~kbgraph.bench.refine.run_refine_benchmark`): ``kb.refine`` of ten
      failed steps like the benchmark's (each the last executed step of a query), one at a time,
      on the same state (a refine writes nothing), and a process's first refine apart;
   c. *add one run* (:func:`~kbgraph.bench.add.bench_one_namespace`): ``kb.add_trajectories`` of
      one real run at a time in a long-lived process, incremental next to from scratch (the
      full-recompute path), embedding excluded;
   d. *mixed traffic* at the sizes in ``concurrent_sizes`` (default 10,000):
      :func:`~kbgraph.bench.concurrent.run_concurrent_benchmark`, 90 % searches and 10 % added runs
      from 1, 4 and 8 client threads; after the add of every traffic run that sets the round up,
      the machine is waited for as before search (the server merges that add's index segments);
   e. the namespace is cleared afterwards (``keep`` leaves it), so the next size's database-wide
      vector indexes do not carry this one's entries.

Search runs right after the build, before anything is added: its namespace is the scaled KB
exactly. It waits first until the machine is quiet (:func:`wait_for_quiet_machine`: a local Neo4j
merges its new index segments for a minute or more after a build, ~6 minutes after 100,000), as
the warm batch ingest does after its clear; the waits are in the report (``settled_…_s``). The
sizes share one server with whatever other namespaces it holds; each search result records the
database's size beside the namespace's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from kbgraph.bench.add import DEFAULT_ADDS, bench_one_namespace
from kbgraph.bench.concurrent import load_runs, run_concurrent_benchmark
from kbgraph.bench.scale import build_scaled_kb, load_seeds
from kbgraph.bench.cpu import managed_server_pid
from kbgraph.bench.figures import Figure, ms_text, p50_p95_text
from kbgraph.bench.refine import run_refine_benchmark
from kbgraph.bench.search import growth_per_doubling, run_search_benchmark
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.extras import require
from kbgraph.kb import KnowledgeBase
from kbgraph.core.progress import StageReporter, with_prefix

__all__ = [
    "DEFAULT_SIZES",
    "DEFAULT_PREFIX",
    "TARGETS",
    "Targets",
    "Figure",
    "online_figures",
    "online_namespace",
    "run_online_benchmark",
    "wait_for_quiet_machine",
]

DEFAULT_SIZES = (1_000, 10_000, 100_000)
DEFAULT_PREFIX = "bench-online"
@dataclass(frozen=True)
class Targets:
    """The issues' targets: issue 13's ("Online memory at 100k experiences"), those of them issue 53
    ("Search, add and build close to the floor") tightened, and its CPU a search."""

    add_p50_ms: float = 100.0  # at every size (issue 13: 150; issue 53: 100 at 100,000)
    add_growth_per_doubling: float = 1.10
    ingest_per_s: float = 400.0
    build_100k_s: float = 300.0
    search_10k_ms: tuple[float, float] = (10.0, 30.0)  # p50, p95 (issue 13: 15, 40)
    search_100k_ms: tuple[float, float] = (20.0, 50.0)  # (issue 13: 25, 60)
    cpu_per_search_10k_ms: float = 15.0  # the client's and the managed server's
    steps_p95_10k_ms: float = 60.0
    qps_8_clients_10k: float = 60.0  # an aim


TARGETS = Targets()

#: (stage label, done, total)
OnlineProgress = StageReporter
KbOpener = Callable[[str], KnowledgeBase]


def online_namespace(size: int | str, prefix: str = DEFAULT_PREFIX) -> str:
    """``<prefix>-<size>`` for a scaled KB, ``<prefix>-ingest`` for the batch ingest."""
    return f"{prefix}-{size}"


def _ingest_figures(ingest: dict[str, Any] | None) -> list[Figure]:
    if ingest is None:
        return []
    warm = ingest["warm"]
    return [Figure(
        f"batch ingest, {warm['trajectories']:,} trajectories, warm cache",
        f"{warm['per_s']:.0f} /s ({warm['seconds']:.2f} s)",
        f"first pass {ingest['first']['per_s']:.0f} /s (cache as found)",
        f"≥ {TARGETS.ingest_per_s:.0f} /s", warm["per_s"] >= TARGETS.ingest_per_s)]


def _size_figures(size: dict[str, Any]) -> list[Figure]:
    n = size["size"]
    rows: list[Figure] = []
    build = size["build"]
    rows.append(Figure(
        f"build the {n:,} scaled KB ({build['steps']:,} steps)", f"{build['seconds']:.1f} s ({build['per_s']:.0f} /s)",
        "—", f"≤ {TARGETS.build_100k_s:.0f} s" if n == 100_000 else "—",
        build["seconds"] <= TARGETS.build_100k_s if n == 100_000 else None))
    search = size["search"]
    if search.get("step_texts") is not None:
        rows.append(Figure(
            f"step index at {n:,}: vectors · distinct step texts",
            f"{search.get('step_vectors', search['steps']):,} · {search['step_texts']:,}",
            "one vector per step", "one per text",
            search["step_vectors"] == search["step_texts"] if "step_vectors" in search else None))
    limits = {10_000: TARGETS.search_10k_ms, 100_000: TARGETS.search_100k_ms}.get(n)
    # The first pass, then the same queries once the kept state is current and in a process that warmed first.
    for label, part in (("", search), (", kept state current", search.get("settled")),
                        (", a process warmed first", search.get("warmed"))):
        if part is None:
            continue
        ms = part["kbgraph_ms"]
        rows.append(Figure(
            f"search p50 · p95 at {n:,}{label}" + (f" (warm {part['warm_s']:.1f} s)" if "warm_s" in part else ""),
            p50_p95_text(ms), f"exact cosine {p50_p95_text(part['brute_force_ms'])}",
            f"≤ {limits[0]:.0f} · ≤ {limits[1]:.0f} ms" if limits else "—",
            (ms["p50"] <= limits[0] and ms["p95"] <= limits[1]) if limits else None))
    cpu = search.get("cpu_per_search_ms")
    if cpu is not None:
        server = "—" if cpu["server_ms"] is None else f"{ms_text(cpu['server_ms'])} ms"
        # Held to its target where the server's CPU is seen (a managed server) at the size it names.
        held = n == 10_000 and cpu["server_ms"] is not None
        rows.append(Figure(
            f"CPU per search at {n:,}: client · server", f"{ms_text(cpu['client_ms'])} · {server}",
            f"latency p50 {ms_text(search['kbgraph_ms']['p50'])} ms",
            f"≤ {TARGETS.cpu_per_search_10k_ms:.0f} ms (both)" if held else "report",
            cpu["client_ms"] + cpu["server_ms"] <= TARGETS.cpu_per_search_10k_ms if held else None))
    embedding, other = search.get("embedding_ms"), search.get("embedding_other_runtime_ms")
    if embedding is not None:
        rows.append(Figure(
            f"query embedding p50 at {n:,} ({embedding.get('runtime', embedding['model'])})",
            f"{ms_text(embedding['p50'])} ms",
            f"{other['runtime']} {ms_text(other['p50'])} ms (cosine ≥ {other['cosine_min']})" if other else "—",
            "report", None))
    by_query = search["kbgraph_by_query_ms"]
    rows.append(Figure(
        f"queries with executed steps, p95 at {n:,}", f"{ms_text(by_query['with_steps']['p95'])} ms",
        f"task-only {ms_text(by_query['task_only']['p95'])} ms",
        f"≤ {TARGETS.steps_p95_10k_ms:.0f} ms" if n == 10_000 else "—",
        by_query["with_steps"]["p95"] <= TARGETS.steps_p95_10k_ms if n == 10_000 else None))
    refine = size.get("refine")
    if refine is not None and refine["steps"]:
        rows.append(Figure(
            f"teacher: refine one failed step, p50 · p95 at {n:,} (k {refine['k']})", p50_p95_text(refine["refine_ms"]),
            f"a process's first {ms_text(refine['first_ms'])} ms", "report", None))
    add = size["add"]
    baseline = f"from scratch {p50_p95_text(add['from_scratch'])}" if add["from_scratch"]["n"] else "—"
    rows.append(Figure(
        f"add one run p50 · p95 at {n:,}", p50_p95_text(add["incremental"]), baseline,
        f"≤ {TARGETS.add_p50_ms:.0f} ms (p50)", add["incremental"]["p50"] <= TARGETS.add_p50_ms))
    # The round that met the traffic first, not counted (run_concurrent_benchmark's warmup_seconds).
    warmup = (size.get("concurrent") or {}).get("warmup_round")
    warmup_shown = f"warm-up round first: {warmup['qps']:.1f} ({warmup['clients']} clients)" if warmup else "—"
    for round_ in (size.get("concurrent") or {}).get("rounds", []):
        clients, processes = round_["clients"], round_.get("processes", 1)
        # The aim is for 8 client threads of one process; over processes it is reported.
        aim = n == 10_000 and clients == 8 and processes == 1
        spread = f" in {processes} processes" if processes > 1 else ""
        rows.append(Figure(
            f"mixed traffic QPS, {clients} client{'s' if clients != 1 else ''}{spread} at {n:,}",
            f"{round_['qps']:.1f} (search p95 {ms_text(round_['search']['p95'])} ms)",
            warmup_shown, f"aim ≥ {TARGETS.qps_8_clients_10k:.0f}" if aim else "report",
            round_["qps"] >= TARGETS.qps_8_clients_10k if aim else None))
        cpu = round_.get("cpu_per_operation_ms")
        if cpu is not None:
            server = "—" if cpu["server_ms"] is None else f"{ms_text(cpu['server_ms'])} ms"
            rows.append(Figure("CPU an operation in that mix, client · server", f"{ms_text(cpu['client_ms'])} · {server}",
                               "—", "report", None))
    return rows


def _growth_figure(sizes: Sequence[dict[str, Any]]) -> list[Figure]:
    ordered = sorted(sizes, key=lambda s: int(s["size"]))
    if len(ordered) < 2:
        return []
    first, last = ordered[0], ordered[-1]
    growth = growth_per_doubling((first["size"], first["add"]["incremental"]["p50"]),
                                 (last["size"], last["add"]["incremental"]["p50"]))
    scratch = growth_per_doubling((first["size"], first["add"]["from_scratch"]["p50"]),
                                  (last["size"], last["add"]["from_scratch"]["p50"]))
    return [Figure(
        f"add one run, growth per doubling {first['size']:,} → {last['size']:,}",
        f"×{growth:.3f}" if growth is not None else "—", f"from scratch ×{scratch:.3f}" if scratch is not None else "—",
        f"≤ ×{TARGETS.add_growth_per_doubling:.2f}",
        growth <= TARGETS.add_growth_per_doubling if growth is not None else None)]


def online_figures(report: dict[str, Any]) -> list[Figure]:
    """The table's rows from a :func:`run_online_benchmark` report (pure)."""
    rows = _ingest_figures(report.get("ingest"))
    for size in report["sizes"]:
        rows += _size_figures(size)
    return rows + _growth_figure(report["sizes"])


def wait_for_quiet_machine(limit_s: float = 120.0, busy_percent: float = 25.0, quiet_seconds: int = 3) -> float:
    """Seconds waited until this machine's CPU use (all cores, 0–100) stayed under
    ``busy_percent`` for ``quiet_seconds`` seconds in a row, giving up after ``limit_s``.

    After a build or a clear, a local Neo4j goes on merging its vector index segments for a minute
    or more, on the cores the next measurement needs: a search measured meanwhile measures that
    (at 10,000 a query with executed steps then took up to 158 ms instead of ~70). A server on
    another machine does not show here, and nothing is waited for."""
    psutil = require("psutil", "bench", "waiting for a quiet machine")
    started = time.perf_counter()
    calm = 0
    while calm < quiet_seconds and time.perf_counter() - started < limit_s:
        calm = calm + 1 if psutil.cpu_percent(interval=1.0) < busy_percent else 0
    return round(time.perf_counter() - started, 1)


#: A build this size or smaller is waited for ``settle_s`` at most; a larger one proportionally
#: longer: after building 100,000 experiences, Neo4j merged index segments for ~6 minutes.
SETTLE_SIZE = 20_000


def search_settle_s(settle_s: float, size: int) -> float:
    """The longest wait for a quiet machine before searching a scaled KB of ``size`` just built."""
    return settle_s * max(1.0, size / SETTLE_SIZE)


def _clear(kb: KnowledgeBase) -> float:
    started = time.perf_counter()
    kb.clear()
    return round(time.perf_counter() - started, 2)


def _ingest_pass(kb: KnowledgeBase, files: Sequence[Path], on_progress: StageReporter) -> dict[str, Any]:
    report = kb.ingest(list(files), on_progress=on_progress)
    trajectories = report.records_read - report.records_rejected
    return {"trajectories": trajectories, "seconds": report.total_seconds, "per_s": report.trajectories_per_second,
            "experiences": report.experiences_new, "stage_seconds": report.stage_seconds,
            "embedding_cache_misses": report.embedding_cache_misses}


def run_batch_ingest(kb: KnowledgeBase, files: Sequence[Path], on_progress: OnlineProgress | None = None,
                     settle_s: float = 120.0) -> dict[str, Any]:
    """Two ingests of ``files`` into ``kb``'s namespace, cleared before each; the second is warm,
    once the machine is quiet (waiting ``settle_s`` at most)."""
    _clear(kb)
    first = _ingest_pass(kb, files, with_prefix(on_progress, "ingest, first pass"))
    _clear(kb)
    settled = wait_for_quiet_machine(settle_s)
    warm = _ingest_pass(kb, files, with_prefix(on_progress, "ingest, warm pass"))
    return {"namespace": kb.namespace, "files": [str(f) for f in files], "first": first, "warm": warm,
            "settled_before_warm_s": settled}


def _one_size(kb: KnowledgeBase, size: int, seeds: Sequence[Any], *, queries: int, adds: int, scratch_adds: int,
              runs: Sequence[dict[str, Any]], traffic_runs: list[dict[str, Any]], concurrent: bool,
              clients: Sequence[int], seconds: float, eval_dir: Path, seed: int, keep: bool,
              on_progress: OnlineProgress | None, settle_s: float, processes: int = 1,
              warmup_s: float = 0.0) -> dict[str, Any]:
    label = f"{size:,}"
    cleared_before = _clear(kb)
    build = build_scaled_kb(kb, seeds, size, seed=seed, on_progress=with_prefix(on_progress, f"{label}: build"))
    result: dict[str, Any] = {
        "size": size, "namespace": kb.namespace, "cleared_before_s": cleared_before,
        "build": {**build.as_dict(), "per_s": round(build.written / build.seconds, 1) if build.seconds else 0.0},
    }
    # Search right after the build (its namespace is the scaled KB exactly), once Neo4j's
    # background work on the new segments is done.
    result["settled_before_search_s"] = wait_for_quiet_machine(search_settle_s(settle_s, size))
    result["search"] = run_search_benchmark(kb, queries, seed=seed, eval_dir=eval_dir,
                                            on_progress=with_prefix(on_progress, f"{label}: search"),
                                            server_pid=managed_server_pid(kb.settings))

    # The teacher on the same state (a refine writes nothing).
    result["refine"] = run_refine_benchmark(kb, eval_dir, seed=seed, on_progress=with_prefix(on_progress, f"{label}: refine"))
    add_stage = with_prefix(on_progress, f"{label}: add one run")

    def add_progress(_namespace: str, done: int, total: int) -> None:
        add_stage("runs", done, total)

    result["add"] = bench_one_namespace(kb, runs, adds, add_progress, scratch_count=scratch_adds)
    if concurrent:
        traffic_stage = with_prefix(on_progress, f"{label}: mixed traffic")

        def traffic_progress(round_label: str, done: float, total: float) -> None:
            traffic_stage(f"{round_label} (s)", int(done), int(total))

        result["concurrent"] = run_concurrent_benchmark(kb, traffic_runs, clients, seconds, eval_dir=eval_dir,
                                                        seed=seed, on_progress=traffic_progress,
                                                        server_pid=managed_server_pid(kb.settings), processes=processes,
                                                        settle=lambda: wait_for_quiet_machine(settle_s),
                                                        warmup_seconds=warmup_s)
    result["cleared_after_s"] = None if keep else _clear(kb)
    return result


def run_online_benchmark(
    open_kb: KbOpener,
    trajectory_files: Sequence[Path],
    run_files: Sequence[Path],
    eval_dir: Path,
    sizes: Sequence[int] = DEFAULT_SIZES,
    queries: int = 200,
    adds: int = DEFAULT_ADDS,
    scratch_adds: int = 3,
    concurrent_sizes: Sequence[int] = (10_000,),
    clients: Sequence[int] = (1, 4, 8),
    seconds: float = 15.0,
    seed: int = 0,
    keep: bool = False,
    prefix: str = DEFAULT_PREFIX,
    on_progress: OnlineProgress | None = None,
    on_partial: Callable[[dict[str, Any]], None] | None = None,
    settle_s: float = 120.0,
    processes: int = 1,
    warmup_s: float = 15.0,
) -> dict[str, Any]:
    """Every figure of the online-scale table (see the module docstring); JSON-ready, with the
    table's rows under ``figures``. ``open_kb(namespace)`` opens a KnowledgeBase. ``on_partial``
    gets the report so far after the ingest and after each size (``complete`` false until the
    end), so a run stopped at 100,000 keeps what it measured before. ``settle_s``: the longest
    wait for a quiet machine before the warm ingest and each size's search (0: none).
    ``processes``: the worker processes the mixed rounds' clients are spread over (1: threads of
    this process, the issue's figure; kbgraph.bench.concurrent_processes). ``warmup_s``: a round of
    traffic before the mixed rounds, reported beside them and not among them (0: none;
    kbgraph.bench.concurrent.run_concurrent_benchmark says why)."""
    problems = [f"size {n}: must be between 100 and 1,000,000 experiences" for n in sizes if not 100 <= n <= 1_000_000]
    if not trajectory_files:
        problems.append("no trajectory files to ingest and scale from")
    if not run_files:
        problems.append("no real-run files to add runs from")
    if problems:
        raise InvalidInputError(problems)
    started = time.perf_counter()
    load_before = os.getloadavg()
    with open_kb(online_namespace("ingest", prefix)) as kb:
        ingest = run_batch_ingest(kb, trajectory_files, on_progress, settle_s)
        seeds = load_seeds(kb.gateway, kb.namespace)
        if not keep:
            _clear(kb)
    if not seeds:
        raise InvalidInputError([f"{', '.join(map(str, trajectory_files))}: no active experiences to scale from"])
    runs = load_runs(list(run_files), limit=100_000, seed=seed)
    traffic_runs = load_runs(list(trajectory_files), seed=seed)
    results: list[dict[str, Any]] = []

    def report(complete: bool) -> dict[str, Any]:
        so_far: dict[str, Any] = {
            "complete": complete, "sizes": results, "ingest": ingest, "seeds": len(seeds), "queries": queries,
            "adds": adds, "scratch_adds": scratch_adds, "seed": seed,
            "seconds": round(time.perf_counter() - started, 1),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
        so_far["figures"] = [f.as_dict() for f in online_figures(so_far)]
        return so_far

    if on_partial is not None:
        on_partial(report(complete=False))
    for size in sorted(sizes):
        with open_kb(online_namespace(size, prefix)) as kb:
            results.append(_one_size(
                kb, size, seeds, queries=queries, adds=adds, scratch_adds=scratch_adds, runs=runs,
                traffic_runs=traffic_runs, concurrent=size in concurrent_sizes, clients=clients, seconds=seconds,
                eval_dir=eval_dir, seed=seed, keep=keep, on_progress=on_progress, settle_s=settle_s,
                processes=processes, warmup_s=warmup_s))
        if on_partial is not None:
            on_partial(report(complete=len(results) == len(sizes)))
    return report(complete=True)
