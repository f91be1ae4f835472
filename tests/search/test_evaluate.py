"""The retrieval benchmark end to end: the shared trajectories ingested into a fresh namespace,
kbgraph's search against the three baselines computed in the same run (issue 4's quality bar)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.search.evaluate import run_eval
from tests.conftest import SHARED_DATA

TRAJECTORIES = SHARED_DATA / "trajectories"
EVAL = SHARED_DATA / "eval"
#: nDCG@10 kbgraph must reach on each development set (the issue's targets).
TARGETS = {"retail": 0.40, "webarena": 0.92}


@pytest.fixture
def shared_kb(kb: KnowledgeBase) -> KnowledgeBase:
    if not TRAJECTORIES.is_dir():
        pytest.fail(f"the shared data is missing: {TRAJECTORIES}")
    kb.ingest(sorted(TRAJECTORIES.glob("*.jsonl")))
    return kb


def test_kbgraph_beats_every_baseline_of_the_same_run_on_both_sets(shared_kb: KnowledgeBase) -> None:
    for name, target in TARGETS.items():
        report = run_eval(shared_kb.student, shared_kb.gateway, shared_kb.embedder, EVAL / f"{name}_queries.jsonl",
                          EVAL / f"{name}_qrels.jsonl", TRAJECTORIES, per_query=True)
        scores = {s.system: s for s in report.systems}
        assert set(scores) == {"kbgraph", "tfidf", "minilm_cosine", "agent_kb_hybrid"}
        ours = scores["kbgraph"]
        assert ours.evaluated == len(Path(EVAL / f"{name}_queries.jsonl").read_text().splitlines())
        best = max(s.ndcg for n, s in scores.items() if n != "kbgraph")
        assert report.kbgraph_minus_best_baseline == pytest.approx(ours.ndcg - best, abs=1e-4)
        assert ours.ndcg > best, f"{name}: kbgraph {ours.ndcg} vs best baseline {best}"
        assert ours.ndcg >= target, f"{name}: nDCG@10 {ours.ndcg} below the target {target}"
        assert all(set(per) == set(scores) for per in report.per_query.values())
