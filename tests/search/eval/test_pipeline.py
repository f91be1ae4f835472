"""The evaluation pipeline (kbgraph.search.eval.pipeline.run_set) over any kind of query: each part's
namespace is open while kbgraph's systems rank it, the baselines rank it from the part alone, every
ranking is judged by the same metrics, and a system's row (SystemScores) holds the figures the set
reports. Pure: the systems here are plain functions, as the teacher phase's baselines are."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from kbgraph.search.eval.pipeline import (BaselineSystem, CorpusPart, EvalSet, KbgraphSystem, Ranked, Rankings, SetRun,
                                          Systems, run_set)
from kbgraph.search.eval.report import SystemScores


@dataclass(frozen=True)
class Ask:
    qid: str


@dataclass
class Namespace:
    name: str
    open: bool = True


PARTS = (CorpusPart("ns-a", (Path("a.jsonl"),), (Ask("q1"), Ask("q2"))), CorpusPart("ns-b", (Path("b.jsonl"),), (Ask("q3"),)))
QRELS = {"q1": {"r1": 1.0}, "q2": {"r2": 1.0}, "q3": {"r3": 1.0}}


def first_right(part: CorpusPart[Ask]) -> Rankings:
    return {q.qid: [f"r{q.qid[1:]}", "x"] for q in part.queries}


def second_right(part: CorpusPart[Ask]) -> Rankings:
    return {q.qid: ["x", f"r{q.qid[1:]}"] for q in part.queries}


def run(systems: Systems[Ask, Namespace], eval_set: EvalSet[Ask] | None = None) -> tuple[SetRun, list[str]]:
    opened: list[str] = []

    @contextmanager
    def open_ready(part: CorpusPart[Ask]) -> Iterator[Namespace]:
        namespace = Namespace(part.namespace)
        opened.append(part.namespace)
        yield namespace
        namespace.open = False

    return run_set(eval_set or EvalSet("toy", PARTS, QRELS), systems, open_ready, k=10), opened


def test_each_part_is_ranked_by_kbgraph_over_its_open_namespace_and_by_the_baselines_from_the_part_alone() -> None:
    seen: list[tuple[str, str, bool]] = []

    def kbgraph(namespace: Namespace, part: CorpusPart[Ask], done: Mapping[str, Rankings]) -> Ranked:
        seen.append(("kbgraph", namespace.name, namespace.open))
        return Ranked(first_right(part))

    def baseline(part: CorpusPart[Ask]) -> Ranked:
        seen.append(("baseline", part.namespace, False))
        return Ranked(second_right(part))

    result, opened = run(Systems((KbgraphSystem("kbgraph", kbgraph),), (BaselineSystem("tfidf", baseline),)))
    assert opened == ["ns-a", "ns-b"]
    assert seen == [("kbgraph", "ns-a", True), ("baseline", "ns-a", False), ("kbgraph", "ns-b", True),
                    ("baseline", "ns-b", False)]
    assert list(result.evaluated) == ["kbgraph", "tfidf"] and result.namespaces == ["ns-a", "ns-b"]
    assert result.ndcg() == {"kbgraph": 1.0, "tfidf": 0.6309}
    assert result.best_baseline() == "tfidf" and result.margin("kbgraph") == pytest.approx(0.3691)


def test_a_later_kbgraph_system_may_reuse_what_an_earlier_one_ranked() -> None:
    def again(namespace: Namespace, part: CorpusPart[Ask], done: Mapping[str, Rankings]) -> Ranked:
        return Ranked({q.qid: done["kbgraph"][q.qid] for q in part.queries})

    result, _ = run(Systems((KbgraphSystem("kbgraph", lambda ns, part, done: Ranked(first_right(part))),
                             KbgraphSystem("again", again)), ()))
    assert result.ndcg() == {"kbgraph": 1.0, "again": 1.0}


def test_the_best_baseline_is_the_first_in_order_on_a_tie() -> None:
    same = BaselineSystem("minilm_cosine", lambda part: Ranked(second_right(part)))
    result, _ = run(Systems((), (BaselineSystem("tfidf", lambda part: Ranked(second_right(part))), same)))
    assert result.best_baseline() == "tfidf"


def test_a_set_measured_by_its_answers_facts_reports_their_share_over_every_query_asked_and_only_the_measures_it_names() -> None:
    """As the teacher phase: nDCG over the judged queries only (q3 has no relevant run), each fact's
    share over all three; recall and MRR are not the set's figures and are absent from its rows."""
    qrels = {"q1": {"r1": 1.0}, "q2": {"r2": 1.0}, "q3": {}}

    def answering(part: CorpusPart[Ask]) -> Ranked:
        return Ranked(first_right(part), {q.qid: {"same_class": True, "good": q.qid == "q1"} for q in part.queries})

    result, _ = run(Systems((), (BaselineSystem("oracle", answering),)), EvalSet("toy", PARTS, qrels, measures=("ndcg",)))
    row = SystemScores.of(result, "oracle")
    assert (row.ndcg, row.same_class, row.good, row.evaluated) == (1.0, 1.0, 0.3333, 3)
    assert list(json.loads(row.model_dump_json())) == ["system", "ndcg", "same_class", "good", "evaluated", "seconds"]


def test_a_set_ranked_only_reports_ndcg_recall_and_mrr_over_the_judged_queries() -> None:
    result, _ = run(Systems((), (BaselineSystem("tfidf", lambda part: Ranked(second_right(part))),)))
    row = SystemScores.of(result, "tfidf")
    assert (row.ndcg, row.recall, row.mrr, row.evaluated) == (0.6309, 1.0, 0.5, 3)
    assert list(json.loads(row.model_dump_json())) == ["system", "ndcg", "recall", "mrr", "evaluated", "seconds"]
