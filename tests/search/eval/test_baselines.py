"""The three reference baselines reproduce the nDCG@10 table of shared/data/README.md on the real
data with the real all-MiniLM-L6-v2 (no Neo4j), each within ±0.01:

=========  ======================  ======================  ======================
set        TF-IDF (README / here)  MiniLM (README / here)  hybrid (README / here)
=========  ======================  ======================  ======================
retail     0.116 / 0.1166          0.227 / 0.2240          0.221 / 0.2164
webarena   0.894 / 0.8939          0.831 / 0.8306          0.894 / 0.8938
=========  ======================  ======================  ======================

TF-IDF matches only with English stop words removed (see baselines.TFIDF_SETTINGS); the hybrid
matches with raw cosines and 0 for a channel that did not retrieve a candidate (see
baselines.fuse_candidates). The embeddings are cached on disk, so after the first run (which embeds
~1,459 documents and ~870 queries) this module takes a few seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.search.eval.baselines import (
    Baseline,
    Document,
    HybridBaseline,
    MiniLMBaseline,
    TfidfBaseline,
    document_text,
    fuse_candidates,
    load_documents,
    rank_queries,
    top_k_indices,
)
from kbgraph.search.eval.data import EvalDataError, EvalQuery, load_qrels, load_queries, qrels_by_query
from kbgraph.search.eval.metrics import evaluate
from tests.conftest import SHARED_DATA

README_NDCG = {
    ("retail", "tfidf"): 0.116, ("retail", "minilm"): 0.227, ("retail", "hybrid"): 0.221,
    ("webarena", "tfidf"): 0.894, ("webarena", "minilm"): 0.831, ("webarena", "hybrid"): 0.894,
}


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    return load_documents(SHARED_DATA / "trajectories")


@pytest.fixture(scope="module")
def baselines(documents: list[Document], embedder: CachedEmbedder) -> dict[str, Baseline]:
    tfidf = TfidfBaseline(documents)
    minilm = MiniLMBaseline(documents, embedder)
    return {"tfidf": tfidf, "minilm": minilm, "hybrid": HybridBaseline(tfidf, minilm)}


def _eval_set(name: str) -> tuple[list[EvalQuery], dict[str, dict[str, float]]]:
    folder = SHARED_DATA / "eval"
    return load_queries(folder / f"{name}_queries.jsonl"), qrels_by_query(load_qrels(folder / f"{name}_qrels.jsonl"))


def test_corpus_is_all_four_files(documents: list[Document]) -> None:
    assert len(documents) == 500 + 50 + 97 + 812
    by_id = {doc.id: doc for doc in documents}
    assert by_id["webarena-0"].text == "What is the top-1 best-selling product in 2022"
    retail = by_id["retail-train-0"]
    assert retail.text.startswith("Return #W6067464 via credit_card_4190576")
    assert retail.text.endswith(" return_delivered_order_items")


@pytest.mark.slow
@pytest.mark.parametrize("eval_set", ["retail", "webarena"])
def test_reproduces_readme_ndcg(eval_set: str, baselines: dict[str, Baseline]) -> None:
    queries, qrels = _eval_set(eval_set)
    measured = {}
    for name, baseline in baselines.items():
        rankings = rank_queries(baseline, queries, k=10)
        for query in queries:
            assert not query.exclude & set(rankings[query.qid]), f"{query.qid} ranks an excluded document"
            assert len(rankings[query.qid]) == 10
        result = evaluate(rankings, qrels, k=10)
        assert result["evaluated"] == len(queries) and not result["skipped"] and not result["missing"]
        measured[name] = result["ndcg"]
    for name, value in measured.items():
        assert value == pytest.approx(README_NDCG[(eval_set, name)], abs=0.01), (eval_set, measured)


# --------------------------------------------------------------------------- small, exact behaviour


def test_document_text_is_task_then_action_names() -> None:
    assert document_text("Return #W1", ["find_user", "return_items"]) == "Return #W1 find_user return_items"
    assert document_text("What is the top product", []) == "What is the top product"


def test_top_k_indices_excludes_and_breaks_ties_by_corpus_order() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.1])
    assert top_k_indices(scores, 3).tolist() == [1, 0, 2]
    assert top_k_indices(scores, 3, frozenset({1})).tolist() == [0, 2, 3]
    assert top_k_indices(scores, 10, frozenset({1, 2})).tolist() == [0, 3]  # never pads with excluded


def test_fuse_candidates_by_hand() -> None:
    # k=1, depth=2: lexical top-2 = {0, 1}, semantic top-2 = {2, 1}; candidates 0, 1, 2
    lexical = np.array([0.8, 0.4, 0.0, 0.3])
    semantic = np.array([0.1, 0.6, 0.9, 0.5])
    # 0: 0.5·0.8 + 0 (not in semantic top-2) = 0.40; 1: 0.5·0.4 + 0.5·0.6 = 0.50; 2: 0 + 0.45
    assert fuse_candidates(lexical, semantic, k=1).tolist() == [1]
    assert fuse_candidates(lexical, semantic, k=1, depth=1).tolist() == [2]  # 0 → 0.40, 2 → 0.45
    # 1 excluded: lexical top-2 = {0, 3}, semantic top-2 = {2, 3}; 0 → 0.40, 3 → 0.15 + 0.25, 2 → 0.45
    assert fuse_candidates(lexical, semantic, k=1, excluded=frozenset({1})).tolist() == [2]
    assert fuse_candidates(lexical, semantic, k=1, alpha=1.0).tolist() == [0]
    with pytest.raises(ValueError, match="alpha"):
        fuse_candidates(lexical, semantic, k=1, alpha=1.5)


class _FakeEmbedder:
    """Unit vectors from a fixed table, so the dense baseline can be checked without a model."""

    table = {"kettle": [1.0, 0.0], "clock": [0.0, 1.0], "kettle clock": [0.6, 0.8], "q": [0.8, 0.6]}

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_baselines_rank_and_exclude_without_a_model() -> None:
    docs = [Document("d0", "x", "kettle"), Document("d1", "x", "clock"), Document("d2", "x", "kettle clock")]
    minilm = MiniLMBaseline(docs, _FakeEmbedder())
    assert minilm.rank("q", k=3) == ["d2", "d0", "d1"]  # cos 0.96, 0.8, 0.6
    assert minilm.rank("q", k=2, exclude={"d2", "unknown"}) == ["d0", "d1"]
    tfidf = TfidfBaseline(docs)
    assert tfidf.rank("the clock", k=1) == ["d1"]
    assert HybridBaseline(tfidf, minilm).rank("kettle", k=2, exclude={"d0"})[0] == "d2"


def test_load_documents_reports_bad_lines(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "t1", "task": "x"}\n{"id": "t1", "task": "y"}\n{"id": "t2"}\n')
    with pytest.raises(EvalDataError) as caught:
        load_documents(tmp_path)
    assert caught.value.problems == [
        f"{tmp_path / 'a.jsonl'}:2: id: 't1' repeats {tmp_path / 'a.jsonl'}:1",
        f"{tmp_path / 'a.jsonl'}:3: task: Field required",
    ]
