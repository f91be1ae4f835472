"""The retrieval benchmark end to end: the shared trajectories (and the real runs) ingested into a
fresh namespace, kbgraph's search against the four baselines computed in the same run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.eval.evaluate import eval_namespace, run_eval
from kbgraph.core.settings import NAMESPACE_PATTERN
from tests.conftest import REAL_RUNS, SHARED_DATA, ingest_shared

TRAJECTORIES = SHARED_DATA / "trajectories"
EVAL = SHARED_DATA / "eval"
#: nDCG@10 kbgraph must reach on each development set (no regression below these).
TARGETS = {"retail": 0.48, "webarena": 0.94}
#: On the real runs kbgraph must beat every baseline of the same run by this much (nDCG@10),
#: the outcome-aware one (MiniLM over the successful runs only) included: issue 11's 0.05 on both.
REAL_MARGIN = {"real_same": 0.05, "real_other": 0.05}
BASELINES = {"tfidf", "minilm_cosine", "agent_kb_hybrid", "success_cosine"}


@pytest.fixture
def shared_kb(kb: KnowledgeBase) -> KnowledgeBase:
    return ingest_shared(kb, TRAJECTORIES)


def test_kbgraph_beats_every_baseline_of_the_same_run_on_both_sets(shared_kb: KnowledgeBase) -> None:
    for name, target in TARGETS.items():
        report = run_eval(shared_kb.student, shared_kb.gateway, shared_kb.embedder, EVAL / f"{name}_queries.jsonl",
                          EVAL / f"{name}_qrels.jsonl", TRAJECTORIES, per_query=True)
        scores = {s.system: s for s in report.systems}
        assert set(scores) == {"kbgraph", *BASELINES}
        # Every run of the gold files succeeded: dropping failures drops nothing.
        assert scores["success_cosine"].ndcg == scores["minilm_cosine"].ndcg
        ours = scores["kbgraph"]
        assert ours.evaluated == len(Path(EVAL / f"{name}_queries.jsonl").read_text().splitlines())
        best = max(s.ndcg for n, s in scores.items() if n != "kbgraph")
        assert report.kbgraph_minus_best_baseline == pytest.approx(ours.ndcg - best, abs=1e-4)
        assert ours.ndcg > best, f"{name}: kbgraph {ours.ndcg} vs best baseline {best}"
        assert ours.ndcg >= target, f"{name}: nDCG@10 {ours.ndcg} below the target {target}"
        assert all(set(per) == set(scores) for per in report.per_query.values())


@pytest.mark.parametrize("name", ["real_same", "real_other"])
def test_on_real_runs_kbgraph_hands_back_what_worked_better_than_dropping_failures(
    real_runs_read_only: KnowledgeBase, name: str
) -> None:
    kb = real_runs_read_only
    report = run_eval(kb.student, kb.gateway, kb.embedder, EVAL / f"{name}_queries.jsonl",
                      EVAL / f"{name}_qrels.jsonl", REAL_RUNS)
    scores = {s.system: s.ndcg for s in report.systems}
    assert set(scores) == {"kbgraph", *BASELINES}
    # Half the runs failed, so the outcome-aware baseline differs from plain cosine here.
    assert scores["success_cosine"] != scores["minilm_cosine"]
    best = max(scores[b] for b in BASELINES)
    assert scores["kbgraph"] >= best + REAL_MARGIN[name], f"{name}: kbgraph {scores['kbgraph']} vs best baseline {best}"


def test_each_corpus_is_evaluated_in_a_namespace_of_its_own(tmp_path: Path) -> None:
    # A namespace that held other runs too would rank them against baselines that index only the corpus.
    (tmp_path / "a" / "runs").mkdir(parents=True)
    (tmp_path / "b" / "runs").mkdir(parents=True)
    first, second = eval_namespace(tmp_path / "a" / "runs"), eval_namespace(tmp_path / "b" / "runs")
    assert first.startswith("eval-runs-") and second.startswith("eval-runs-") and first != second
    assert eval_namespace(tmp_path / "a" / "runs") == first, "the same corpus, the same namespace"
    odd = tmp_path / "my runs: 2026 (copy)"
    odd.mkdir()
    assert re.fullmatch(NAMESPACE_PATTERN, eval_namespace(odd))
