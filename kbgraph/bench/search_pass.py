"""One timed pass of ``kbgraph bench search``: every query through ``kb.student.search`` and, right
after it, the brute-force top-k over the same vectors, so both see the same machine load; with the
client's and the managed server's CPU per search, the requests per search, and the stages' times.

A run makes two passes over the same queries (:mod:`kbgraph.bench.search`): the first right after
the warm-up, as a process that just started searches (a namespace above ``exact_scan_max`` is then
answered by the indexes until the process has read its vectors and texts in the background:
kbgraph.search.student.kept_in_background.KeptInBackground); the second once that state is current
(:func:`wait_for_kept_state`), as every later search of a namespace no write has changed since.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from kbgraph.bench.cpu import CpuMeter
from kbgraph.bench.figures import percentiles
from kbgraph.bench.requests import counting_reads, per_operation
from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import SearchQuery
from kbgraph.search.student import QueryVectors

__all__ = ["STAGES", "brute_force", "timed_pass", "wait_for_kept_state"]

#: The timings_ms stages of a student search, in pipeline order (``embed`` is 0 here).
STAGES = ("channels", "facts", "score", "traverse", "select", "read", "retrieval")


def brute_force(matrix: npt.NDArray[np.float32], vector: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """The exact top-k rows of ``matrix`` for ``vector`` (cosine of unit vectors), best first."""
    scores = matrix @ vector
    if k >= len(scores):
        return np.argsort(-scores)
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def timed_pass(
    kb: KnowledgeBase, picked: Sequence[SearchQuery], vectors: Sequence[QueryVectors],
    rows: Sequence[npt.NDArray[np.float32] | None], matrix: npt.NDArray[np.float32], k: int,
    server_pid: int | None, on_progress: Callable[[str, int, int], None] | None, stage: str,
) -> dict[str, Any]:
    """Times every query of ``picked`` (its vectors ``vectors``) in kbgraph and, right after it, the
    brute force over ``matrix`` (each query's unit problem+goal vector in ``rows``, None: none)."""
    cpu = CpuMeter(server_pid)
    wall: list[float] = []
    retrieval: list[float] = []
    brute: list[float] = []
    by_kind: dict[str, list[float]] = {"with_steps": [], "task_only": []}
    stages: dict[str, list[float]] = {s: [] for s in STAGES}
    stages_by_kind: dict[str, dict[str, list[float]]] = {kind: {s: [] for s in STAGES} for kind in by_kind}
    candidates: list[float] = []
    hits: list[float] = []
    notes: Counter[str] = Counter()
    # The baseline on one BLAS thread (see kbgraph.bench.search's docstring).
    with threadpool_limits(limits=1, user_api="blas"), counting_reads(kb.gateway) as requests:
        cpu.begin()
        for done, (query, vector, row) in enumerate(zip(picked, vectors, rows, strict=True), 1):
            cpu.start()
            started = time.perf_counter()
            results = kb.student.search(query, query_vectors=vector)
            elapsed = (time.perf_counter() - started) * 1000
            cpu.stop()
            wall.append(elapsed)
            kind = "with_steps" if query.steps_so_far else "task_only"
            by_kind[kind].append(elapsed)
            retrieval.append(results.timings_ms.get("retrieval", elapsed))
            for name in STAGES:
                if name in results.timings_ms:
                    stages[name].append(results.timings_ms[name])
                    stages_by_kind[kind][name].append(results.timings_ms[name])
            candidates.append(results.candidates)
            hits.append(len(results.hits))
            for note in results.notes:
                notes[note.split(":")[0]] += 1
            if row is not None and len(matrix):
                started = time.perf_counter()
                brute_force(matrix, row, k)
                brute.append((time.perf_counter() - started) * 1000)
            if on_progress is not None:
                on_progress(stage, done, len(picked))
        cpu.end()
    return {
        "cpu_per_search_ms": cpu.per_operation(),
        "requests_per_search": per_operation(requests, len(picked)),
        "kbgraph_ms": percentiles(wall),
        "kbgraph_retrieval_ms": percentiles(retrieval),
        "kbgraph_by_query_ms": {kind: percentiles(values) for kind, values in by_kind.items()},
        "brute_force_ms": percentiles(brute),
        "candidates": percentiles(candidates),
        "hits": percentiles(hits),
        "stages_p50_ms": {s: percentiles(v)["p50"] for s, v in stages.items() if v},
        "stages_p95_ms": {s: percentiles(v)["p95"] for s, v in stages.items() if v},
        "stages_mean_ms": {s: percentiles(v)["mean"] for s, v in stages.items() if v},
        "stages_p50_ms_by_query": {kind: {s: percentiles(v)["p50"] for s, v in per.items() if v}
                                   for kind, per in stages_by_kind.items()},
        "notes": dict(notes),
    }


def wait_for_kept_state(kb: KnowledgeBase, queries: Sequence[tuple[SearchQuery, QueryVectors]], rounds: int = 5) -> float:
    """Seconds until what ``kb``'s searches keep of the namespace in the background (its vectors,
    texts, scoring facts, step texts and what feedback changes, above ``exact_scan_max``) is read at its current version:
    searches start the reads (one of ``queries`` without executed steps, one with, which the step
    texts are read for), then they are waited for; a few rounds, as the second read of a version
    confirms the first."""
    ctx = kb.student.context
    picked = {bool(query.steps_so_far): (query, vector) for query, vector in reversed(queries)}
    started = time.perf_counter()
    for _ in range(rounds):
        for query, vector in picked.values():
            kb.student.search(query, query_vectors=vector)
        for kept in (ctx.vectors_in_background, ctx.texts_in_background, ctx.facts_in_background,
                     ctx.steps_in_background, ctx.feedback_in_background):
            if kept is not None:
                kept.settle()
    return time.perf_counter() - started
