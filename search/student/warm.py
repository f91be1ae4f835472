"""Reading, before the first search, what the searches of a namespace keep in the process
(:meth:`kbgraph.search.student.retriever.StudentRetriever.warm`).

A process that just started keeps nothing of its namespace. Its first searches read the intent
channel's rows (every workflow, and the history of requests of each query domain) and, above
``exact_scan_max``, ask the indexes while the vectors, texts, scoring facts, step texts and what
feedback changes are read in the background (kbgraph.search.student.versioned.KeptInBackground),
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
from typing import Any

from kbgraph.search.params import SearchFilters, SearchQuery, SearchWeights
from kbgraph.search.student.channels import filter_params
from kbgraph.search.student.context import SearchContext
from kbgraph.search.student.kept_channels import in_process
from kbgraph.search.student.kept_facts import NamespaceFacts, fact_rows
from kbgraph.search.student.kept_feedback import built_feedback, feedback_rows
from kbgraph.search.student.step_model import StepSayers, step_rows
from kbgraph.search.student.text_corpus import NamespaceTexts
from kbgraph.search.student.vector_model import built, vector_rows
from kbgraph.search.student.versioned import kept_key, version_applies

__all__ = ["warm"]


def warm(ctx: SearchContext, weights: SearchWeights) -> dict[str, float]:
    """Reads what ``ctx``'s searches keep of its namespace (see the module docstring); returns the
    seconds each part took, by name, and ``total``."""
    seconds: dict[str, float] = {}
    began = time.perf_counter()

    def timed(part: str, read: Callable[[], Any]) -> None:
        started = time.perf_counter()
        for _ in range(2):  # the second read of a version confirms the first
            read()
        seconds[part] = round(time.perf_counter() - started, 3)

    domains: list[str | None] = [str(row["name"]) for row in ctx.gateway.read("search_namespace_domains", kb=ctx.namespace)]
    params = {domain: filter_params(ctx.namespace, SearchFilters(), SearchQuery(task="warm", domain=domain), weights)
              for domain in domains or [None]}
    history = weights.intent.history_weight > 0
    timed("intent", lambda: [ctx.intent_rows(p, history=history) for p in params.values()])
    started = time.perf_counter()
    workflows = ctx.namespace_workflows(next(iter(params.values())))
    table = workflows.table  # what the first search of each domain would work out: the same values
    table.texts(), table.operations(), table.distinct_sets(), table.set_columns(), table.handoffs()
    for domain in params:
        ctx.domain_has_steps(domain)
        workflows.known_operations(domain)
        if domain is not None:
            workflows.of_domain(domain)
    seconds["intent_vectors"] = round(time.perf_counter() - started, 3)
    default = next(iter(params.values()))
    if weights.scan.scans(ctx.size.get(weights.scan.exact_scan_max).experiences):
        if kept_key(default) is not None:
            timed("texts", lambda: ctx.namespace_texts(default))
    elif ctx.keeps_in_background():
        gateway, namespace = ctx.gateway, ctx.namespace
        if kept_key(default) is not None:
            timed("texts", lambda: ctx.lexical_by_version.get(
                kept_key(default), lambda known: ctx.read_texts(default, known), NamespaceTexts.of))
        if version_applies(default):
            timed("steps", lambda: ctx.steps_by_version.get(namespace, step_rows(gateway, namespace), StepSayers.of))
        if in_process(ctx):
            if version_applies(default):
                timed("vectors", lambda: ctx.vectors_by_version.get(
                    namespace, vector_rows(gateway, namespace), built(gateway, namespace, ctx.vectors_by_version)))
            timed("facts", lambda: ctx.facts_by_version.get(namespace, fact_rows(gateway, namespace), NamespaceFacts))
            timed("feedback", lambda: ctx.feedback_by_version.get(
                namespace, feedback_rows(gateway, namespace), built_feedback(gateway, namespace, ctx.feedback_by_version)))
        ctx.kept_state.saw(True)  # the next search waits for the version, and finds them current
    seconds["total"] = round(time.perf_counter() - began, 3)
    return seconds
