"""The reference baselines of the retrieval benchmark: TF-IDF, MiniLM cosine, the Agent KB hybrid,
and MiniLM cosine over the successful runs only.

They rank the trajectory documents of ``shared/data/trajectories`` (all four files) whose text is
``task + " " + the step action names`` joined by spaces, exactly as ``shared/data/README.md``
describes, so their figures reproduce the reference table there (tests/search/eval/test_baselines.py):

====================  ========  =============  =================
nDCG@10               TF-IDF    MiniLM cosine  hybrid 0.5 / 0.5
====================  ========  =============  =================
retail   (README)     0.116     0.227          0.221
retail   (here)       0.117     0.224          0.216
webarena (README)     0.894     0.831          0.894
webarena (here)       0.894     0.831          0.894
====================  ========  =============  =================

The last one, ``success_cosine``, is the outcome-aware floor: it does nothing but drop the runs
that failed (``outcome.success`` false) before ranking by MiniLM cosine. Any memory that knows
outcomes must beat it; on a corpus without failures it is MiniLM cosine exactly.

Every baseline ranks with ``rank(query_text, k, exclude=set()) -> list[doc_id]``: the ``k`` best
documents, best first, never one of ``exclude`` (the leave-one-out ids of a query). Excluded
documents are removed *before* anything else, so they neither take a top-k place nor a hybrid
candidate slot. Ties are broken by corpus order (files by name, then line order), so rankings are
deterministic. Nothing is loaded at import time; the embedder is injected.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.models import Trajectory
from kbgraph.core.errors import validation_problems
from kbgraph.search.eval.data import EvalDataError, EvalQuery

__all__ = [
    "BASELINES",
    "HYBRID_ALPHA",
    "HYBRID_DEPTH",
    "TFIDF_SETTINGS",
    "Baseline",
    "Document",
    "HybridBaseline",
    "MiniLMBaseline",
    "SuccessfulRunsBaseline",
    "TextEmbedder",
    "TfidfBaseline",
    "build_baselines",
    "document_text",
    "fuse_candidates",
    "load_documents",
    "load_documents_from",
    "rank_queries",
    "top_k_indices",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: TfidfVectorizer settings of the TF-IDF baseline: scikit-learn's defaults (lower-casing, tokens of
#: 2+ word characters, raw term counts, smoothed idf, L2-normalised rows so a dot product is the
#: cosine) plus the built-in English stop-word list. With the stop words the figures match the
#: README (0.117 / 0.894); measured alternatives, nDCG@10 retail / webarena: plain defaults
#: 0.041 / 0.934 (retail queries are long customer stories whose stop words swamp the short
#: retail task texts), sublinear tf 0.074 / 0.937, stop words + sublinear tf 0.149 / 0.898,
#: stop words + bigrams 0.131 / 0.908, min_df=2 0.043 / 0.945.
TFIDF_SETTINGS: dict[str, object] = {"stop_words": "english"}

#: Weight of the lexical (TF-IDF) part of the hybrid; 0.5 as in Agent KB §E.2 and the README.
HYBRID_ALPHA = 0.5
#: Each channel contributes its top ``HYBRID_DEPTH · k`` documents to the hybrid's candidates.
HYBRID_DEPTH = 2


class TextEmbedder(Protocol):
    """What the MiniLM baseline needs: ``embed(texts)`` → one unit-length row per text."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


class Baseline(Protocol):
    """A ranker of the benchmark corpus (each baseline here; kbgraph's own search can be one too)."""

    def rank(self, query_text: str, k: int = 10, exclude: Set[str] = frozenset()) -> list[str]: ...

    def rank_many(self, queries: Sequence[tuple[str, Set[str]]], k: int = 10) -> list[list[str]]: ...


@dataclass(frozen=True)
class Document:
    """One trajectory as the baselines see it: its id, domain, the text that is indexed, and
    whether its run succeeded."""

    id: str
    domain: str
    text: str
    succeeded: bool = True


def document_text(task: str, actions: Iterable[str]) -> str:
    """``task`` then the action names, space-separated (README: "document text = task + action
    names"). A trajectory without steps (WebArena intents) is its task alone, with no trailing
    space, so its text (and cached embedding) equals the task's."""
    return " ".join([task, *actions]).strip()


def load_documents(directory: Path) -> list[Document]:
    """The documents of every ``*.jsonl`` file in ``directory`` (files by name, lines in order),
    each validated as a :class:`kbgraph.core.models.Trajectory`. Raises :class:`EvalDataError` listing
    every bad line (``file:line: field: reason``), a repeated id, or a directory without records."""
    documents = load_documents_from(sorted(directory.glob("*.jsonl")))
    if not documents:
        raise EvalDataError([f"{directory}: no trajectories in any *.jsonl file"])
    return documents


def load_documents_from(paths: Sequence[Path]) -> list[Document]:
    """The documents of these files, in the order given (lines in order); see :func:`load_documents`."""
    documents: list[Document] = []
    problems: list[str] = []
    first_seen: dict[str, str] = {}
    for path in paths:
        for record in read_jsonl(path):
            if record.value is None:
                problems.append(f"{record.where}: (record): {record.problem}")
                continue
            try:
                trajectory = Trajectory.model_validate(record.value)
            except ValidationError as error:
                problems += validation_problems(record.where, error)
                continue
            if trajectory.id in first_seen:
                problems.append(f"{record.where}: id: {trajectory.id!r} repeats {first_seen[trajectory.id]}")
                continue
            first_seen[trajectory.id] = record.where
            text = document_text(trajectory.task, (step.action for step in trajectory.steps))
            documents.append(Document(trajectory.id, trajectory.domain, text, trajectory.outcome.success))
    if problems:
        raise EvalDataError(problems)
    return documents


# --------------------------------------------------------------------------- pure ranking helpers


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    return k


def top_k_indices(scores: FloatArray, k: int, excluded: Set[int] = frozenset()) -> IntArray:
    """Indices of the ``k`` highest scores, best first, skipping ``excluded`` indices; ties keep
    index order (a stable sort), so equal scores rank in corpus order."""
    _check_k(k)
    row = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-row, kind="stable")
    if excluded:
        order = order[~np.isin(order, np.fromiter(excluded, dtype=np.intp))]
    top: IntArray = order[:k]
    return top


def fuse_candidates(
    lexical: FloatArray,
    semantic: FloatArray,
    k: int,
    excluded: Set[int] = frozenset(),
    alpha: float = HYBRID_ALPHA,
    depth: int = HYBRID_DEPTH,
) -> IntArray:
    """The Agent KB hybrid over one query: indices of the ``k`` best fused candidates.

    Each channel retrieves its own top ``depth · k`` documents (excluded ones removed first); the
    candidates are the union of the two lists, and each is scored
    ``alpha · lexical + (1 − alpha) · semantic``, where a channel's part is its **raw cosine when
    that channel retrieved the candidate, and 0 otherwise** (as when fusing two retrievers' result
    lists, which carry scores only for what they returned). Semantic cosines are clamped at 0
    (opposite meaning is no evidence, as in :mod:`kbgraph.search.scoring`); TF-IDF cosines are in
    [0, 1] already. No per-query normalisation: both channels are cosines on the same [0, 1]
    scale, and on this corpus min-max normalising either or both channels measured worse and off
    the README's figures (retail 0.156–0.196 against 0.216 unnormalised); so did giving a candidate
    its true cosine in the channel that did not retrieve it (retail 0.184). Ties keep corpus order.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be a positive integer, got {depth!r}")
    if lexical.shape != semantic.shape:
        raise ValueError(f"lexical and semantic must score the same documents ({lexical.shape} vs {semantic.shape})")
    width = depth * _check_k(k)
    from_lexical = top_k_indices(lexical, width, excluded)
    from_semantic = top_k_indices(semantic, width, excluded)
    candidates = np.union1d(from_lexical, from_semantic)  # sorted: corpus order for ties
    lexical_part = np.where(np.isin(candidates, from_lexical), lexical[candidates], 0.0)
    semantic_part = np.where(np.isin(candidates, from_semantic), np.clip(semantic[candidates], 0.0, 1.0), 0.0)
    fused = alpha * lexical_part + (1.0 - alpha) * semantic_part
    order = np.argsort(-fused, kind="stable")[:k]
    chosen: IntArray = candidates[order]
    return chosen


# --------------------------------------------------------------------------- baselines


class _Corpus:
    """The shared part: documents, id → index, and turning exclude ids into indices."""

    def __init__(self, documents: Sequence[Document]):
        if not documents:
            raise ValueError("a baseline needs at least one document")
        self.documents = list(documents)
        self._index = {doc.id: i for i, doc in enumerate(self.documents)}
        if len(self._index) != len(self.documents):
            raise ValueError("document ids must be unique")

    def _excluded(self, exclude: Set[str]) -> frozenset[int]:
        """Indices of the excluded ids; ids not in the corpus exclude nothing."""
        return frozenset(self._index[doc] for doc in exclude if doc in self._index)

    def _ids(self, indices: IntArray) -> list[str]:
        return [self.documents[int(i)].id for i in indices]

    def score_batch(self, texts: Sequence[str]) -> FloatArray:
        """One row of scores over the corpus per query text."""
        raise NotImplementedError

    def rank_many(self, queries: Sequence[tuple[str, Set[str]]], k: int = 10) -> list[list[str]]:
        """:meth:`rank` for many (query_text, exclude) pairs, scoring them in one batch."""
        _check_k(k)
        scores = self.score_batch([text for text, _ in queries])
        return [self._ids(top_k_indices(row, k, self._excluded(exclude)))
                for row, (_, exclude) in zip(scores, queries, strict=True)]

    def rank(self, query_text: str, k: int = 10, exclude: Set[str] = frozenset()) -> list[str]:
        """The ids of the ``k`` best documents for ``query_text``, best first, none of ``exclude``."""
        return self.rank_many([(query_text, exclude)], k)[0]


class TfidfBaseline(_Corpus):
    """TF-IDF cosine: a :class:`~sklearn.feature_extraction.text.TfidfVectorizer` fitted on the
    corpus (settings :data:`TFIDF_SETTINGS` unless given), queries projected onto its vocabulary.
    Rows are L2-normalised, so the dot product is the cosine, in [0, 1]."""

    def __init__(self, documents: Sequence[Document], settings: dict[str, object] | None = None):
        super().__init__(documents)
        from sklearn.feature_extraction.text import TfidfVectorizer  # here: scikit-learn takes seconds to import

        self.vectorizer = TfidfVectorizer(**(TFIDF_SETTINGS if settings is None else settings))
        self._matrix = self.vectorizer.fit_transform([doc.text for doc in self.documents])

    def score_batch(self, texts: Sequence[str]) -> FloatArray:
        queries = self.vectorizer.transform(list(texts))
        scores: FloatArray = np.asarray((queries @ self._matrix.T).toarray(), dtype=np.float64)
        return scores


class MiniLMBaseline(_Corpus):
    """Dense cosine: the dot product of the query's and the documents' unit embeddings. The
    documents are embedded once, when the baseline is built, by the injected ``embedder`` (use a
    :class:`kbgraph.embedders.CachedEmbedder` around MiniLM to embed each text only once ever)."""

    def __init__(self, documents: Sequence[Document], embedder: TextEmbedder):
        super().__init__(documents)
        self.embedder = embedder
        self._vectors = np.asarray(embedder.embed([doc.text for doc in self.documents]), dtype=np.float64)

    def score_batch(self, texts: Sequence[str]) -> FloatArray:
        if not texts:
            return np.zeros((0, len(self.documents)), dtype=np.float64)
        queries = np.asarray(self.embedder.embed(list(texts)), dtype=np.float64)
        scores: FloatArray = queries @ self._vectors.T
        return scores


class HybridBaseline:
    """Agent KB hybrid: ``alpha · TF-IDF cosine + (1 − alpha) · MiniLM cosine`` over each channel's
    top ``depth · k`` candidates; see :func:`fuse_candidates` for how the scores are combined."""

    def __init__(self, lexical: TfidfBaseline, semantic: MiniLMBaseline,
                 alpha: float = HYBRID_ALPHA, depth: int = HYBRID_DEPTH):
        if [d.id for d in lexical.documents] != [d.id for d in semantic.documents]:
            raise ValueError("the lexical and semantic baselines must index the same documents in the same order")
        self.lexical = lexical
        self.semantic = semantic
        self.documents = lexical.documents
        self.alpha = alpha
        self.depth = depth

    def rank_many(self, queries: Sequence[tuple[str, Set[str]]], k: int = 10) -> list[list[str]]:
        """:meth:`rank` for many (query_text, exclude) pairs, each channel scoring them in one batch."""
        _check_k(k)
        texts = [text for text, _ in queries]
        lexical, semantic = self.lexical.score_batch(texts), self.semantic.score_batch(texts)
        out = []
        for (_, exclude), lex_row, sem_row in zip(queries, lexical, semantic, strict=True):
            excluded = self.lexical._excluded(exclude)
            out.append(self.lexical._ids(fuse_candidates(lex_row, sem_row, k, excluded, self.alpha, self.depth)))
        return out

    def rank(self, query_text: str, k: int = 10, exclude: Set[str] = frozenset()) -> list[str]:
        """The ids of the ``k`` best fused documents for ``query_text``, best first, none of ``exclude``."""
        return self.rank_many([(query_text, exclude)], k)[0]


class SuccessfulRunsBaseline:
    """MiniLM cosine over the successful runs only: the failed ones are excluded from every
    ranking, as if they were each query's own record. The baseline that only drops failures."""

    def __init__(self, semantic: MiniLMBaseline):
        self.semantic = semantic
        self.documents = semantic.documents
        self.failed = frozenset(doc.id for doc in semantic.documents if not doc.succeeded)

    def rank_many(self, queries: Sequence[tuple[str, Set[str]]], k: int = 10) -> list[list[str]]:
        return self.semantic.rank_many([(text, self.failed | set(exclude)) for text, exclude in queries], k)

    def rank(self, query_text: str, k: int = 10, exclude: Set[str] = frozenset()) -> list[str]:
        return self.rank_many([(query_text, exclude)], k)[0]


def rank_queries(baseline: Baseline, queries: Sequence[EvalQuery], k: int = 10) -> dict[str, list[str]]:
    """``{qid: ranking}`` for the benchmark queries (query text only, each query's ``exclude``
    removed), the shape :func:`kbgraph.search.eval.metrics.evaluate` takes."""
    rankings = baseline.rank_many([(query.query, query.exclude) for query in queries], k)
    return {query.qid: ranking for query, ranking in zip(queries, rankings, strict=True)}


#: The baselines by name, in the order a table lists them (a tie for the best goes to the first).
BASELINES: tuple[str, ...] = ("tfidf", "minilm_cosine", "agent_kb_hybrid", "success_cosine")


def build_baselines(documents: Sequence[Document], embedder: TextEmbedder) -> dict[str, Baseline]:
    """The four baselines of one corpus, by the names of :data:`BASELINES` (the corpus is embedded
    once; the hybrid and the successful-runs ranker reuse the TF-IDF and MiniLM indexes)."""
    tfidf, minilm = TfidfBaseline(documents), MiniLMBaseline(documents, embedder)
    built: dict[str, Baseline] = {"tfidf": tfidf, "minilm_cosine": minilm, "agent_kb_hybrid": HybridBaseline(tfidf, minilm),
                                  "success_cosine": SuccessfulRunsBaseline(minilm)}
    return {name: built[name] for name in BASELINES}
