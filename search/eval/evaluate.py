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
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from kbgraph.core.weights import WeightChanges
from kbgraph.search.eval.baselines import TextEmbedder
from kbgraph.search.eval.data import EvalDataError, load_queries, load_qrels, qrels_by_query
from kbgraph.search.eval.metrics import ndcg_by_query
from kbgraph.search.eval.pipeline import CorpusPart, EvalSet, Progress, run_set
from kbgraph.search.eval.ranking import expand_to_trajectories, hit_sources, search_query_for, search_rankings
from kbgraph.search.eval.recipes import KBGRAPH
from kbgraph.search.eval.report import SystemScores
from kbgraph.search.eval.student_systems import Corpora, SearchingKb, StudentPart, student_systems
from kbgraph.search.params import SearchWeights
from kbgraph.search.student import StudentRetriever
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["EvalReport", "SystemScores", "eval_namespace", "expand_to_trajectories", "hit_sources", "ndcg_by_query",
           "run_eval", "search_query_for", "search_rankings"]


def eval_namespace(corpus: Path, without_domain: str | None = None) -> str:
    """The namespace ``kbgraph eval`` builds ``corpus`` in: ``eval-<folder>-<hash of its path>``;
    with ``without_domain`` (the suite's leave-one-domain-out sets), the corpus less that domain's
    files: ``eval-<folder>-minus-<domain>-<hash>``.

    The baselines index exactly the corpus; a namespace that also held other runs (the agents'
    own, another corpus evaluated before) would rank those too and compare unlike with like.

    ``KBGRAPH_EVAL_SALT`` (environment), when set, goes into the hash: the suite then builds
    namespaces of its own instead of the cached ones (a branch that changes what is stored, run
    beside engineers whose checkouts read the cached namespaces as they are)."""
    path = str(corpus.resolve()) + (f"\nsalt {salt}" if (salt := os.environ.get("KBGRAPH_EVAL_SALT")) else "")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", corpus.resolve().name or "corpus")[:40]
    if without_domain is None:
        return f"eval-{name}-{hashlib.sha256(path.encode()).hexdigest()[:8]}"
    held = re.sub(r"[^A-Za-z0-9_.-]+", "-", without_domain)[:30]
    digest = hashlib.sha256(f"{path}\n{without_domain}".encode()).hexdigest()[:8]
    return f"eval-{name}-minus-{held}-{digest}"


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


@dataclass(frozen=True)
class _Open:
    """A namespace the caller has made ready (``kbgraph eval`` ingests the corpus first)."""

    student: StudentRetriever
    gateway: Neo4jGateway


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
    """nDCG@k, Recall@k and MRR of kbgraph and of the four baselines over the same corpus, the
    retriever's namespace holding that corpus, through the evaluation pipeline (kbgraph.search.eval.pipeline)."""
    queries = load_queries(queries_path)
    if isinstance(weights, SearchWeights):
        weights = weights.model_dump()
    files = tuple(sorted(corpus.glob("*.jsonl")))
    corpora = Corpora(embedder)
    if not corpora.documents(files):
        raise EvalDataError([f"{corpus}: no trajectories in any *.jsonl file"])

    @contextmanager
    def open_ready(part: StudentPart) -> Iterator[SearchingKb]:
        yield _Open(retriever, gateway)

    run = run_set(EvalSet("", (CorpusPart(retriever.namespace, files, tuple(queries)),), qrels_by_query(load_qrels(qrels_path))),
                  student_systems(corpora, [KBGRAPH], weights or {}, k, on_progress=on_progress), open_ready, k, on_progress)
    report = EvalReport(
        queries=str(queries_path), qrels=str(qrels_path), k=k, namespace=retriever.namespace,
        systems=[SystemScores.of(run, name) for name in run.evaluated], best_baseline=run.best_baseline(),
        kbgraph_minus_best_baseline=run.margin(KBGRAPH.name),
    )
    if per_query:
        report.per_query = ndcg_by_query(run.evaluated)
    return report
