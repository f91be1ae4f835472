"""Search latency: kbgraph's student search next to an exact in-memory brute-force cosine over the
same vectors, measured in the same run (``kbgraph bench search``).

One run over one namespace:

1. picks ``queries`` random queries (seeded) from the retrieval benchmark's query files
   (``retail_queries.jsonl`` with their executed steps, ``webarena_queries.jsonl``), each with its
   domain and leave-one-out ``exclude`` as :mod:`kbgraph.search.eval.evaluate` sends them;
2. embeds them all first, one query per call through the retriever's own query embedding and the
   bare model (no embedding cache), and reports that time apart (p50, p95, mean per query); when
   the model is MiniLM, its other runtime (PyTorch next to ONNX Runtime, or the reverse) embeds
   each query too, alternating which goes first, with the cosine agreement of their vectors;
3. loads every active experience's problem+goal vector of the namespace into a float32 matrix
   (timed apart: the baseline's start-up cost);
4. warms up (``warmup`` searches, not counted), then for every query times
   ``kb.student.search(query, query_vectors=…)`` (wall time around the call, and the retriever's
   own ``timings_ms["retrieval"]``) and, right after it, the brute-force top-k
   (``matrix @ query``, ``argpartition``), so both see the same machine load. The baseline runs
   on one BLAS thread: with more, OpenBLAS's idle threads spin after each product and take the
   cores the Neo4j server being measured needs (on 2 cores that alone made kbgraph's p50 at 10k
   28 ms instead of 19). One thread is also what a single query's product needs. The pass runs
   three times: as a process that just started searching, once its kept state is current
   (``settled``), and in a knowledge base of its own that warmed before its first search
   (``warmed``: :meth:`~kbgraph.search.student.retriever.StudentRetriever.warm`, timed apart as the
   baseline's load is).

Figures: p50/p95/p99/mean for both systems, split by queries with and without executed steps,
CPU per search (the client process's around each search, and the managed Neo4j's over all of them;
:mod:`kbgraph.bench.cpu`),
candidates per search, a per-stage p50/mean breakdown of ``timings_ms``, the namespace's size
and the whole database's (the vector and full-text indexes are database-wide: other namespaces
crowd a namespace's index searches), and the load average before and after.

Scaled namespaces (``bench-scaled-<N>``) are made by :mod:`kbgraph.bench.scale` from the real
experiences of a source namespace (default ``shared``): recombined (problem of one seed, steps of
another of the same domain), perturbed (one step-list edit, one word edit and a ``(variant n)``
suffix, so content ids are new), composed to ~8 steps per experience on average (step lists of
domains that have steps extended with further same-domain step lists; WebArena experiences keep
none, as in the real data), every vector jittered with Gaussian noise of relative norm 0.3 (the
problem+goal vector 0.6, so that copies are not near-duplicates a consolidation would merge) and
re-normalised, and the seed graph's four relations mirrored onto the copies. Deterministic for a
seed, resumable, reused when already built.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits
from rich.console import Console
from rich.table import Table

from kbgraph.bench.figures import growth_per_doubling, growth_rows, percentiles
from kbgraph.bench.cpu import managed_server_pid
from kbgraph.bench.search_pass import STAGES, brute_force, timed_pass, wait_for_kept_state
from kbgraph.bench.scale import ScaleReport, build_scaled_kb, load_seeds, scaled_namespace
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience
from kbgraph.embedders import Embedder, other_minilm_runtime
from kbgraph.core.progress import StageReporter, progress_display, stage_reporter, with_prefix
from kbgraph.search.eval.data import load_queries
from kbgraph.search.eval.evaluate import search_query_for
from kbgraph.search.params import SearchQuery
from kbgraph.search.student import QueryVectors, StudentRetriever

__all__ = [
    "DEFAULT_EVAL_DIR",
    "QUERY_FILES",
    "bench_search_cli",
    "bench_search_command",
    "growth_per_doubling",
    "load_benchmark_queries",
    "load_pg_matrix",
    "percentiles",
    "run_search_benchmark",
]

#: Where the retrieval benchmark's queries live, relative to a checkout (as ``kbgraph eval``).
DEFAULT_EVAL_DIR = Path("../shared/data/eval")
QUERY_FILES = ("retail_queries.jsonl", "webarena_queries.jsonl")
#: (stage, done, total)
BenchProgress = StageReporter


def load_benchmark_queries(eval_dir: Path, count: int, k: int = 5, seed: int = 0) -> list[SearchQuery]:
    """``count`` queries drawn at random (seeded) from the query files of ``eval_dir``; without
    replacement while there are enough, then again from the start."""
    pool = [q for name in QUERY_FILES for q in load_queries(eval_dir / name)]
    rnd = random.Random(seed)
    picked: list[SearchQuery] = []
    while len(picked) < count:
        order = list(range(len(pool)))
        rnd.shuffle(order)
        picked += [search_query_for(pool[i], k) for i in order[: count - len(picked)]]
    return picked


def load_pg_matrix(gateway: Neo4jGateway, namespace: str, page: int = 5000) -> tuple[list[str], npt.NDArray[np.float32]]:
    """Ids and unit-length problem+goal vectors (float32 rows) of the namespace's active experiences."""
    ids: list[str] = []
    rows: list[npt.NDArray[np.float32]] = []
    after = ""
    while True:
        records = gateway.read("bench_pg_vectors_page", kb=namespace, after=after, limit=page)
        if not records:
            break
        ids += [r["id"] for r in records]
        rows.append(np.asarray([r["vector"] for r in records], dtype=np.float32))
        after = records[-1]["id"]
    if not rows:
        return ids, np.zeros((0, 0), dtype=np.float32)
    matrix = np.vstack(rows)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return ids, matrix


def _unit32(vector: Any) -> npt.NDArray[np.float32]:
    v = np.asarray(vector, dtype=np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _runtime(model: Embedder) -> str:
    """``onnx`` or ``torch`` for MiniLM, the embedder's name otherwise."""
    return str(getattr(model, "runtime", model.name))


def _namespace_size(kb: KnowledgeBase) -> dict[str, int]:
    stats = kb.stats()
    relations = sum(stats.relationships.get(t, 0) for t in ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE"))
    # The step index holds one vector per distinct step text (StepText): vectors = distinct texts.
    texts = kb.gateway.read("bench_step_texts", kb=kb.namespace)[0]
    return {"experiences": stats.experiences, "steps": stats.nodes.get("Step", 0),
            "step_texts": int(texts["step_texts"]), "step_vectors": int(texts["step_vectors"]), "relations": relations}


def run_search_benchmark(
    kb: KnowledgeBase,
    queries: int,
    k: int = 5,
    seed: int = 0,
    on_progress: BenchProgress | None = None,
    eval_dir: Path = DEFAULT_EVAL_DIR,
    warmup: int = 20,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """Latency of ``queries`` student searches in ``kb``'s namespace next to brute force (see the
    module docstring). Returns a JSON-ready dict; times in milliseconds unless named ``_s``.
    ``server_pid``: the Neo4j process on this machine whose CPU per search is reported beside the
    client's (:func:`kbgraph.bench.cpu.managed_server_pid`); None leaves the server's out."""
    if queries < 1:
        raise ValueError(f"queries must be at least 1, not {queries}")
    load_before = os.getloadavg()
    picked = load_benchmark_queries(eval_dir, queries, k=k, seed=seed)
    size = _namespace_size(kb)
    database = kb.gateway.read("bench_database_counts")[0]

    # 1. Query embedding, apart: the bare model (a cache would hide it), one query per call; the
    # other MiniLM runtime on the same query right before or after it (alternating).
    model = getattr(kb.embedder, "inner", kb.embedder)
    embedding = StudentRetriever(kb.gateway, model, kb.namespace, kb.student.weights)
    other: Embedder | None = other_minilm_runtime(model, kb.settings.cache_dir)
    other_embedding = StudentRetriever(kb.gateway, other, kb.namespace, kb.student.weights) if other else None
    model.embed(["warm-up"])
    if other is not None:
        other.embed(["warm-up"])
    vectors: list[QueryVectors] = []
    embed_ms: list[float] = []
    other_ms: list[float] = []
    agreement: list[float] = []
    cpu_s = {"ours": 0.0, "other": 0.0}  # CPU time (all threads) of each runtime: what load does not move

    def timed(retriever: StudentRetriever, query: SearchQuery, into: list[float], who: str) -> QueryVectors:
        cpu_started, started = time.process_time(), time.perf_counter()
        embedded = retriever._embed_query(query, kb.student.weights)
        into.append((time.perf_counter() - started) * 1000)
        cpu_s[who] += time.process_time() - cpu_started
        return embedded

    for done, query in enumerate(picked, 1):
        if other_embedding is not None and done % 2 == 0:
            theirs = timed(other_embedding, query, other_ms, "other")
        vectors.append(timed(embedding, query, embed_ms, "ours"))
        if other_embedding is not None and done % 2 == 1:
            theirs = timed(other_embedding, query, other_ms, "other")
        if other_embedding is not None:
            ours = vectors[-1]
            pairs = [(ours["pg"], theirs["pg"]), (ours["task"], theirs["task"]),
                     *zip(ours["steps"], theirs["steps"], strict=True)]
            agreement += [float(np.dot(_unit32(a), _unit32(b))) for a, b in pairs if a is not None and b is not None]
        if on_progress is not None:
            on_progress("embed", done, len(picked))

    # 2. The baseline's matrix, loaded once.
    started = time.perf_counter()
    ids, matrix = load_pg_matrix(kb.gateway, kb.namespace)
    load_s = time.perf_counter() - started
    query_rows = [_unit32(v["pg"]) if v.get("pg") is not None else None for v in vectors]

    # 3. Warm-up, then both systems per query, back to back (kbgraph.bench.search_pass): once as a
    # process that just started searching, once with what it keeps of the namespace current.
    with threadpool_limits(limits=1, user_api="blas"):
        for i in range(min(max(warmup, 0), len(picked))):
            kb.student.search(picked[i], query_vectors=vectors[i])
            row = query_rows[i]
            if row is not None and len(ids):
                brute_force(matrix, row, k)
    first = timed_pass(kb, picked, vectors, query_rows, matrix, k, server_pid, on_progress, "search")
    waited_s = wait_for_kept_state(kb, list(zip(picked, vectors)))
    settled = timed_pass(kb, picked, vectors, query_rows, matrix, k, server_pid, on_progress, "search, kept state current")
    # 4. A process that warms before its first search (StudentRetriever.warm): a knowledge base of
    # its own on the same connection, nothing kept; the warm timed apart, as the baseline's load.
    fresh = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, database=kb.gateway.database,
                          settings=kb.settings, ensure_schema=False)
    try:
        started = time.perf_counter()
        warm_parts = fresh.student.warm()
        warm_s = time.perf_counter() - started
        warmed = timed_pass(fresh, picked, vectors, query_rows, matrix, k, server_pid, on_progress, "search, warmed first")
    finally:
        fresh.close()

    return {
        "namespace": kb.namespace,
        **size,
        "database": {"experiences": int(database["experiences"]), "steps": int(database["steps"])},
        "queries": len(picked),
        "queries_with_steps": sum(1 for query in picked if query.steps_so_far),
        "k": k,
        "seed": seed,
        "warmup": warmup,
        "embedding_ms": {**percentiles(embed_ms), "model": model.name, "runtime": _runtime(model), "cached": False,
                         "cpu_mean": round(cpu_s["ours"] * 1000 / len(picked), 2)},
        "embedding_other_runtime_ms": ({**percentiles(other_ms), "runtime": _runtime(other),
                                        "cpu_mean": round(cpu_s["other"] * 1000 / len(picked), 2),
                                        "cosine_min": round(min(agreement), 6) if agreement else None,
                                        "vectors_compared": len(agreement)} if other is not None else None),
        **first,
        "brute_force_load_s": round(load_s, 3),
        "brute_force_vectors": len(ids),
        # The same queries again once the process's kept state is current (waited for, seconds).
        "settled": {**settled, "waited_s": round(waited_s, 3)},
        # The same queries in a process that read what its searches keep before the first of them.
        "warmed": {**warmed, "warm_s": round(warm_s, 3), "warm_parts_s": warm_parts},
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }


def bench_search_cli(
    sizes: list[int], queries: int, k: int, as_json: bool, out: Console, err: Console, *,
    source: str = "shared", seed: int = 0, eval_dir: Path = DEFAULT_EVAL_DIR, namespace: str | None = None,
) -> int:
    """``kbgraph bench search``: for each size (0 = ``namespace``, or the configured one, as it
    is), builds or reuses the scaled namespace ``bench-scaled-<size>`` from the experiences of
    ``source``, runs :func:`run_search_benchmark` and prints kbgraph and brute force side by side,
    with the growth per doubling between successive sizes (or everything as JSON).

    How a scaled KB is made (see :mod:`kbgraph.bench.scale`): experience ``n`` takes the problem
    and goal of a real seed experience (seeds used in turn, so the domain mix is the real one) and
    the steps of the same or another seed of the same domain; one step edit (drop, duplicate or
    swap), one word edit and a ``(variant n)`` suffix give it a new content id; step lists of
    domains with steps are extended with further same-domain workflows so the KB averages ~8
    steps per experience (the issue's 10,000 experiences / ~80,000 steps; WebArena experiences
    keep none, as in the real data); every vector is the seed's plus Gaussian noise of relative
    norm 0.3 (0.6 for problem+goal), re-normalised; and every seed relation is mirrored from each
    copy of its source to a copy of its target. Deterministic (``seed``), resumable, reused when already built.
    """
    from kbgraph.core.settings import Settings

    runs: list[dict[str, Any]] = []
    seeds: list[Experience] | None = None
    progress = progress_display(err)
    with progress:
        on_progress = stage_reporter(progress)

        for size in sizes:
            if size < 0:
                err.print(f"kbgraph: error: size {size}: sizes are experience counts (0 = the namespace as it is)")
                return 2
            settings = Settings(namespace=namespace) if size == 0 and namespace else (
                Settings() if size == 0 else Settings(namespace=scaled_namespace(size)))
            with KnowledgeBase.from_settings(settings, quiet=True) as kb:
                scale: ScaleReport | None = None
                if size > 0:
                    if seeds is None:
                        seeds = load_seeds(kb.gateway, source)
                    if not seeds:
                        err.print(f"kbgraph: error: no active experiences in namespace {source!r} to scale from "
                                  "(ingest ../shared/data/trajectories there first)")
                        return 1
                    scale = build_scaled_kb(kb, seeds, size, seed=seed, on_progress=with_prefix(on_progress, f"build {size:,}"))
                run = run_search_benchmark(kb, queries, k=k, seed=seed, eval_dir=eval_dir,
                                           on_progress=with_prefix(on_progress, kb.namespace),
                                           server_pid=managed_server_pid(settings))
                if scale is not None:
                    run["scaled"] = scale.as_dict()
                runs.append(run)
    growth = growth_rows(runs)
    if as_json:
        out.print(json.dumps({"runs": runs, "growth_per_doubling": growth}, indent=2), markup=False,
                  highlight=False, soft_wrap=True)
        return 0
    table = Table("system", "namespace", "experiences", "steps", "p50 ms", "p95 ms", "p99 ms", "mean ms",
                  title=f"student search, k={k}, {queries} random queries (embedding excluded)")
    for run in runs:
        for label, p in (("kbgraph", run["kbgraph_ms"]), ("kbgraph, kept state current", run["settled"]["kbgraph_ms"]),
                         ("kbgraph, a process warmed first", run["warmed"]["kbgraph_ms"]),
                         ("brute force (pg cosine, numpy)", run["brute_force_ms"])):
            table.add_row(label, run["namespace"], f"{run['experiences']:,}", f"{run['steps']:,}",
                          f"{p['p50']:.2f}", f"{p['p95']:.2f}", f"{p['p99']:.2f}", f"{p['mean']:.2f}")
    out.print(table)
    stages = Table(title="per stage (ms)")
    stages.add_column("namespace", no_wrap=True)
    for column in ("candidates p50", *[f"{s} p50" for s in STAGES], "embed p50 / mean", "brute-force load s"):
        stages.add_column(column)
    for run in runs:
        e = run["embedding_ms"]
        stages.add_row(run["namespace"], f"{run['candidates']['p50']:.0f}",
                       *[f"{run['stages_p50_ms'].get(s, 0.0):.2f}" for s in STAGES],
                       f"{e['p50']:.1f} / {e['mean']:.1f}", f"{run['brute_force_load_s']:.2f}")
    out.print(stages)
    for run in runs:
        e, o, c = run["embedding_ms"], run["embedding_other_runtime_ms"], run["cpu_per_search_ms"]
        line = f"{run['namespace']}: query embedding p50 {e['p50']:.1f} ms, CPU {e['cpu_mean']:.1f} ms ({e['runtime']})"
        if o is not None:
            line += (f"; {o['runtime']} on the same queries {o['p50']:.1f} ms, CPU {o['cpu_mean']:.1f} ms (vectors "
                     f"agree to a cosine of ≥ {o['cosine_min']})")
        server = "—" if c["server_ms"] is None else f"{c['server_ms']:.1f} ms"
        out.print(f"{line}; CPU per search: client {c['client_ms']:.1f} ms, server {server} "
                  f"(kbgraph p50 {run['kbgraph_ms']['p50']:.1f} ms)")
        for label, part in (("", run), ("kept state current: ", run["settled"])):
            r = part["requests_per_search"]
            out.print(f"{run['namespace']}: {label}requests per search {r['total']:.2f} ("
                      + ", ".join(f"{name} {n:.2f}" for name, n in r["by_query"].items()) + ")")
        kept, c = run["settled"], run["settled"]["cpu_per_search_ms"]
        server = "—" if c["server_ms"] is None else f"{c['server_ms']:.1f} ms"
        out.print(f"{run['namespace']}: kept state current after {kept['waited_s']:.1f} s more: CPU per search client "
                  f"{c['client_ms']:.1f} ms, server {server}; stages p50 "
                  + ", ".join(f"{name} {ms:.2f}" for name, ms in kept["stages_p50_ms"].items()))
        warmed = run["warmed"]
        out.print(f"{run['namespace']}: a process warmed first (warm {warmed['warm_s']:.1f} s; the brute force's load "
                  f"{run['brute_force_load_s']:.1f} s): p50 {warmed['kbgraph_ms']['p50']:.1f} ms, p95 "
                  f"{warmed['kbgraph_ms']['p95']:.1f} ms")
        out.print(f"{run['namespace']}: {run['steps']:,} steps, {run['step_texts']:,} distinct step texts, "
                  f"{run['step_vectors']:,} vectors in the step index (one per distinct step text)")
        out.print(f"load average before {run['load_average']['before']}, after {run['load_average']['after']}")
    for row in growth:
        out.print(f"growth per doubling {row['from']:,} → {row['to']:,}: kbgraph p50 ×{row['kbgraph_p50']}, "
                  f"p95 ×{row['kbgraph_p95']}; brute force p50 ×{row['brute_force_p50']}")
    return 0


#: The name the issue gives the command.
bench_search_command = bench_search_cli
