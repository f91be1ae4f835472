"""Reading, before the first search, what the searches of a namespace keep in the process
(:meth:`kbgraph.search.student.retriever.StudentRetriever.warm`).

A process that just started keeps nothing of its namespace. Its first searches read the intent
channel's rows (every workflow, and the history of requests of each query domain) and, above
``exact_scan_max``, ask the indexes while the vectors, texts, scoring facts, step texts and what
feedback changes are read in the background (kbgraph.search.student.kept_in_background.KeptInBackground),
where the reads and the searches share the server's cores and the interpreter: at 10,000
experiences the first ~60 searches of such a process took 50-350 ms instead of ~10. A long-lived
process can pay that once instead (``kbgraph serve`` does at start; an agent loop can before it
searches):
:func:`warm` reads each of them now, twice at the same version as a search would (the second read
confirms the first: Neo4j reads at read committed), for the default filters (the ones a search
without filters uses) and every domain the namespace holds. It changes nothing a search returns:
the values are the ones the searches would have read, kept by the same versions, and a write
afterwards makes the next search read again as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kbgraph.search.params import SearchFilters, SearchQuery, SearchWeights
from kbgraph.search.student.channels import filter_params
from kbgraph.search.student.context import SearchContext
from kbgraph.search.student.kept_channels import in_process
from kbgraph.search.student.versioned import kept_key

__all__ = ["warm"]

T = TypeVar("T")


def warm(ctx: SearchContext, weights: SearchWeights) -> dict[str, float]:
    """Reads what ``ctx``'s searches keep of its namespace (see the module docstring); returns the
    seconds each part took, by name, and ``total``."""
    seconds: dict[str, float] = {}
    began = time.perf_counter()

    def timed(part: str, read: Callable[[], T]) -> T:
        started = time.perf_counter()
        value = read()
        seconds[part] = round(time.perf_counter() - started, 3)
        return value

    domains: list[str | None] = [str(row["name"]) for row in ctx.gateway.read("search_namespace_domains", kb=ctx.namespace)]
    params = {domain: filter_params(ctx.namespace, SearchFilters(), SearchQuery(task="warm", domain=domain), weights)
              for domain in domains or [None]}
    default = next(iter(params.values()))
    history = weights.intent.history_weight > 0
    # Each domain's rows twice, the second read confirming the first (it reads again the write that
    # made the version, without waiting for the version to stay: kbgraph.search.student.intent_follow);
    # the workflows are the same rows for every domain.
    settle, ctx.intent_bases.settle_seconds = ctx.intent_bases.settle_seconds, 0.0
    try:
        workflows = timed("intent", lambda: [ctx.intent_rows(p, history=history)[0] for p in [*params.values()] * 2][-1])
    finally:
        ctx.intent_bases.settle_seconds = settle

    def work_out() -> None:  # what the first search of each domain would work out: the same values
        table = workflows.table
        table.texts(), table.operations(), table.distinct_sets(), table.set_columns(), table.handoffs()
        for domain in params:
            ctx.domain_has_steps(domain)
            workflows.known_operations(domain)
            if domain is not None:
                workflows.of_domain(domain)

    timed("intent_vectors", work_out)
    if weights.scan.scans(ctx.size.get(weights.scan.exact_scan_max).experiences):
        if kept_key(default) is not None:
            timed("texts", lambda: [ctx.namespace_texts(default) for _ in range(2)])
    elif ctx.keeps_in_background():
        # What kept_current gives a search, read now (wait) rather than in the background.
        versions = ctx.versions()
        timed("texts", lambda: ctx.current_texts(default, versions.search, wait=True))
        timed("steps", lambda: ctx.current_steps(default, versions.search, wait=True))
        if in_process(ctx):
            timed("vectors", lambda: ctx.current_vectors(default, versions.search, wait=True))
            timed("facts", lambda: ctx.current_facts(versions.search, wait=True))
            timed("feedback", lambda: ctx.current_feedback(versions.feedback, wait=True))
        ctx.kept_state.saw(True)  # the next search waits for the version, and finds them current
    seconds["total"] = round(time.perf_counter() - began, 3)
    return seconds
