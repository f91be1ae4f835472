"""The development suite: every development set in one run, kbgraph next to every baseline, with
ablation columns.

A default must be chosen by the **worst** set of the whole suite, never by one set's gain; this
module puts every set in one table so that is what a reader sees. The sets:

- the shared sets of ``../shared/data/eval`` (``retail``, ``webarena`` over the gold trajectories;
  ``real_same``, ``real_other`` over the real runs);
- the project's own sets in ``data/dev`` (short requests without executed steps per domain, the
  leave-one-domain-out transfer set, …): every ``<name>_queries.jsonl`` with its
  ``<name>_qrels.jsonl``, over the gold trajectories (over the real runs for the sets named in
  ``DEV_CORPORA``). A set whose name starts with ``lodo`` holds out each query's domain: its
  queries are answered from a namespace built from the corpus *without* the files of that domain,
  and the baselines index the same files.

Each column of ``ABLATIONS`` runs kbgraph again on the same namespace with some weights changed
(traversal off, workflows off, …), so a mechanism that changes no figure shows as a column equal
to kbgraph's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.settings import default_cache_dir
from kbgraph.search.eval.baselines import (
    Baseline,
    Document,
    HybridBaseline,
    MiniLMBaseline,
    SuccessfulRunsBaseline,
    TextEmbedder,
    TfidfBaseline,
    load_documents_from,
    rank_queries,
)
from kbgraph.search.eval.data import EvalQuery, load_qrels, load_queries, qrels_by_query
from kbgraph.search.eval.evaluate import eval_namespace, ndcg_by_query, search_rankings
from kbgraph.search.eval.held_out import without_runs
from kbgraph.search.eval.metrics import evaluate
from kbgraph.search.eval.shown_text import merged_experiences, own_text_of, run_problems, shown_runs
from kbgraph.search.eval.transient import transient_corpus
from kbgraph.core.weights import WeightChanges
from kbgraph.search.params import SearchWeights
from kbgraph.search.student import StudentRetriever
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["ABLATIONS", "BASELINES", "HeldOutRow", "SetRow", "SuiteReport", "SuiteSet", "corpus_files", "discover_sets", "run_suite"]

#: The ablation columns: kbgraph with these weights changed (on top of any --set of the run).
ABLATIONS: dict[str, WeightChanges] = {
    # Traversal (max_hops 1 by default): the column turns it off.
    "traversal_off": {"max_hops": 0},
    "workflows_off": {"workflows": False},
    "lexical_off": {"alpha": 0.0},
    "structure_off": {"structure_weight": 0.0, "task_structure_weight": 0.0, "intent_structure_weight": 0.0},
    "outcomes_off": {"success_floor": 1.0, "support_weight": 0.0, "handoff_credit": 1.0, "outcome_weight": 0.0},
    # The intent channel of requests without steps (search/student/intent.py).
    "intent_off": {"intent_weight": 0.0},
    # Opt-in: what the namespace's own history adds to the intent match (kbgraph.search.scoring.history_association).
    "history_on": {"intent_history_weight": 0.1},
}
BASELINES = ("tfidf", "minilm_cosine", "agent_kb_hybrid", "success_cosine")
#: The column of kbgraph kept from each query's own text (see SetRow.own_text_hidden).
OWN_TEXT_HIDDEN = "own_text_hidden"
#: The shared sets: name → corpus folder under the shared data root.
SHARED_SETS = {"retail": "trajectories", "webarena": "trajectories", "real_same": "real_runs", "real_other": "real_runs"}
#: The project's sets that are not over the gold trajectories: name → corpus folder. ``alternative``
#: asks what worked after a failed step, which only the real runs (with their errors) can answer.
DEV_CORPORA = {"alternative": "real_runs"}
#: The project's sets over a corpus derived from a shared one: name → (folder, how it is derived,
#: into the cache). ``transient``: the gold runs, half of them with a call that failed for the
#: moment and was retried (search/eval/transient.py).
DERIVED_CORPORA: dict[str, tuple[str, Callable[[Path, Path], Path]]] = {"transient": ("trajectories", transient_corpus)}

Progress = Callable[[str, int, int], None]


class SearchingKb(Protocol):
    """What the suite needs of an open knowledge base."""

    @property
    def student(self) -> StudentRetriever: ...
    @property
    def gateway(self) -> Neo4jGateway: ...
    def ingest(self, paths: Sequence[str | Path], skip_invalid: bool = False,
               on_progress: Callable[[str, int, int | None], None] | None = None) -> Any: ...


OpenKb = Callable[[str], AbstractContextManager[SearchingKb]]


@dataclass(frozen=True)
class SuiteSet:
    name: str
    queries: Path
    qrels: Path
    corpus: Path
    #: Answer each query from the corpus without its own domain's files (leave-one-domain-out).
    hold_out_domain: bool = False


class HeldOutRow(BaseModel):
    """A set answered from the corpus less its queries' excluded runs."""

    kbgraph: float
    baselines: dict[str, float]
    best_baseline: str
    margin: float
    namespace: str
    runs_left_out: int
    #: Queries with a relevant run left in the corpus (the others cannot be judged).
    queries: int
    #: With ``per_query``: each judged query's nDCG@k, by system (kbgraph and every baseline).
    per_query: dict[str, dict[str, float]] = Field(default_factory=dict)


class SetRow(BaseModel):
    set: str
    queries: int
    kbgraph: float
    baselines: dict[str, float]
    best_baseline: str
    margin: float
    ablations: dict[str, float] = Field(default_factory=dict)
    #: kbgraph with the experiences that show a query's excluded source's own text left out too
    #: (kbgraph.search.eval.shown_text), and its margin over the same best baseline; how many
    #: queries had such an experience. Equal to kbgraph where none had.
    own_text_hidden: float
    own_text_margin: float
    own_text_queries: int = 0
    #: With ``held_out``: the set answered from the corpus without its queries' excluded runs
    #: (kbgraph.search.eval.held_out), kbgraph and every baseline over that corpus.
    held_out: HeldOutRow | None = None
    seconds: float
    namespaces: list[str]
    #: With ``per_query``: each query's nDCG@k, by system (kbgraph, every baseline, every ablation
    #: column and own_text_hidden): where a set's figure comes from, query by query.
    per_query: dict[str, dict[str, float]] = Field(default_factory=dict)


class SuiteReport(BaseModel):
    k: int
    weights: WeightChanges
    ablations: dict[str, WeightChanges]
    rows: list[SetRow]
    #: The set whose margin over its best baseline is smallest, and that margin.
    worst_set: str
    worst_margin: float


def discover_sets(shared_data: Path, dev_sets: Path | None, names: Sequence[str] | None = None,
                  cache_dir: Path | None = None) -> list[SuiteSet]:
    """The suite's sets: the shared ones found under ``shared_data`` and the project's in ``dev_sets``,
    in that order; ``names`` keeps only those (an unknown name is an error). The corpora of
    :data:`DERIVED_CORPORA` are made under ``cache_dir`` (the settings' cache by default) when a
    set of theirs is kept."""
    found: list[SuiteSet] = []
    for name, corpus in SHARED_SETS.items():
        queries = shared_data / "eval" / f"{name}_queries.jsonl"
        if queries.is_file():
            found.append(SuiteSet(name, queries, shared_data / "eval" / f"{name}_qrels.jsonl", shared_data / corpus))
    if dev_sets is not None and dev_sets.is_dir():
        for queries in sorted(dev_sets.glob("*_queries.jsonl")):
            name = queries.name.removesuffix("_queries.jsonl")
            dev_corpus = shared_data / DEV_CORPORA.get(name, "trajectories")
            found.append(SuiteSet(name, queries, dev_sets / f"{name}_qrels.jsonl", dev_corpus,
                                  hold_out_domain=name.startswith("lodo")))
    if names:
        known = {s.name for s in found}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise InvalidInputError([f"--sets: unknown set {', '.join(unknown)} (found: {', '.join(sorted(known)) or 'none'})"])
        found = [s for s in found if s.name in names]
    if not found:
        raise InvalidInputError([f"no development set found under {shared_data}/eval or {dev_sets}"])
    return [_derived(s, shared_data, cache_dir) for s in found]


def _derived(suite_set: SuiteSet, shared_data: Path, cache_dir: Path | None) -> SuiteSet:
    if suite_set.name not in DERIVED_CORPORA:
        return suite_set
    folder, derive = DERIVED_CORPORA[suite_set.name]
    corpus = derive(shared_data / folder, cache_dir if cache_dir is not None else default_cache_dir())
    return replace(suite_set, corpus=corpus)


def _file_domains(path: Path) -> set[str]:
    return {str(r.value["domain"]) for r in read_jsonl(path) if isinstance(r.value, dict) and "domain" in r.value}


def corpus_files(corpus: Path, without_domain: str | None = None) -> list[Path]:
    """The corpus's ``*.jsonl`` files by name, less those holding ``without_domain``'s records (a
    file that mixes that domain with others cannot be held out and is an error)."""
    files = sorted(corpus.glob("*.jsonl"))
    if not files:
        raise InvalidInputError([f"{corpus}: no .jsonl trajectory files there"])
    if without_domain is None:
        return files
    kept = []
    for path in files:
        domains = _file_domains(path)
        if without_domain not in domains:
            kept.append(path)
        elif len(domains) > 1:
            raise InvalidInputError([f"{path}: mixes {', '.join(sorted(domains))}; cannot hold out {without_domain!r}"])
    return kept


def _groups(suite_set: SuiteSet, queries: Sequence[EvalQuery]) -> Iterator[tuple[str | None, list[EvalQuery]]]:
    if not suite_set.hold_out_domain:
        yield None, list(queries)
        return
    for domain in sorted({q.domain for q in queries}):
        yield domain, [q for q in queries if q.domain == domain]


class _Baselines:
    """The four baselines of one list of corpus files, built once per run (embedding a corpus takes
    a while) and shared by every set over the same files."""

    def __init__(self, embedder: TextEmbedder):
        self.embedder = embedder
        self._built: dict[tuple[Path, ...], dict[str, Baseline]] = {}
        self._documents: dict[tuple[Path, ...], list[Document]] = {}

    def documents(self, files: Sequence[Path]) -> list[Document]:
        """The documents of these files (read once per run)."""
        key = tuple(files)
        if key not in self._documents:
            self._documents[key] = load_documents_from(files)
        return self._documents[key]

    def of(self, files: Sequence[Path]) -> dict[str, Baseline]:
        key = tuple(files)
        if key not in self._built:
            documents = self.documents(files)
            tfidf, minilm = TfidfBaseline(documents), MiniLMBaseline(documents, self.embedder)
            self._built[key] = {"tfidf": tfidf, "minilm_cosine": minilm, "agent_kb_hybrid": HybridBaseline(tfidf, minilm),
                                "success_cosine": SuccessfulRunsBaseline(minilm)}
        return self._built[key]


def run_suite(
    open_kb: OpenKb,
    embedder: TextEmbedder,
    sets: Sequence[SuiteSet],
    k: int = 10,
    weights: Mapping[str, Any] | None = None,
    ablations: Mapping[str, Mapping[str, Any]] = ABLATIONS,
    on_progress: Progress | None = None,
    held_out: bool = False,
    cache_dir: Path | None = None,
    per_query: bool = False,
    runs_fraction: float = 1.0,
) -> SuiteReport:
    """nDCG@k of kbgraph, of each baseline and of kbgraph under each ablation, for every set; with
    ``held_out``, each set whose queries exclude runs also from the corpus without those runs
    (made under ``cache_dir``), from ``runs_fraction`` of its runs (a learning curve's point:
    :func:`kbgraph.search.eval.held_out.kept_in_fraction`); with ``per_query``, every figure query by
    query as well."""
    base = dict(weights or {})
    configs: dict[str, WeightChanges] = {"kbgraph": base}
    for name, change in ablations.items():
        configs[name] = {**base, **change}
    for name, config in configs.items():  # a bad --set fails before anything runs
        try:
            SearchWeights().merged(config)
        except ValueError as error:
            raise InvalidInputError([f"weights of {name}: {error}"]) from None
    baselines = _Baselines(embedder)
    ingested: set[str] = set()
    shown_in: dict[str, dict[str, frozenset[str]]] = {}  # namespace → whose text its merged experiences show
    rows: list[SetRow] = []
    for suite_set in sets:
        started = time.perf_counter()
        queries = load_queries(suite_set.queries)
        qrels = qrels_by_query(load_qrels(suite_set.qrels))
        rankings: dict[str, dict[str, list[str]]] = {name: {} for name in [*configs, *BASELINES, OWN_TEXT_HIDDEN]}
        namespaces: list[str] = []
        own_text_queries = 0
        for domain, group in _groups(suite_set, queries):
            files = corpus_files(suite_set.corpus, domain)
            namespace = eval_namespace(suite_set.corpus, domain)
            namespaces.append(namespace)
            with open_kb(namespace) as kb:
                if namespace not in ingested:
                    kb.ingest(files, on_progress=_stage(on_progress, f"{suite_set.name}: ingest"))
                    ingested.add(namespace)
                for name, config in configs.items():
                    rankings[name].update(search_rankings(
                        kb.student, kb.gateway, group, k, config or None,
                        on_progress=_stage(on_progress, f"{suite_set.name}: {name}")))
                shown = _shown(kb.gateway, namespace, files, group, shown_in)
                hiding = [q for q in group if own_text_of(q.exclude, shown)]
                own_text_queries += len(hiding)
                rankings[OWN_TEXT_HIDDEN].update(rankings["kbgraph"])
                if hiding:
                    rankings[OWN_TEXT_HIDDEN].update(search_rankings(
                        kb.student, kb.gateway, hiding, k, base or None, shown=shown,
                        on_progress=_stage(on_progress, f"{suite_set.name}: {OWN_TEXT_HIDDEN}")))
            for name, baseline in baselines.of(files).items():
                rankings[name].update(rank_queries(baseline, group, k))
        held = (_held_out(open_kb, baselines, suite_set, queries, qrels, k, base, ingested, on_progress,
                          cache_dir if cache_dir is not None else default_cache_dir(), per_query, runs_fraction)
                if held_out and not suite_set.hold_out_domain else None)
        evaluated = {name: evaluate(ranking, qrels, k) for name, ranking in rankings.items()}
        scores = {name: round(result["ndcg"], 4) for name, result in evaluated.items()}
        best = max(BASELINES, key=lambda name: scores[name])
        rows.append(SetRow(
            set=suite_set.name, queries=evaluated["kbgraph"]["evaluated"], kbgraph=scores["kbgraph"],
            baselines={name: scores[name] for name in BASELINES}, best_baseline=best,
            margin=round(scores["kbgraph"] - scores[best], 4),
            ablations={name: scores[name] for name in ablations},
            own_text_hidden=scores[OWN_TEXT_HIDDEN], own_text_margin=round(scores[OWN_TEXT_HIDDEN] - scores[best], 4),
            own_text_queries=own_text_queries, held_out=held, seconds=round(time.perf_counter() - started, 1),
            namespaces=namespaces, per_query=ndcg_by_query(evaluated) if per_query else {},
        ))
    worst = min(rows, key=lambda row: row.margin)
    return SuiteReport(k=k, weights=base, ablations={n: dict(a) for n, a in ablations.items()}, rows=rows,
                       worst_set=worst.set, worst_margin=worst.margin)


def _held_out(
    open_kb: OpenKb, baselines: _Baselines, suite_set: SuiteSet, queries: Sequence[EvalQuery],
    qrels: Mapping[str, Mapping[str, float]], k: int, weights: Mapping[str, Any], ingested: set[str],
    on_progress: Progress | None, cache_dir: Path, per_query: bool = False, runs_fraction: float = 1.0,
) -> HeldOutRow | None:
    """The set from its corpus less every run its queries exclude (None when they exclude none)."""
    runs = sorted({run for q in queries for run in q.exclude})
    if not runs:
        return None
    corpus = without_runs(suite_set.corpus, runs, cache_dir, runs_fraction)
    files = corpus_files(corpus)
    namespace = eval_namespace(corpus)
    with open_kb(namespace) as kb:
        if namespace not in ingested:
            kb.ingest(files, on_progress=_stage(on_progress, f"{suite_set.name}: held-out ingest"))
            ingested.add(namespace)
        rankings = {"kbgraph": search_rankings(kb.student, kb.gateway, queries, k, dict(weights) or None,
                                               on_progress=_stage(on_progress, f"{suite_set.name}: held out"))}
    for name, baseline in baselines.of(files).items():
        rankings[name] = rank_queries(baseline, queries, k)
    # Runs left out can be found by no system: they are not judged (a query whose relevant runs
    # were all left out is not evaluated).
    present = {document.id for document in baselines.documents(files)}
    judged = {qid: {doc: rel for doc, rel in relevance.items() if doc in present} for qid, relevance in qrels.items()}
    evaluated = {name: evaluate(ranking, judged, k) for name, ranking in rankings.items()}
    scores = {name: round(result["ndcg"], 4) for name, result in evaluated.items()}
    best = max(BASELINES, key=lambda name: scores[name])
    return HeldOutRow(kbgraph=scores["kbgraph"], baselines={name: scores[name] for name in BASELINES},
                      best_baseline=best, margin=round(scores["kbgraph"] - scores[best], 4), namespace=namespace,
                      runs_left_out=len(runs), queries=evaluated["kbgraph"]["evaluated"],
                      per_query=ndcg_by_query(evaluated) if per_query else {})


def _shown(gateway: Neo4jGateway, namespace: str, files: Sequence[Path], queries: Sequence[EvalQuery],
           known: dict[str, dict[str, frozenset[str]]]) -> dict[str, frozenset[str]]:
    """Whose text each merged experience of the namespace shows, found once per namespace of the run
    (``known``: its contents do not change while the suite runs); nothing to find (no read) when no
    query excludes a run."""
    if not any(q.exclude for q in queries):
        return {}
    if namespace not in known:
        known[namespace] = shown_runs(merged_experiences(gateway, namespace), run_problems(files))
    return known[namespace]


def _stage(on_progress: Progress | None, label: str) -> Callable[[str, int, int | None], None] | None:
    if on_progress is None:
        return None

    def report(stage: str, done: int, total: int | None) -> None:
        on_progress(f"{label} ({stage})" if stage not in ("kbgraph",) else label, done, total or 0)

    return report
