"""The teacher at a namespace's size, for ``kbgraph bench online``: ``kb.refine`` of failed steps
timed, one after the other.

``bench search`` times the student's search; an agent stuck on a step asks the teacher, whose step
channel reads the steps that say the texts nearest the failed one. Texts are shared (a scaled or a
real memory says a few hundred texts in hundreds of thousands of steps), so what the teacher
costs grows with the namespace in ways the search does not show: one refine took 103 s at 100,000
experiences before its step queries bounded what they return (docs/performance.md). Each
problematic step is the last executed step of one of the benchmark's queries that have some (its
action and arguments, as an agent would hold them), given a not-found error; the first call of a
process plans the queries and is reported apart.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbgraph.bench.figures import percentiles
from kbgraph.bench.search import load_benchmark_queries
from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import SearchQuery
from kbgraph.search.teacher import ProblematicStep

__all__ = ["ERROR", "problematic_steps", "run_refine_benchmark"]

#: The error every problematic step is given: the commonest kind in the real runs.
ERROR = "Error: not found"
#: How many benchmark queries the steps are drawn from (those with executed steps among them).
DRAWN = 400


def problematic_steps(queries: Sequence[SearchQuery], count: int) -> list[ProblematicStep]:
    """The last executed step of each query that has one, failed with :data:`ERROR`: the first
    ``count`` distinct ones (by action and arguments), in the queries' order."""
    steps: dict[str, ProblematicStep] = {}
    for query in queries:
        if query.steps_so_far and len(steps) < count:
            last = query.steps_so_far[-1]
            step = ProblematicStep(action=last.action, arguments=dict(last.arguments), error=ERROR)
            steps.setdefault(step.model_dump_json(), step)
    return list(steps.values())


def run_refine_benchmark(kb: KnowledgeBase, eval_dir: Path, count: int = 10, k: int = 5, seed: int = 0,
                         on_progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Times ``kb.refine`` of up to ``count`` problematic steps (:func:`problematic_steps` of the
    benchmark's queries of ``eval_dir``), each once, after a first call of the first (``first_ms``:
    a process's first refine plans its queries)."""
    steps = problematic_steps(load_benchmark_queries(eval_dir, DRAWN, k=k, seed=seed), count)

    def timed(step: ProblematicStep) -> float:
        started = time.perf_counter()
        kb.refine([step], k=k)
        return (time.perf_counter() - started) * 1000

    first_ms = round(timed(steps[0]), 3) if steps else None
    timings: list[float] = []
    for done, step in enumerate(steps, 1):
        timings.append(timed(step))
        if on_progress is not None:
            on_progress("refines", done, len(steps))
    return {"k": k, "steps": len(steps), "first_ms": first_ms, "refine_ms": percentiles(timings)}
