"""One evaluation pipeline: a set — its queries, their judgements, and the corpus (or, for a
leave-one-domain-out set, the corpora) they are answered from — goes through :func:`run_set`,
which opens each corpus's namespace ready to search (:func:`ready_opener`), ranks its queries with
each of kbgraph's systems over it and with each baseline over the same files, and evaluates every
ranking the same way (kbgraph.search.eval.metrics). ``kbgraph eval``, the suite's sets, their
leak-free views and the teacher phase all run through it; they differ in the set they hand it,
the systems that rank it, and the row they make of its result (kbgraph.search.eval.report).

A set's query type is its own: the student's sets ask with requests (``EvalQuery``; their systems
in kbgraph.search.eval.student_systems), the teacher phase with errored steps (kbgraph.search.eval.teacher).
A system answers with a ranking of document ids per query and, where the set is measured by its
first answer, named facts of that answer per query; :class:`SetRun` holds every system's
evaluation, time, and the share of queries each fact held for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

from kbgraph.search.eval.cached_namespace import BuildingKb, Note, ready_namespace
from kbgraph.search.eval.metrics import Evaluation, evaluate
from kbgraph.search.student import StudentRetriever

__all__ = ["Asked", "BaselineSystem", "CorpusPart", "EvalSet", "KbgraphSystem", "Measure", "Progress", "Ranked",
           "Rankings", "ReadyKb", "SetRun", "Systems", "judged_present", "ready_opener", "run_set"]

Progress = Callable[[str, int, int], None]
#: ``{qid: document ids, best first}``.
Rankings = dict[str, list[str]]
#: A measure of a ranking (kbgraph.search.eval.metrics.evaluate).
Measure = Literal["ndcg", "recall", "mrr"]


class Asked(Protocol):
    """What the pipeline needs of a query: its id (the key of its judgements and rankings)."""

    @property
    def qid(self) -> str: ...


Q = TypeVar("Q", bound=Asked)
#: What a part's open namespace gives kbgraph's systems (an open knowledge base, or a retriever over one).
KbT = TypeVar("KbT")


class ReadyKb(BuildingKb, Protocol):
    """What :func:`ready_opener` needs of an open knowledge base: to build (or check) its namespace,
    and its student search, to search as of the day the namespace was built."""

    @property
    def student(self) -> StudentRetriever: ...


Kb = TypeVar("Kb", bound=ReadyKb)


@dataclass(frozen=True)
class CorpusPart(Generic[Q]):
    """Queries answered from one corpus (its files, in ingestion order), built in one namespace."""

    namespace: str
    files: tuple[Path, ...]
    queries: tuple[Q, ...]


@dataclass(frozen=True)
class EvalSet(Generic[Q]):
    """What the pipeline evaluates: queries in one or more parts, judged by ``qrels`` (a query
    without a relevant document is asked but not judged)."""

    name: str
    parts: tuple[CorpusPart[Q], ...]
    qrels: Mapping[str, Mapping[str, float]]
    #: The measures of a ranking the set reports (its rows leave the others out).
    measures: tuple[Measure, ...] = ("ndcg", "recall", "mrr")


@dataclass(frozen=True)
class Ranked:
    """One system's answer to a part's queries."""

    rankings: Rankings
    #: By query: named facts of the system's answer (of its first match), for a set measured by them.
    facts: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)


@dataclass(frozen=True)
class KbgraphSystem(Generic[Q, KbT]):
    """A kbgraph system: ranks a part's queries over its open namespace, given the rankings of the
    systems before it (by name: one may reuse another's)."""

    name: str
    rank: Callable[[KbT, CorpusPart[Q], Mapping[str, Rankings]], Ranked]


@dataclass(frozen=True)
class BaselineSystem(Generic[Q]):
    """A baseline: ranks a part's queries from the part alone (its files, or what was read of them)."""

    name: str
    rank: Callable[[CorpusPart[Q]], Ranked]


@dataclass(frozen=True)
class Systems(Generic[Q, KbT]):
    """What ranks a set: kbgraph's systems, then the baselines, each in the order its rows list them."""

    kbgraph: tuple[KbgraphSystem[Q, KbT], ...]
    baselines: tuple[BaselineSystem[Q], ...]

    def names(self) -> list[str]:
        return [*(s.name for s in self.kbgraph), *(s.name for s in self.baselines)]


def ready_opener(open_kb: Callable[[str], AbstractContextManager[Kb]], on_progress: Progress | None,
                 note: Note) -> Callable[[CorpusPart[Q]], AbstractContextManager[Kb]]:
    """Opens a part's namespace (``open_kb``), checked — or built from the part's files — the first
    time the run opens it (kbgraph.search.eval.cached_namespace); ``note`` hears when one is rebuilt.
    Its student searches count the day the namespace was built as today (``StudentRetriever.today``):
    utility decays per calendar day, and a kept namespace must rank as it did when it was built,
    whatever day the evaluation runs on."""
    built: dict[str, date] = {}

    @contextmanager
    def open_ready(part: CorpusPart[Q]) -> Iterator[Kb]:
        with open_kb(part.namespace) as kb:
            if part.namespace not in built:
                built[part.namespace] = ready_namespace(kb, part.namespace, part.files,
                                                        _ingest_progress(on_progress, part.namespace), note)
            kb.student.today = built[part.namespace]
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
    """Every system's evaluation of one set, by name: kbgraph's (in order), then the baselines'."""

    evaluated: dict[str, Evaluation]
    #: Time spent ranking, by system.
    seconds: dict[str, float]
    #: The baselines' names, in order.
    baselines: list[str]
    #: The queries asked (judged or not).
    asked: int
    measures: tuple[Measure, ...] = ("ndcg", "recall", "mrr")
    #: By system that answers with facts: each query's.
    facts: dict[str, dict[str, Mapping[str, bool]]] = field(default_factory=dict)
    namespaces: list[str] = field(default_factory=list)

    def ndcg(self) -> dict[str, float]:
        return {name: round(result["ndcg"], 4) for name, result in self.evaluated.items()}

    def best_baseline(self) -> str:
        """The baseline with the highest nDCG (the first in order on a tie)."""
        scores = self.ndcg()
        return max(self.baselines, key=lambda name: scores[name])

    def margin(self, system: str) -> float:
        """``system``'s nDCG minus the best baseline's (each rounded as reported)."""
        scores = self.ndcg()
        return round(scores[system] - scores[self.best_baseline()], 4)

    def shares(self, name: str) -> dict[str, float]:
        """Of every query asked, the share for which each fact of ``name``'s answers held."""
        by_query = self.facts.get(name, {})
        names = list(dict.fromkeys(fact for facts in by_query.values() for fact in facts))
        return {fact: round(sum(facts[fact] for facts in by_query.values()) / max(self.asked, 1), 4) for fact in names}


def run_set(eval_set: EvalSet[Q], systems: Systems[Q, KbT], open_ready: Callable[[CorpusPart[Q]], AbstractContextManager[KbT]],
            k: int, on_progress: Progress | None = None) -> SetRun:
    """Rank every query of ``eval_set`` with each of kbgraph's ``systems`` over its part's namespace
    (opened with ``open_ready``) and with each baseline, and evaluate each ranking at ``k``."""
    names = systems.names()
    rankings: dict[str, Rankings] = {name: {} for name in names}
    run = SetRun(evaluated={}, seconds=dict.fromkeys(names, 0.0), baselines=[b.name for b in systems.baselines],
                 asked=sum(len(part.queries) for part in eval_set.parts), measures=eval_set.measures)

    def record(name: str, ranked: Ranked, started: float) -> None:
        run.seconds[name] += time.perf_counter() - started
        rankings[name].update(ranked.rankings)
        if ranked.facts:
            run.facts.setdefault(name, {}).update(ranked.facts)

    for part in eval_set.parts:
        run.namespaces.append(part.namespace)
        with open_ready(part) as kb:
            for system in systems.kbgraph:
                started = time.perf_counter()
                record(system.name, system.rank(kb, part, rankings), started)
        for baseline in systems.baselines:
            started = time.perf_counter()
            record(baseline.name, baseline.rank(part), started)
    if on_progress is not None:
        on_progress(f"{eval_set.name}: baselines" if eval_set.name else "baselines", len(systems.baselines),
                    len(systems.baselines))
    run.evaluated = {name: evaluate(ranking, eval_set.qrels, k) for name, ranking in rankings.items()}
    return run


def judged_present(qrels: Mapping[str, Mapping[str, float]], present: set[str]) -> dict[str, dict[str, float]]:
    """The judgements of only the documents ``present``: runs left out of a corpus can be found by
    no system, and a query whose relevant runs were all left out is then not judged (the held-out view)."""
    return {qid: {doc: rel for doc, rel in relevance.items() if doc in present} for qid, relevance in qrels.items()}

