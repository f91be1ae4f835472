"""The systems that rank the student's sets (requests, ``EvalQuery``) in the evaluation pipeline
(kbgraph.search.eval.pipeline): kbgraph under each recipe (kbgraph.search.eval.recipes) over the
part's namespace, and the four baselines (kbgraph.search.eval.baselines) over the part's files.

:class:`Corpora` is what one evaluation run shares across its sets: the documents and baselines of
each list of corpus files (built once: embedding a corpus takes a while), and whose text each
namespace's merged experiences show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from kbgraph.search.eval.baselines import BASELINES, Baseline, Document, TextEmbedder, build_baselines, load_documents_from, rank_queries
from kbgraph.search.eval.data import EvalQuery
from kbgraph.search.eval.pipeline import BaselineSystem, CorpusPart, KbgraphSystem, Progress, Ranked, Rankings, Systems
from kbgraph.search.eval.ranking import search_rankings
from kbgraph.search.eval.recipes import KBGRAPH, Recipe
from kbgraph.search.eval.shown_text import Merged, merged_experiences, own_text_runs, run_problems, shown_runs
from kbgraph.search.student import StudentRetriever
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["Corpora", "SearchingKb", "StudentPart", "student_systems"]

StudentPart = CorpusPart[EvalQuery]


class SearchingKb(Protocol):
    """What ranking needs of an open knowledge base."""

    @property
    def student(self) -> StudentRetriever: ...
    @property
    def gateway(self) -> Neo4jGateway: ...


class Corpora:
    """The documents and baselines of each list of corpus files, and whose text each namespace's
    merged experiences show: each found once per run."""

    def __init__(self, embedder: TextEmbedder):
        self.embedder = embedder
        self._documents: dict[tuple[Path, ...], list[Document]] = {}
        self._baselines: dict[tuple[Path, ...], dict[str, Baseline]] = {}
        self._merged: dict[str, list[Merged]] = {}
        self._shown: dict[str, dict[str, frozenset[str]]] = {}

    def documents(self, files: Sequence[Path]) -> list[Document]:
        """The documents of these files (read once per run)."""
        key = tuple(files)
        if key not in self._documents:
            self._documents[key] = load_documents_from(files)
        return self._documents[key]

    def baselines(self, files: Sequence[Path]) -> dict[str, Baseline]:
        """The baselines of these files, by name (built once per run)."""
        key = tuple(files)
        if key not in self._baselines:
            self._baselines[key] = build_baselines(self.documents(files), self.embedder)
        return self._baselines[key]

    def own_text_runs(self, gateway: Neo4jGateway, part: StudentPart) -> dict[str, frozenset[str]]:
        """By query of the part: the runs besides its exclusions that experiences showing only its
        excluded runs' own text stand for (kbgraph.search.eval.shown_text.own_text_runs; queries with
        none left out). Whose text each merged experience shows is found once per namespace of the
        run (its contents do not change while the run goes on); nothing is read when no query
        excludes a run."""
        if not any(q.exclude for q in part.queries):
            return {}
        if part.namespace not in self._shown:
            self._merged[part.namespace] = merged_experiences(gateway, part.namespace)
            self._shown[part.namespace] = shown_runs(self._merged[part.namespace], run_problems(part.files))
        members = {experience_id: sources for experience_id, _, sources in self._merged[part.namespace]}
        found = {q.qid: own_text_runs(q.exclude, self._shown[part.namespace], members) for q in part.queries}
        return {qid: runs for qid, runs in found.items() if runs}


def student_systems(corpora: Corpora, recipes: Sequence[Recipe], weights: Mapping[str, object], k: int,
                    set_name: str = "", on_progress: Progress | None = None) -> Systems[EvalQuery, SearchingKb]:
    """kbgraph under each recipe (over ``weights``), then every baseline, each ranking ``k`` runs."""

    def kbgraph(recipe: Recipe) -> KbgraphSystem[EvalQuery, SearchingKb]:
        def rank(kb: SearchingKb, part: StudentPart, done: Mapping[str, Rankings]) -> Ranked:
            progress = _stage(on_progress, f"{set_name}: {recipe.name}" if set_name else recipe.name)
            return Ranked(search_rankings(kb.student, kb.gateway, part.queries, k, recipe.on(weights) or None,
                                          on_progress=progress))
        return KbgraphSystem(recipe.name, rank)

    def baseline(name: str) -> BaselineSystem[EvalQuery]:
        def rank(part: StudentPart) -> Ranked:
            return Ranked(rank_queries(corpora.baselines(part.files)[name], part.queries, k))
        return BaselineSystem(name, rank)

    return Systems(tuple(kbgraph(recipe) for recipe in recipes), tuple(baseline(name) for name in BASELINES))


def _stage(on_progress: Progress | None, label: str) -> Progress | None:
    if on_progress is None:
        return None

    def report(stage: str, done: int, total: int) -> None:
        on_progress(label if stage == KBGRAPH.name else f"{label} ({stage})", done, total)

    return report
