"""What adding one run costs (``kbgraph bench add``): incremental next to from scratch, same run.

For each namespace, one ``KnowledgeBase`` (a long-lived process, as an agent loop or the MCP
server) adds runs one at a time with ``kb.add_trajectories([run])``, alternating:

- **incremental**: the process remembers the namespace's link plan from its previous
  consolidation and merges and links only the new run (ingest/consolidate.py);
- **from scratch**: the same, after forgetting that plan, so the consolidation reads every active
  experience and plans everything again — the path every ingest took before, and the one a fresh
  process takes on its first ingest (the baseline).

Runs are the corpus's runs under fresh ids, in a shuffled order (``seed``), so each is new
provenance: an experience that already holds the same content only gains a source (cheaper),
otherwise it is a new experience, which may merge. How many of each is reported. Times exclude the
embedding model (``stage_seconds`` says how long it ran): the cost of the memory, not of MiniLM.
An add that crossed a growth checkpoint also ran maintenance (automatic, at 10, 20, 40, …
experiences added): it is left out of the percentiles and listed on its own.
The runs stay in the namespace afterwards (as any agent's would).
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kbgraph.bench.search import percentiles
from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase

__all__ = ["DEFAULT_ADDS", "run_add_benchmark"]

EMBEDDING_STAGE = "embedding model (within write/concepts)"
#: (namespace, runs added so far, runs planned)
AddProgress = Callable[[str, int, int], None]


#: Runs ``bench online`` adds incrementally per size. 30, not 10: the first ~10 adds after a build pay
#: plans the server makes again for the grown namespace (concepts 0.3–0.9 s, link 0.1–0.5 s, merge
#: 0.2 s once each at 100,000, 2026-12-07), so a median of 10 was mostly those; 30 adds at 100,000
#: take ~5 s more.
DEFAULT_ADDS = 30


def _add_one(kb: KnowledgeBase, run: dict[str, Any], forget: bool) -> dict[str, Any]:
    if forget:
        kb.link_state.clear()
    copy = {**run, "id": f"{run['id']}-bench-add-{uuid.uuid4().hex[:12]}"}
    started = time.perf_counter()
    report = kb.add_trajectories([copy])
    seconds = time.perf_counter() - started
    stages = dict(report.stage_seconds)
    model = stages.pop(EMBEDDING_STAGE, 0.0)
    return {"ms": round((seconds - model) * 1000, 2), "embedding_ms": round(model * 1000, 2),
            "consolidated": report.consolidated, "merged": report.experiences_merged,
            "new": report.experiences_new, "maintenance": report.maintenance_run is not None,
            "stages_ms": {k: round(v * 1000, 2) for k, v in stages.items()}}


def _median_stages(samples: list[dict[str, Any]]) -> dict[str, float]:
    names = sorted({name for s in samples for name in s["stages_ms"]})
    return {name: percentiles([s["stages_ms"].get(name, 0.0) for s in samples])["p50"] for name in names}


def _summary(all_samples: list[dict[str, Any]]) -> dict[str, Any]:
    # An add that crossed a growth checkpoint also ran maintenance (and its relinking, from
    # scratch): a cost of the doubling schedule, not of the add; shown on its own.
    samples = [s for s in all_samples if not s["maintenance"]] or all_samples
    return {"n": len(samples), **{k: v for k, v in percentiles([s["ms"] for s in samples]).items() if k != "n"},
            "with_maintenance_ms": [s["ms"] for s in all_samples if s["maintenance"]],
            "consolidated": sorted({s["consolidated"] for s in samples}), "stages_p50_ms": _median_stages(samples),
            # Every add's time in order: the first adds after a build pay plans the later ones do not.
            "samples_ms": [s["ms"] for s in all_samples],
            # A run whose content is already stored only adds provenance; a new one is a new experience.
            "new_experiences": sum(1 for s in samples if s["new"]), "merged": sum(s["merged"] for s in samples)}


def bench_one_namespace(kb: KnowledgeBase, runs: Sequence[dict[str, Any]], count: int,
                        on_progress: AddProgress | None = None, scratch_count: int | None = None) -> dict[str, Any]:
    """``count`` incremental adds and ``scratch_count`` (default ``count``) from scratch,
    alternating while both remain, after one warm-up add (a process's first ingest starts from
    scratch: its time is reported on its own). Fewer from-scratch adds keep a large namespace's
    baseline affordable: each one reads and plans the whole namespace."""
    scratch_count = count if scratch_count is None else scratch_count
    experiences = kb.count()
    first = _add_one(kb, runs[0], forget=True)
    incremental: list[dict[str, Any]] = []
    scratch: list[dict[str, Any]] = []
    order = [False, True] * min(count, scratch_count) + [False] * (count - scratch_count) \
        + [True] * (scratch_count - count)
    for index, forget in enumerate(order):
        (scratch if forget else incremental).append(_add_one(kb, runs[(index + 1) % len(runs)], forget=forget))
        if on_progress:
            on_progress(kb.namespace, index + 1, len(order))
    inc, full = _summary(incremental), _summary(scratch)
    return {"namespace": kb.namespace, "experiences": experiences, "first_add_ms": first["ms"],
            "incremental": inc, "from_scratch": full,
            "speedup_p50": round(full["p50"] / inc["p50"], 1) if inc["p50"] and full["p50"] else None}


def run_add_benchmark(kb_for: Callable[[str], KnowledgeBase], namespaces: Sequence[str],
                      runs: Sequence[dict[str, Any]], count: int, seed: int = 0,
                      on_progress: AddProgress | None = None) -> dict[str, Any]:
    """One result per namespace, each through its own KnowledgeBase (``kb_for`` opens it)."""
    if not runs:
        raise InvalidInputError(["no runs to add: the corpus has no trajectories with a task"])
    runs = list(runs)
    random.Random(seed).shuffle(runs)
    results = []
    load_before = os.getloadavg()
    for namespace in namespaces:
        with kb_for(namespace) as kb:
            results.append(bench_one_namespace(kb, runs, count, on_progress))
    return {"runs_per_path": count, "seed": seed, "namespaces": results,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}
