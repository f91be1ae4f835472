"""kbgraph's ranking of trajectories for evaluation queries.

Relevance judgements name *trajectories*, while kbgraph returns *experiences*, each standing for
the trajectories it was built from; so each ranked experience is expanded, in rank order, into the
trajectories it stands for (kbgraph.search.eval.evaluate explains the rule).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kbgraph.core.weights import WeightChanges
from kbgraph.search.eval.data import EvalQuery
from kbgraph.search.params import QueryStep, SearchQuery, SearchWeights
from kbgraph.search.student import StudentRetriever
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["expand_to_trajectories", "hit_sources", "search_query_for", "search_rankings"]

Progress = Callable[[str, int, int], None]


def expand_to_trajectories(
    ranked_ids: Sequence[str], sources: dict[str, list[str]], exclude: frozenset[str] | set[str], k: int,
    failed: dict[str, list[str]] | None = None,
) -> list[str]:
    """The first ``k`` distinct trajectories the ranked experiences stand for, in rank order: first
    the runs that worked (``sources``), then, if places are left, the ones that failed (``failed``)."""
    out: list[str] = []
    if k <= 0:
        return out
    seen = set(exclude)
    for by_id in (sources, failed or {}):
        for experience_id in ranked_ids:
            for source in by_id.get(experience_id, []):
                if source not in seen:
                    seen.add(source)
                    out.append(source)
                    if len(out) == k:
                        return out
    return out


def hit_sources(gateway: Neo4jGateway, namespace: str, ids: Sequence[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The runs each experience stands for: ``(worked, failed)``, each ``{experience id: [run ids]}``."""
    worked: dict[str, list[str]] = {}
    failed: dict[str, list[str]] = {}
    for row in gateway.read("search_hit_sources", kb=namespace, ids=list(ids)) if ids else []:
        worked[row["id"]], failed[row["id"]] = list(row["worked"]), list(row["failed"])
    return worked, failed


def search_query_for(query: EvalQuery, k: int) -> SearchQuery:
    """The search of one evaluation query (its ``exclude`` left out)."""
    steps = [QueryStep(action=s.action, arguments=s.arguments, error=s.error) for s in (query.steps_so_far or [])]
    return SearchQuery(task=query.query, domain=query.domain, steps_so_far=steps, k=k, exclude=sorted(query.exclude))


def search_rankings(
    retriever: StudentRetriever,
    gateway: Neo4jGateway,
    queries: Sequence[EvalQuery],
    k: int = 10,
    weights: SearchWeights | WeightChanges | None = None,
    on_progress: Progress | None = None,
    experiences_per_query: int = 10,
) -> dict[str, list[str]]:
    """kbgraph's ranking of trajectories for every query (see the module docstring)."""
    rankings: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    failed: dict[str, list[str]] = {}
    for done, query in enumerate(queries, 1):
        results = retriever.search(search_query_for(query, experiences_per_query), weights=weights)
        ids = results.ids()
        worked, lost = hit_sources(gateway, retriever.namespace, [i for i in ids if i not in sources])
        sources.update(worked)
        failed.update(lost)
        rankings[query.qid] = expand_to_trajectories(ids, sources, query.exclude, k, failed)
        if on_progress is not None:
            on_progress("kbgraph", done, len(queries))
    return rankings
