"""One evaluation pipeline: a set — its queries, their judgements, and the corpus (or, for a
leave-one-domain-out set, the corpora) they are answered from — goes through
:meth:`Workspace.run_set`, which opens each corpus's namespace ready to search, ranks with kbgraph
under every recipe (kbgraph.search.eval.recipes) and with every baseline over the same files, and
evaluates every ranking the same way. ``kbgraph eval``, the suite's sets and their held-out views
all run through it; they differ only in the set they hand it and the row they make of its result.
Each opens its namespaces with :func:`ready_opener`, and so does the teacher phase
(kbgraph.search.eval.teacher), whose systems and measures are its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from kbgraph.search.eval.baselines import BASELINES, Baseline, Document, TextEmbedder, build_baselines, load_documents_from, rank_queries
from kbgraph.search.eval.cached_namespace import BuildingKb, Note, ready_namespace
from kbgraph.search.eval.data import EvalQuery
from kbgraph.search.eval.ranking import search_rankings
from kbgraph.search.eval.metrics import Evaluation, evaluate
from kbgraph.search.eval.recipes import KBGRAPH, Recipe
from kbgraph.search.eval.shown_text import merged_experiences, own_text_of, run_problems, shown_runs
from kbgraph.search.student import StudentRetriever
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["CorpusPart", "EvalSet", "OpenReady", "Progress", "SearchingKb", "SetRun", "Workspace", "ready_opener"]

Progress = Callable[[str, int, int], None]
Rankings = dict[str, list[str]]


class SearchingKb(Protocol):
    """What ranking needs of an open knowledge base."""

    @property
    def student(self) -> StudentRetriever: ...
    @property
    def gateway(self) -> Neo4jGateway: ...


@dataclass(frozen=True)
class CorpusPart:
    """Queries answered from one corpus (its files, in ingestion order), built in one namespace."""

    namespace: str
    files: tuple[Path, ...]
    queries: tuple[EvalQuery, ...]


@dataclass(frozen=True)
class EvalSet:
    """What the pipeline evaluates: queries in one or more parts, judged by ``qrels``."""

    name: str
    parts: tuple[CorpusPart, ...]
    qrels: Mapping[str, Mapping[str, float]]
    #: Judge only the corpus's own documents: runs left out of it can be found by no system, and a
    #: query whose relevant runs were all left out is not evaluated (the held-out view).
    judge_present_only: bool = False


#: Opens a part's namespace ready to search (built, or checked and reused).
OpenReady = Callable[[CorpusPart], AbstractContextManager[SearchingKb]]

Kb = TypeVar("Kb", bound=BuildingKb)


def ready_opener(open_kb: Callable[[str], AbstractContextManager[Kb]], on_progress: Progress | None,
                 note: Note) -> Callable[[CorpusPart], AbstractContextManager[Kb]]:
    """Opens a part's namespace (``open_kb``), checked — or built from the part's files — the first
    time the run opens it (kbgraph.search.eval.cached_namespace); ``note`` hears when one is rebuilt."""
    ready: set[str] = set()

    @contextmanager
    def open_ready(part: CorpusPart) -> Iterator[Kb]:
        with open_kb(part.namespace) as kb:
            if part.namespace not in ready:
                ready_namespace(kb, part.namespace, part.files, _ingest_progress(on_progress, part.namespace), note)
                ready.add(part.namespace)
            yield kb

    return open_ready


def _ingest_progress(on_progress: Progress | None, namespace: str) -> Callable[[str, int, int | None], None] | None:
    if on_progress is None:
        return None

    def report(stage: str, done: int, total: int | None) -> None:
        on_progress(f"{namespace}: ingest ({stage})", done, total or 0)

    return report


@dataclass
class SetRun:
    """Every system's evaluation of one set, by name: the recipes' (in order), then the baselines'."""

    evaluated: dict[str, Evaluation]
    #: Time spent ranking, by system.
    seconds: dict[str, float]
    #: By recipe that hides own text: the queries it hid an experience from.
    hidden: dict[str, int] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)

    def ndcg(self) -> dict[str, float]:
        return {name: round(result["ndcg"], 4) for name, result in self.evaluated.items()}

    def best_baseline(self) -> str:
        """The baseline with the highest nDCG (the first of BASELINES on a tie)."""
        scores = self.ndcg()
        return max(BASELINES, key=lambda name: scores[name])


class Workspace:
    """What one evaluation run shares across its sets: the way to open a namespace ready to search,
    the baselines and documents of each list of corpus files (built once: embedding a corpus takes
    a while), and whose text each namespace's merged experiences show."""

    def __init__(self, open_ready: OpenReady, embedder: TextEmbedder, on_progress: Progress | None = None):
        self.open_ready = open_ready
        self.embedder = embedder
        self.on_progress = on_progress
        self._documents: dict[tuple[Path, ...], list[Document]] = {}
        self._baselines: dict[tuple[Path, ...], dict[str, Baseline]] = {}
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

    def run_set(self, eval_set: EvalSet, recipes: Sequence[Recipe], weights: Mapping[str, object], k: int) -> SetRun:
        """Rank every query of ``eval_set`` with kbgraph under each recipe (over ``weights``) and
        with every baseline, and evaluate each ranking at ``k``."""
        rankings: dict[str, Rankings] = {name: {} for name in [*(r.name for r in recipes), *BASELINES]}
        run = SetRun(evaluated={}, seconds=dict.fromkeys(rankings, 0.0),
                     hidden={r.name: 0 for r in recipes if r.hides_own_text})
        for part in eval_set.parts:
            run.namespaces.append(part.namespace)
            with self.open_ready(part) as kb:
                for recipe in recipes:
                    started = time.perf_counter()
                    rankings[recipe.name].update(self._kbgraph(kb, part, recipe, recipes, weights, k, rankings, run, eval_set.name))
                    run.seconds[recipe.name] += time.perf_counter() - started
            for name, baseline in self.baselines(part.files).items():
                started = time.perf_counter()
                rankings[name].update(rank_queries(baseline, part.queries, k))
                run.seconds[name] += time.perf_counter() - started
        if self.on_progress is not None:
            self.on_progress(_label(eval_set.name, "baselines"), len(BASELINES), len(BASELINES))
        judged = eval_set.qrels
        if eval_set.judge_present_only:
            present = {document.id for part in eval_set.parts for document in self.documents(part.files)}
            judged = {qid: {doc: rel for doc, rel in relevance.items() if doc in present} for qid, relevance in judged.items()}
        run.evaluated = {name: evaluate(ranking, judged, k) for name, ranking in rankings.items()}
        return run

    def _kbgraph(self, kb: SearchingKb, part: CorpusPart, recipe: Recipe, recipes: Sequence[Recipe],
                 weights: Mapping[str, object], k: int, done: Mapping[str, Rankings], run: SetRun, set_name: str) -> Rankings:
        """kbgraph's rankings of the part's queries under ``recipe``. A recipe that hides own text
        searches again only the queries with an experience to hide, and takes the others' rankings
        from an earlier recipe with the same weights (searched now when there is none)."""
        config = recipe.on(weights)
        progress = _stage(self.on_progress, _label(set_name, recipe.name))
        if not recipe.hides_own_text:
            return search_rankings(kb.student, kb.gateway, part.queries, k, config or None, on_progress=progress)
        shown = self._shown_in(kb.gateway, part)
        hiding = [q for q in part.queries if own_text_of(q.exclude, shown)]
        run.hidden[recipe.name] += len(hiding)
        plain = [q for q in part.queries if not own_text_of(q.exclude, shown)]
        same = next((r.name for r in recipes if not r.hides_own_text and r.on(weights) == config), None)
        out = ({q.qid: done[same][q.qid] for q in plain} if same is not None
               else search_rankings(kb.student, kb.gateway, plain, k, config or None, on_progress=progress))
        if hiding:
            out.update(search_rankings(kb.student, kb.gateway, hiding, k, config or None, shown=shown, on_progress=progress))
        return out

    def _shown_in(self, gateway: Neo4jGateway, part: CorpusPart) -> dict[str, frozenset[str]]:
        """Whose text each merged experience of the part's namespace shows, found once per namespace
        of the run (its contents do not change while the run goes on); nothing to find (no read)
        when no query excludes a run."""
        if not any(q.exclude for q in part.queries):
            return {}
        if part.namespace not in self._shown:
            self._shown[part.namespace] = shown_runs(merged_experiences(gateway, part.namespace), run_problems(part.files))
        return self._shown[part.namespace]


def _label(set_name: str, system: str) -> str:
    return f"{set_name}: {system}" if set_name else system


def _stage(on_progress: Progress | None, label: str) -> Progress | None:
    if on_progress is None:
        return None

    def report(stage: str, done: int, total: int) -> None:
        on_progress(label if stage == KBGRAPH.name else f"{label} ({stage})", done, total)

    return report
