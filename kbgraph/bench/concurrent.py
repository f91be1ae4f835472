"""Many agents at once: mixed traffic of searches and runs being added (``kbgraph bench concurrent``).

For each number of client threads (default 1, 4 and 8), every client loops for ``seconds``: with
probability ``write_share`` (0.1) it adds one run (``kb.add_trajectories`` of one trajectory,
as an agent does after a task), otherwise it searches (``kb.student.search`` of a benchmark query,
its vectors embedded beforehand, so embedding is excluded as in ``bench search``). Runs added are
copies of the corpus's own runs under fresh ids (same content: their embeddings are cached, so
add-one-run is measured without the model, and the namespace's experiences only gain provenance).
Reported per round: operations, QPS overall and per kind, p50/p95 of each kind, CPU an operation
(this process's and, given its pid, the Neo4j server's: kbgraph.bench.cpu), and errors by message;
the load average before and after. Every client shares one ``KnowledgeBase`` (one driver
and its connection pool), as agents of one process would; with ``processes`` above 1 the clients
of a round are spread over that many worker processes, each with its own KnowledgeBase
(:mod:`kbgraph.bench.concurrent_processes`).

One ingest per namespace runs at a time (the ingest lease, kbgraph.ingest.lease), so concurrent
adds wait for each other: their p95 says what an agent waits behind the others.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbgraph.bench.cpu import CpuMeter
from kbgraph.bench.search import DEFAULT_EVAL_DIR, load_benchmark_queries, percentiles
from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.ingest.group_commit import queue_of
from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import SearchQuery
from kbgraph.search.student import QueryVectors

__all__ = ["load_runs", "run_concurrent_benchmark"]

#: (round label, seconds elapsed, seconds planned)
ConcurrentProgress = Callable[[str, float, float], None]


def load_runs(files: Sequence[Path], limit: int = 500, seed: int = 0) -> list[dict[str, Any]]:
    """Up to ``limit`` trajectories (dicts in the file format) drawn at random from ``files``."""
    runs: list[dict[str, Any]] = []
    for path in files:
        with open(path, encoding="utf-8") as handle:
            runs += [json.loads(line) for line in handle if line.strip()]
    runs = [r for r in runs if "task" in r]
    random.Random(seed).shuffle(runs)
    return runs[:limit]


def timed_clients(kb: KnowledgeBase, clients: int, seconds: float, write_share: float, queries: list[SearchQuery],
                  vectors: list[QueryVectors], runs: list[dict[str, Any]], seed: int, label: str = "",
                  on_progress: ConcurrentProgress | None = None, first_client: int = 0,
                  ) -> tuple[dict[str, list[float]], Counter[str], float]:
    """``clients`` threads mixing searches and added runs on ``kb`` for ``seconds``: each
    operation's milliseconds by kind, the errors by message, and the seconds the round took.
    ``first_client`` numbers the clients (their random draws) after those of other processes."""
    latencies: dict[str, list[float]] = {"search": [], "add_run": []}
    errors: Counter[str] = Counter()
    lock = threading.Lock()
    # Each round adds runs under ids of its own: a later round of as many clients (the one measured
    # after a warm-up round) must not find its runs already stored (an add that only skips them).
    round_id = uuid.uuid4().hex[:8]
    start = time.perf_counter()
    deadline = start + seconds

    def client(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        added = 0
        while time.perf_counter() < deadline:
            write = rng.random() < write_share
            began = time.perf_counter()
            try:
                if write:
                    run = dict(rng.choice(runs))
                    added += 1
                    run["id"] = f"bench.{os.getpid()}.{round_id}.{index}.{added}:{run['id']}"[:128]
                    kb.add_trajectories([run])
                else:
                    i = rng.randrange(len(queries))
                    kb.student.search(queries[i], query_vectors=vectors[i])
            except KbgraphError as error:  # counted, and the client goes on, as an agent would
                shown = error.problems[0] if isinstance(error, InvalidInputError) and error.problems else str(error)
                with lock:
                    errors[f"{'add_run' if write else 'search'}: {shown.splitlines()[0][:160]}"] += 1
                continue
            elapsed = (time.perf_counter() - began) * 1000
            with lock:
                latencies["add_run" if write else "search"].append(elapsed)

    threads = [threading.Thread(target=client, args=(first_client + i,), name=f"bench-client-{i}", daemon=True)
               for i in range(clients)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        for thread in threads:
            thread.join(timeout=0.5)
        if on_progress is not None:
            on_progress(label, min(time.perf_counter() - start, seconds), seconds)
    return latencies, errors, time.perf_counter() - start


def round_figures(clients: int, wall: float, latencies: dict[str, list[float]], errors: Counter[str],
                  cpu: CpuMeter, processes: int = 1, commits: tuple[int, int] = (0, 0)) -> dict[str, Any]:
    """A round's report (pure): operations, QPS overall and per kind, percentiles, CPU an operation,
    and the adds committed per transaction (``commits``: group commits and the adds in them, when
    known)."""
    done = {kind: len(values) for kind, values in latencies.items()}
    groups, adds = commits
    grouped = {"adds_per_commit": round(adds / groups, 2)} if groups else {}
    return {
        "clients": clients, "processes": processes, "seconds": round(wall, 2), "operations": sum(done.values()),
        "qps": round(sum(done.values()) / wall, 2),
        # CPU an operation, searches and adds together: what caps QPS on a machine's cores.
        "cpu_per_operation_ms": cpu.per_operation(),
        **{f"{kind}_qps": round(n / wall, 2) for kind, n in done.items()},
        **{kind: {"count": done[kind], **percentiles(values)} for kind, values in latencies.items()},
        **grouped,
        "errors": dict(errors),
    }


def _round(kb: KnowledgeBase, clients: int, seconds: float, write_share: float, queries: list[SearchQuery],
           vectors: list[QueryVectors], runs: list[dict[str, Any]], seed: int, label: str,
           on_progress: ConcurrentProgress | None, server_pid: int | None = None) -> dict[str, Any]:
    cpu = CpuMeter(server_pid)
    queue = queue_of(kb)
    before = (queue.groups_committed, queue.adds_committed)
    cpu.begin()
    cpu.start()
    latencies, errors, wall = timed_clients(kb, clients, seconds, write_share, queries, vectors, runs, seed, label,
                                            on_progress)
    cpu.over(sum(len(values) for values in latencies.values()))
    cpu.end()
    return round_figures(clients, wall, latencies, errors, cpu, commits=(
        queue.groups_committed - before[0], queue.adds_committed - before[1]))


def run_concurrent_benchmark(
    kb: KnowledgeBase,
    runs: list[dict[str, Any]],
    clients: Sequence[int] = (1, 4, 8),
    seconds: float = 30.0,
    write_share: float = 0.1,
    queries: int = 300,
    seed: int = 0,
    eval_dir: Path = DEFAULT_EVAL_DIR,
    on_progress: ConcurrentProgress | None = None,
    server_pid: int | None = None,
    processes: int = 1,
    settle: Callable[[], float] | None = None,
    warmup_seconds: float = 0.0,
) -> dict[str, Any]:
    """One round per entry of ``clients`` on ``kb``'s namespace (see the module docstring), the
    clients as threads of this process, or spread over ``processes`` worker processes
    (kbgraph.bench.concurrent_processes). Returns a JSON-ready dict; latencies in milliseconds.

    Before the rounds the namespace takes every run of ``runs`` in one add (so that the runs the
    clients add are known content); ``settle``, when given, is then called (bench online waits
    there until a local server has merged the add's index segments; the seconds it returns are
    reported as ``settled_before_rounds_s``), and what the searches keep in the process is read
    again (``kb.student.warm``) before the warm-up searches run: the rounds measure traffic,
    not the searches that meet a bulk add of hundreds of runs (their kept state read whole in the
    background meanwhile, the indexes answering them: ~8 QPS at 10,000 instead of ~34).

    ``warmup_seconds`` above 0: a round of the most clients asked for runs first, in this process,
    reported apart (``warmup_round``), not among the rounds. The first traffic a server meets after
    a start, or after a build and searches alone, makes it plan and compile the statements only
    mixed traffic sends (an add of one run in its one transaction, the change feed followed): on a
    Neo4j just restarted, three 15 s rounds of 8 clients gave 4.7, 57.3 and 66.9 QPS (server CPU an
    operation 335, 20 and 11 ms) on one namespace. The rounds after it measure traffic on a server
    that has met it."""
    if processes < 1:
        raise ValueError(f"processes must be at least 1, not {processes}")
    if not runs:
        raise ValueError("no runs to add: give trajectory files")
    if not 0.0 <= write_share <= 1.0:
        raise ValueError(f"write_share must be within [0, 1], not {write_share}")
    picked = load_benchmark_queries(eval_dir, queries, seed=seed)
    vectors = [kb.student._embed_query(q, kb.student.weights) for q in picked]
    # Warm the embedding cache with the runs' texts, then the paths, before anything is timed. The
    # bulk add changes most of what a search keeps, more than the change feed patches: it is read
    # again, as a process warms before it serves, and the warm-up searches run on it.
    kb.add_trajectories(runs)
    settled = settle() if settle is not None else None
    kb.student.warm()
    for query, vector in list(zip(picked, vectors))[:10]:
        kb.student.search(query, query_vectors=vector)
    warmup = None
    if warmup_seconds > 0 and clients:
        warmup = _round(kb, max(clients), warmup_seconds, write_share, picked, vectors, runs, seed + 1, "warm-up",
                        on_progress, server_pid)
    load_before = os.getloadavg()
    rounds = []
    for n in clients:
        label = f"{n} client{'s' if n != 1 else ''}"
        if processes > 1 and n > 1:
            from kbgraph.bench.concurrent_processes import round_in_processes

            rounds.append(round_in_processes(kb.settings, kb.namespace, processes, n, seconds, write_share, picked,
                                             vectors, runs, seed, f"{label}, {min(n, processes)} processes",
                                             on_progress, server_pid))
        else:
            rounds.append(_round(kb, n, seconds, write_share, picked, vectors, runs, seed, label, on_progress,
                                 server_pid))
    return {
        "namespace": kb.namespace, "experiences": kb.count(), "write_share": write_share, "queries": len(picked),
        "runs_pool": len(runs), "settled_before_rounds_s": settled, "warmup_round": warmup, "rounds": rounds,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
