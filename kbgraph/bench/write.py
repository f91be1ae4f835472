"""Write throughput: kbgraph's batched UNWIND writer next to a one-transaction-per-experience
baseline, measured in the same run on the same server.

Experiences are synthetic (:mod:`kbgraph.bench.synthetic`) with ready embeddings, so the figures
are storage throughput alone; embedding throughput is a separate concern (the cache makes it a
one-time cost per text).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from kbgraph.bench.synthetic import synthetic_experiences
from kbgraph.store.experiences import ExperienceStore
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience

Advance = Callable[[int], None]


def _graph_size(experiences: list[Experience]) -> tuple[int, int]:
    """(nodes, relationships) that writing these creates, domains included."""
    steps = sum(len(e.steps) for e in experiences)
    failures = sum(len(e.failure_modes) for e in experiences)
    domains = len({e.domain for e in experiences})
    nodes = len(experiences) + steps + failures + domains
    links = sum(max(len(e.steps) - 1, 0) for e in experiences)
    relationships = steps + failures + len(experiences) + links + sum(len(e.relations) for e in experiences)
    return nodes, relationships


def _timed_write(kb: KnowledgeBase, experiences: list[Experience], batch_size: int, advance: Advance) -> float:
    store = ExperienceStore(kb.gateway, kb.namespace, batch_size)
    started = time.perf_counter()
    store.write(experiences, on_batch=advance)
    return time.perf_counter() - started


def run_write_benchmark(
    kb: KnowledgeBase, sizes: list[int], steps: int = 8, baseline_sample: int = 200,
    on_progress: Callable[[str, int, int], None] | None = None, keep: bool = False,
) -> dict[str, Any]:
    """Writes ``sizes`` experiences into fresh namespaces and returns the figures.

    The baseline writes ``baseline_sample`` experiences one transaction each (same queries, one
    row per UNWIND), which is how a naive writer would do it.
    """
    results: list[dict[str, Any]] = []
    base_namespace = kb.namespace
    for size in sizes:
        started = time.perf_counter()
        experiences = synthetic_experiences(size, steps=steps, dimension=kb.embedder.dimension, seed=size)
        generate_s = time.perf_counter() - started
        nodes, relationships = _graph_size(experiences)
        done = 0

        def advance(n: int, label: str = f"write {size:,}") -> None:
            nonlocal done
            done += n
            if on_progress:
                on_progress(label, done, size)

        kb.namespace = f"{base_namespace}-{size}-{uuid.uuid4().hex[:6]}"
        kb.store = ExperienceStore(kb.gateway, kb.namespace, kb.settings.write_batch_size)
        try:
            write_s = _timed_write(kb, experiences, kb.settings.write_batch_size, advance)
            stats = kb.stats()
            again_started = time.perf_counter()
            kb.add_experiences(experiences)
            rewrite_s = time.perf_counter() - again_started
            unchanged = kb.stats() == stats
        finally:
            if not keep:
                kb.clear()
        results.append({
            "experiences": size, "steps_each": steps, "nodes": nodes, "relationships": relationships,
            "stored_nodes": sum(stats.nodes.values()), "generate_s": round(generate_s, 2),
            "write_s": round(write_s, 2), "nodes_per_s": round(nodes / write_s),
            "experiences_per_s": round(size / write_s, 1), "rewrite_s": round(rewrite_s, 2),
            "rewrite_changed_counts": not unchanged,
        })

    # Baseline: the same queries, one experience per transaction.
    sample = synthetic_experiences(baseline_sample, steps=steps, dimension=kb.embedder.dimension, seed=99)
    nodes, _ = _graph_size(sample)
    kb.namespace = f"{base_namespace}-baseline-{uuid.uuid4().hex[:6]}"
    kb.store = ExperienceStore(kb.gateway, kb.namespace, kb.settings.write_batch_size)
    try:
        baseline_done = 0

        def advance_baseline(n: int) -> None:
            nonlocal baseline_done
            baseline_done += n
            if on_progress:
                on_progress("baseline", baseline_done, baseline_sample)

        baseline_s = _timed_write(kb, sample, 1, advance_baseline)
    finally:
        kb.clear()
        kb.namespace = base_namespace
        kb.store = ExperienceStore(kb.gateway, kb.namespace, kb.settings.write_batch_size)
    baseline = {
        "experiences": baseline_sample, "nodes": nodes, "write_s": round(baseline_s, 2),
        "nodes_per_s": round(nodes / baseline_s), "experiences_per_s": round(baseline_sample / baseline_s, 1),
        "how": "one transaction per experience (same queries, one row each)",
    }
    return {"batch_size": kb.settings.write_batch_size, "kbgraph": results, "baseline": baseline}
