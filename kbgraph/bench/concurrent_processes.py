"""The mixed round of ``bench concurrent`` / ``bench online`` with its clients spread over worker
processes (``--processes N``), as the workers of an HTTP deployment, or agents each in a process of
its own, would be.

One process's client threads share one GIL: on 2 cores the round of 8 threads stopped at ~30 QPS
with the client at ~30 ms of CPU an operation and the machine a third idle. Each worker process
here opens its own KnowledgeBase on the namespace (its driver, embedder and what its searches
keep), warms it (:meth:`~kbgraph.search.student.retriever.StudentRetriever.warm`, a few searches
and one add, which plans its link state), and all start together behind a barrier; each then
follows the others' writes as another process does (the change feed for searches, the facts log
for adds). Reported as the one-process round is, with ``processes``; the client CPU is the
workers' own, the server's measured around the round as before.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections import Counter
from typing import Any

from kbgraph.bench.concurrent import ConcurrentProgress, round_figures, timed_clients
from kbgraph.bench.cpu import CpuMeter
from kbgraph.core.settings import Settings
from kbgraph.search.params import SearchQuery
from kbgraph.search.student import QueryVectors

__all__ = ["clients_per_process", "round_in_processes"]

#: How long the workers may take to start and warm (MiniLM loads in each) before the round fails.
START_TIMEOUT_S = 600.0


def clients_per_process(clients: int, processes: int) -> list[int]:
    """``clients`` threads spread over ``processes`` as evenly as can be (none left empty)."""
    if clients < 1 or processes < 1:
        raise ValueError(f"clients and processes must be at least 1, not {clients} and {processes}")
    used = min(clients, processes)
    return [clients // used + (1 if i < clients % used else 0) for i in range(used)]


def _worker(settings: Settings, namespace: str, threads: int, first_client: int, seconds: float,
            write_share: float, queries: list[SearchQuery], vectors: list[QueryVectors], runs: list[dict[str, Any]],
            seed: int, barrier: Any, results: Any) -> None:
    """One worker process: its KnowledgeBase warmed, then its share of the clients once all are ready."""
    from kbgraph.kb import KnowledgeBase

    try:
        with KnowledgeBase.from_settings(settings, namespace=namespace, quiet=True) as kb:
            kb.student.warm()
            for query, vector in list(zip(queries, vectors))[:10]:
                kb.student.search(query, query_vectors=vector)
            warm_run = dict(runs[first_client % len(runs)])
            warm_run["id"] = f"bench-warm.{multiprocessing.current_process().pid}.{time.time_ns()}:{warm_run['id']}"[:128]
            kb.add_trajectories([warm_run])
            barrier.wait(START_TIMEOUT_S)
            started = time.process_time()
            latencies, errors, wall = timed_clients(kb, threads, seconds, write_share, queries, vectors, runs, seed,
                                                    first_client=first_client)
            results.put({"latencies": latencies, "errors": dict(errors), "wall": wall,
                         "cpu_s": time.process_time() - started})
    except BaseException as error:  # the parent reports it; a broken barrier releases the others
        barrier.abort()
        results.put({"failed": f"{type(error).__name__}: {error}"})


def round_in_processes(settings: Settings, namespace: str, processes: int, clients: int, seconds: float,
                       write_share: float, queries: list[SearchQuery], vectors: list[QueryVectors],
                       runs: list[dict[str, Any]], seed: int, label: str,
                       on_progress: ConcurrentProgress | None = None, server_pid: int | None = None) -> dict[str, Any]:
    """One mixed round of ``clients`` threads over ``processes`` worker processes (spawned, each
    with ``settings`` and ``namespace``); the round's figures as :func:`round_figures` gives them."""
    shares = clients_per_process(clients, processes)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(shares) + 1)
    results = context.Queue()
    workers = [context.Process(target=_worker, name=f"kbgraph-bench-worker-{i}", daemon=True,
                               args=(settings, namespace, threads, sum(shares[:i]), seconds, write_share, queries,
                                     vectors, runs, seed, barrier, results))
               for i, threads in enumerate(shares)]
    for worker in workers:
        worker.start()
    gathered: list[dict[str, Any]] = []
    try:
        try:
            barrier.wait(START_TIMEOUT_S)
        except Exception:  # a worker failed while warming: its message is in the queue
            gathered.append(results.get(timeout=60))
            raise RuntimeError(f"a benchmark worker process failed: {gathered[-1].get('failed', gathered[-1])}") from None
        cpu = CpuMeter(server_pid)
        cpu.begin()
        started = time.perf_counter()
        while len(gathered) < len(workers):
            try:
                gathered.append(results.get(timeout=0.5))
            except queue.Empty:
                if not any(w.is_alive() for w in workers):
                    raise RuntimeError("a benchmark worker process ended without its figures") from None
            if on_progress is not None:
                on_progress(label, min(time.perf_counter() - started, seconds), seconds)
        cpu.end()
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.terminate()
    failed = [g["failed"] for g in gathered if "failed" in g]
    if failed:
        raise RuntimeError(f"a benchmark worker process failed: {failed[0]}")
    latencies: dict[str, list[float]] = {"search": [], "add_run": []}
    errors: Counter[str] = Counter()
    for part in gathered:
        for kind, values in part["latencies"].items():
            latencies[kind] += values
        errors.update(part["errors"])
    cpu.client_s = sum(part["cpu_s"] for part in gathered)
    cpu.operations = sum(len(values) for values in latencies.values())
    return round_figures(clients, max(part["wall"] for part in gathered), latencies, errors, cpu, len(shares))
