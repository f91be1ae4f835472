"""``kbgraph demo``, the main job: the managed Neo4j, the schema and the whole ingestion pipeline on
the bundled samples, then their counts, meta-concept documents, a search, a refine and the Browser URL."""

from __future__ import annotations

import json
import time
from importlib import resources
from typing import Any

import typer

from kbgraph.cli._common import JsonOption, NamespaceOption, _print_json, _progress, _settings, add_commands, out
from kbgraph.cli.records import _print_stats
from kbgraph.embedders import load_model
from kbgraph.kb import KnowledgeBase
from kbgraph.store.managed import ManagedNeo4j
from kbgraph.core.terminal import markup_safe


def register(app: typer.Typer) -> None:
    add_commands(app, {"demo": demo})


#: The error an agent hits in the demo's refine: the hotel sample runs hit it too, and one recovered.
DEMO_PROBLEM: dict[str, Any] = {
    "action": "book_room",
    "arguments": {"hotel": "harbour_view", "payments": [{"payment_id": "gift_card_1", "amount": 100},
                                                         {"payment_id": "credit_card_2", "amount": 250}]},
    "error": "Error: payments do not cover the total: total is 420, paid 350",
}
DEMO_QUERY = "A customer received a damaged item and wants to send it back for a refund"
#: Searched once before DEMO_QUERY: a fresh server plans each query at its first run, and the model
#: loads at its first text, which would otherwise be counted as the shown search's time.
WARM_UP_QUERY = "Cancel a pending order for a customer"


def _seconds(since: float) -> float:
    return round(time.perf_counter() - since, 2)


def timing_lines(timings: dict[str, float]) -> list[str]:
    """What the demo's time went to: start-up, ingestion, the first (cold) search and the shown one."""
    return [
        f"start-up {timings['startup_s']:.1f} s (the Neo4j server and connection, the schema), "
        f"loading the embedding model {timings['model_load_s']:.1f} s; ingestion {timings['ingest_s']:.1f} s",
        f"first search after start-up {timings['first_search_ms']:.0f} ms (Neo4j plans each query at its first run); "
        f"the search shown, warm: {timings['search_ms']:.0f} ms",
    ]


def demo(namespace: NamespaceOption = None, as_json: JsonOption = False) -> None:
    """The main job: start the managed Neo4j, apply the schema, run the whole ingestion pipeline
    on the bundled sample trajectories (and sample experiences), print the counts, a sample of
    meta-concept documents and the Browser URL."""
    started = time.perf_counter()
    settings = _settings(namespace or "demo")
    samples = resources.files("kbgraph") / "samples"
    timings: dict[str, float] = {}
    with KnowledgeBase.from_settings(settings) as kb, \
            resources.as_file(samples / "trajectories.jsonl") as trajectories, \
            resources.as_file(samples / "experiences.jsonl") as experiences, \
            resources.as_file(samples / "real_runs.jsonl") as real_runs, _progress() as progress:
        timings["startup_s"] = _seconds(started)
        mark = time.perf_counter()
        load_model(kb.embedder)
        timings["model_load_s"] = _seconds(mark)
        task = progress.add_task("ingesting the sample trajectories", total=None)
        mark = time.perf_counter()
        report = kb.ingest([trajectories, experiences, real_runs],
                           on_progress=lambda _s, done, total: progress.update(task, completed=done, total=total))
        timings["ingest_s"] = _seconds(mark)
        result = kb.stats().model_dump()
        documents = kb.gateway.read("meta_concepts_top", kb=kb.namespace, limit=3)
        browser = kb.browser_url
        mark = time.perf_counter()
        kb.search(WARM_UP_QUERY, k=3)
        timings["first_search_ms"] = round((time.perf_counter() - mark) * 1000)
        mark = time.perf_counter()
        search = kb.search(DEMO_QUERY, k=3)
        timings["search_ms"] = round((time.perf_counter() - mark) * 1000)
        refine = kb.refine([DEMO_PROBLEM], domain="hotel", k=2)
    elapsed = round(time.perf_counter() - started, 1)
    if as_json:
        _print_json({**result, "ingest": report.model_dump(), "documents": documents, "browser_url": browser,
                     "search": search.model_dump(mode="json"), "refine": refine.model_dump(mode="json"),
                     "timings": timings, "seconds": elapsed})
        return
    _print_stats(result)
    out.print(f"meta-concepts {report.meta_concepts}, relations: "
              + ", ".join(f"{k} {v}" for k, v in report.relations.items()))
    for doc in documents:
        out.print(f"\n[bold]{markup_safe(doc['name'])}[/] — {doc['experiences']} experiences, version {doc['version']}")
        out.print(doc["document"], markup=False, highlight=False)
    from kbgraph.search.explain import explain_results

    out.print(f"\n[bold]kb.search({DEMO_QUERY!r}, k=3)[/]")
    out.print(explain_results(search), markup=False, highlight=False)
    out.print(f"\n[bold]kb.refine([{json.dumps(DEMO_PROBLEM)}], domain='hotel')[/]", highlight=False)
    for failure in refine.failures[:1]:
        out.print(f"failed the same way: {failure.description}\n  {failure.summary}\n  recovery: {failure.recovery}",
                  markup=False, highlight=False)
    if browser:
        out.print(f"\nNeo4j Browser: {browser}  (user neo4j, password in "
                  f"{ManagedNeo4j.from_settings(settings).password_file})")
        out.print(f'Try in the Browser: MATCH (e:Experience {{kb: "{kb.namespace}"}})-[r]->(n) RETURN e, r, n LIMIT 50',
                  markup=False)
    out.print("")
    for line in timing_lines(timings):
        out.print(line, markup=False, highlight=False)
    out.print(f"done in {elapsed} s")
