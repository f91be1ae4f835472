"""Ranking metrics for the retrieval benchmark: nDCG@k, Recall@k and MRR, plus a per-set summary.

Pure functions over document ids, so the benchmark, the baselines and kbgraph's own search are
scored by exactly the same code. The definitions are the standard (trec_eval-style) ones, so the
figures are comparable with the reference points in ``shared/data/README.md``:

- a document is **relevant** when its judged relevance is > 0; unjudged documents count as 0;
- **nDCG@k** = DCG@k / IDCG@k with ``DCG@k = Σ_{i=1..k} rel_i / log2(i + 1)`` (rank i from 1,
  linear gain: identical to the ``2^rel − 1`` gain for the binary judgements of the data sets);
  the ideal DCG takes the k highest relevance values of the query's judgements, so a query with
  more than k relevant documents can still reach 1.0;
- **Recall@k** = relevant documents in the top k / all relevant documents of the query;
- **MRR** = 1 / rank of the first relevant document, 0 when none is found. By default over the
  **whole ranking given** (pass ``k`` to cut it at k); :func:`evaluate` reports it over the whole
  ranking, so a baseline that returns only its top 10 gets MRR@10 in effect.

A document id repeated in a ranking counts only at its first position (a ranking that repeats a
relevant document must not gain twice). Queries without any relevant document have no defined
nDCG or recall; :func:`evaluate` skips them and reports how many it skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TypedDict

__all__ = [
    "Evaluation",
    "QueryMetrics",
    "dcg_at_k",
    "evaluate",
    "mrr",
    "ndcg_at_k",
    "ndcg_by_query",
    "recall_at_k",
    "with_queries_replaced",
]


class QueryMetrics(TypedDict):
    """The metrics of one query."""

    ndcg: float
    recall: float
    mrr: float


class Evaluation(TypedDict):
    """The result of :func:`evaluate`.

    ``ndcg``, ``recall`` and ``mrr`` are means over the ``evaluated`` queries (0.0 when there are
    none); ``per_query`` holds the same metrics for each of them. ``skipped`` lists the queries that
    were not scored because their judgements name no relevant document (sorted). ``missing`` lists
    judged queries without a ranking: they *are* scored, as an empty ranking (all metrics 0), so a
    system cannot look better by not answering.
    """

    k: int
    ndcg: float
    recall: float
    mrr: float
    evaluated: int
    skipped: list[str]
    missing: list[str]
    per_query: dict[str, QueryMetrics]


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return k


def _unique(ranked_ids: Iterable[str]) -> list[str]:
    """The ranking with repeats dropped, each id kept at its first position."""
    return list(dict.fromkeys(ranked_ids))


def _relevant(relevance: Mapping[str, float]) -> set[str]:
    return {doc for doc, rel in relevance.items() if rel > 0}


def dcg_at_k(gains: Sequence[float], k: int = 10) -> float:
    """``Σ_{i=1..k} gain_i / log2(i + 1)`` over gains in rank order (rank i counted from 1)."""
    _check_k(k)
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains[:k], start=1))


def ndcg_at_k(ranked_ids: Sequence[str], relevance: Mapping[str, float], k: int = 10) -> float:
    """nDCG@k of one ranking: DCG@k / ideal DCG@k, in [0, 1].

    ``relevance`` maps judged document ids to their relevance (unjudged ids count 0; negative
    judgements are treated as 0). Raises ValueError when no document is relevant: the ideal DCG is
    0 and nDCG undefined; skip such queries (as :func:`evaluate` does) rather than score them 0 or 1.
    """
    _check_k(k)
    if not _relevant(relevance):
        raise ValueError("nDCG is undefined for a query without relevant documents")
    gains = [max(0.0, float(relevance.get(doc, 0.0))) for doc in _unique(ranked_ids)[:k]]
    ideal = sorted((max(0.0, float(rel)) for rel in relevance.values()), reverse=True)
    return dcg_at_k(gains, k) / dcg_at_k(ideal, k)


def recall_at_k(ranked_ids: Sequence[str], relevance: Mapping[str, float], k: int = 10) -> float:
    """Share of the query's relevant documents (relevance > 0) found in the top k, in [0, 1].

    Raises ValueError when the query has no relevant document (recall is undefined).
    """
    _check_k(k)
    relevant = _relevant(relevance)
    if not relevant:
        raise ValueError("recall is undefined for a query without relevant documents")
    found = sum(1 for doc in _unique(ranked_ids)[:k] if doc in relevant)
    return found / len(relevant)


def mrr(ranked_ids: Sequence[str], relevance: Mapping[str, float], k: int | None = None) -> float:
    """Reciprocal rank of the first relevant document: 1/rank, or 0.0 when none is found.

    Over the whole ranking when ``k`` is None (the default), else over its top k (MRR@k). Averaged
    over queries by :func:`evaluate`, this is the mean reciprocal rank. Unlike nDCG it is defined
    (0.0) for a query without relevant documents, but :func:`evaluate` skips those all the same so
    that all three metrics average over the same queries.
    """
    ranking = _unique(ranked_ids)
    if k is not None:
        ranking = ranking[: _check_k(k)]
    relevant = _relevant(relevance)
    for rank, doc in enumerate(ranking, start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0


def evaluate(
    rankings: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, float]],
    k: int = 10,
) -> Evaluation:
    """Scores a system's rankings against relevance judgements; see :class:`Evaluation`.

    ``rankings`` maps query ids to ranked document ids (best first); ``qrels`` maps query ids to
    ``{doc_id: relevance}``. The queries scored are those of ``qrels`` with at least one relevant
    document; a ranking for a query absent from ``qrels`` is ignored (it cannot be judged). nDCG and
    recall are cut at ``k``; MRR looks at the whole ranking given.
    """
    _check_k(k)
    per_query: dict[str, QueryMetrics] = {}
    skipped: list[str] = []
    missing: list[str] = []
    for qid in sorted(qrels):
        relevance = qrels[qid]
        if not _relevant(relevance):
            skipped.append(qid)
            continue
        if qid not in rankings:
            missing.append(qid)
        ranking = rankings.get(qid, [])
        per_query[qid] = QueryMetrics(
            ndcg=ndcg_at_k(ranking, relevance, k),
            recall=recall_at_k(ranking, relevance, k),
            mrr=mrr(ranking, relevance),
        )
    scores = per_query.values()
    return Evaluation(
        k=k,
        ndcg=_mean(m["ndcg"] for m in scores),
        recall=_mean(m["recall"] for m in scores),
        mrr=_mean(m["mrr"] for m in scores),
        evaluated=len(per_query),
        skipped=skipped,
        missing=missing,
        per_query=per_query,
    )


def with_queries_replaced(base: Evaluation, replaced: Evaluation, queries: Iterable[str]) -> Evaluation:
    """``base`` with the figures of ``queries`` taken from ``replaced`` (asked again otherwise: with
    other exclusions or judgements); one of them that ``replaced`` does not judge is skipped. The
    means are over the queries judged after the replacement."""
    swapped = set(queries)
    per_query = {qid: m for qid, m in base["per_query"].items() if qid not in swapped}
    per_query.update({qid: m for qid, m in replaced["per_query"].items() if qid in swapped})
    scores = [per_query[qid] for qid in sorted(per_query)]
    return Evaluation(
        k=base["k"], ndcg=_mean(m["ndcg"] for m in scores), recall=_mean(m["recall"] for m in scores),
        mrr=_mean(m["mrr"] for m in scores), evaluated=len(per_query),
        skipped=sorted({*base["skipped"], *(swapped - set(per_query))}),
        missing=sorted({*(q for q in base["missing"] if q not in swapped), *(q for q in replaced["missing"] if q in swapped)}),
        per_query=per_query)


def ndcg_by_query(evaluated: Mapping[str, Evaluation]) -> dict[str, dict[str, float]]:
    """``{qid: {system: nDCG}}`` from each system's :func:`evaluate` result, by system name."""
    out: dict[str, dict[str, float]] = {}
    for name, result in evaluated.items():
        for qid, metrics in result["per_query"].items():
            out.setdefault(qid, {})[name] = round(metrics["ndcg"], 4)
    return out
