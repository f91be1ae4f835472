"""The retrieval benchmark: kbgraph's search against the four baselines, in one run.

Relevance judgements name *trajectories* (``retail-train-6``), while kbgraph returns
*experiences*, each standing for the trajectories it was built from (``source_ids``; merging
pools them; an abstract experience stands for its instances' trajectories). So each ranked
experience is expanded, in rank order, into the trajectories it stands for, skipping ones already
listed and the query's ``exclude`` (its own record, for leave-one-out sets), until ``k`` are
listed. That is what an agent receives: an experience backed by 95 trajectories is one answer
that covers all of them. The expansion follows search's rule for outcomes: the runs that worked
come first, in rank order; a run that failed is listed only after every run that worked (it is
what was tried, not an example to follow).

The baselines (TF-IDF, MiniLM cosine, the Agent KB hybrid, and MiniLM cosine over the successful
runs only) index the same corpus the knowledge base was built from (document = task + step
action names, ../shared/data/README.md) with the same embedder, so the comparison is like for
like. Everything is computed in the run that prints it. So the knowledge base must hold that corpus
and nothing else: ``kbgraph eval`` builds it in a namespace of its own per corpus
(:func:`eval_namespace`), never in the one agents use.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from kbgraph.store.gateway import Neo4jGateway
from kbgraph.search.eval.baselines import (
    HybridBaseline,
    MiniLMBaseline,
    SuccessfulRunsBaseline,
    TextEmbedder,
    TfidfBaseline,
    load_documents,
    rank_queries,
)
from kbgraph.search.eval.data import EvalQuery, load_queries, load_qrels, qrels_by_query
from kbgraph.search.eval.metrics import Evaluation, evaluate
from kbgraph.search.eval.shown_text import own_text_of
from kbgraph.core.weights import WeightChanges
from kbgraph.search.params import QueryStep, SearchQuery, SearchWeights
from kbgraph.search.student import StudentRetriever

__all__ = ["EvalReport", "SystemScores", "eval_namespace", "expand_to_trajectories", "hit_sources", "ndcg_by_query",
           "run_eval", "search_rankings"]


def eval_namespace(corpus: Path, without_domain: str | None = None) -> str:
    """The namespace ``kbgraph eval`` builds ``corpus`` in: ``eval-<folder>-<hash of its path>``;
    with ``without_domain`` (the suite's leave-one-domain-out sets), the corpus less that domain's
    files: ``eval-<folder>-minus-<domain>-<hash>``.

    The baselines index exactly the corpus; a namespace that also held other runs (the agents'
    own, another corpus evaluated before) would rank those too and compare unlike with like."""
    path = str(corpus.resolve())
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", corpus.resolve().name or "corpus")[:40]
    if without_domain is None:
        return f"eval-{name}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"
    held = re.sub(r"[^A-Za-z0-9_.-]+", "-", without_domain)[:30]
    digest = hashlib.sha256(f"{path}\n{without_domain}".encode()).hexdigest()[:8]
    return f"eval-{name}-minus-{held}-{digest}"


Progress = Callable[[str, int, int], None]


class SystemScores(BaseModel):
    system: str
    ndcg: float
    recall: float
    mrr: float
    evaluated: int
    seconds: float


class EvalReport(BaseModel):
    queries: str
    qrels: str
    k: int
    namespace: str
    systems: list[SystemScores]
    best_baseline: str
    kbgraph_minus_best_baseline: float
    per_query: dict[str, dict[str, float]] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


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


def search_query_for(query: EvalQuery, k: int, also_exclude: Sequence[str] = ()) -> SearchQuery:
    """The search of one evaluation query; ``also_exclude``: experience ids left out besides the
    query's own ``exclude`` (see kbgraph.search.eval.shown_text)."""
    steps = [QueryStep(action=s.action, arguments=s.arguments, error=s.error) for s in (query.steps_so_far or [])]
    return SearchQuery(task=query.query, domain=query.domain, steps_so_far=steps, k=k,
                       exclude=sorted({*query.exclude, *also_exclude}))


def search_rankings(
    retriever: StudentRetriever,
    gateway: Neo4jGateway,
    queries: Sequence[EvalQuery],
    k: int = 10,
    weights: SearchWeights | WeightChanges | None = None,
    on_progress: Progress | None = None,
    experiences_per_query: int = 10,
    shown: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, list[str]]:
    """kbgraph's ranking of trajectories for every query (see the module docstring). ``shown``:
    the runs whose text each merged experience shows (:func:`kbgraph.search.eval.shown_text.shown_runs`);
    given, an experience that shows only a query's excluded runs' own text is left out too."""
    rankings: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    failed: dict[str, list[str]] = {}
    for done, query in enumerate(queries, 1):
        own_text = own_text_of(query.exclude, shown) if shown else []
        results = retriever.search(search_query_for(query, experiences_per_query, own_text), weights=weights)
        ids = results.ids()
        worked, lost = hit_sources(gateway, retriever.namespace, [i for i in ids if i not in sources])
        sources.update(worked)
        failed.update(lost)
        rankings[query.qid] = expand_to_trajectories(ids, sources, query.exclude, k, failed)
        if on_progress is not None:
            on_progress("kbgraph", done, len(queries))
    return rankings


def run_eval(
    retriever: StudentRetriever,
    gateway: Neo4jGateway,
    embedder: TextEmbedder,
    queries_path: Path,
    qrels_path: Path,
    corpus: Path,
    k: int = 10,
    weights: SearchWeights | WeightChanges | None = None,
    on_progress: Progress | None = None,
    per_query: bool = False,
) -> EvalReport:
    """nDCG@k, Recall@k and MRR of kbgraph and of the four baselines over the same corpus."""
    queries = load_queries(queries_path)
    qrels = qrels_by_query(load_qrels(qrels_path))
    systems: list[SystemScores] = []
    evaluated: dict[str, Evaluation] = {}

    def score(name: str, ranking: dict[str, list[str]], seconds: float) -> None:
        result = evaluated[name] = evaluate(ranking, qrels, k)
        systems.append(SystemScores(system=name, ndcg=round(result["ndcg"], 4), recall=round(result["recall"], 4),
                                    mrr=round(result["mrr"], 4), evaluated=result["evaluated"], seconds=round(seconds, 2)))

    started = time.perf_counter()
    score("kbgraph", search_rankings(retriever, gateway, queries, k, weights, on_progress), time.perf_counter() - started)

    documents = load_documents(corpus)
    started = time.perf_counter()
    tfidf = TfidfBaseline(documents)
    score("tfidf", rank_queries(tfidf, queries, k), time.perf_counter() - started)
    started = time.perf_counter()
    minilm = MiniLMBaseline(documents, embedder)
    score("minilm_cosine", rank_queries(minilm, queries, k), time.perf_counter() - started)
    started = time.perf_counter()
    score("agent_kb_hybrid", rank_queries(HybridBaseline(tfidf, minilm), queries, k), time.perf_counter() - started)
    started = time.perf_counter()
    score("success_cosine", rank_queries(SuccessfulRunsBaseline(minilm), queries, k), time.perf_counter() - started)
    if on_progress is not None:
        on_progress("baselines", 4, 4)

    baselines = [s for s in systems if s.system != "kbgraph"]
    best = max(baselines, key=lambda s: s.ndcg)
    ours = systems[0]
    report = EvalReport(
        queries=str(queries_path), qrels=str(qrels_path), k=k, namespace=retriever.namespace, systems=systems,
        best_baseline=best.system, kbgraph_minus_best_baseline=round(ours.ndcg - best.ndcg, 4),
    )
    if per_query:
        report.per_query = ndcg_by_query(evaluated)
    return report


def ndcg_by_query(evaluated: Mapping[str, Evaluation]) -> dict[str, dict[str, float]]:
    """``{qid: {system: nDCG}}`` from each system's :func:`evaluate` result, by system name."""
    out: dict[str, dict[str, float]] = {}
    for name, result in evaluated.items():
        for qid, metrics in result["per_query"].items():
            out.setdefault(qid, {})[name] = round(metrics["ndcg"], 4)
    return out
