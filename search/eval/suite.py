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
to kbgraph's. Every set, and its held-out view, goes through the evaluation pipeline
(kbgraph.search.eval.pipeline.run_set) with the student's systems (kbgraph.search.eval.student_systems).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.settings import default_cache_dir
from kbgraph.search.eval.baselines import BASELINES, TextEmbedder
from kbgraph.search.eval.cached_namespace import BuildingKb, Note
from kbgraph.search.eval.data import EvalQuery, load_qrels, load_queries, qrels_by_query
from kbgraph.search.eval.evaluate import eval_namespace
from kbgraph.search.eval.held_out import without_runs
from kbgraph.search.eval.metrics import with_queries_replaced
from kbgraph.search.eval.pipeline import CorpusPart, EvalSet, Progress, SetRun, judged_present, ready_opener, run_set
from kbgraph.search.eval.recipes import ABLATIONS, KBGRAPH, Recipe, Recipes
from kbgraph.search.eval.report import HeldOutRow, OwnTextRow, SetRow, SuiteReport
from kbgraph.search.eval.student_systems import Corpora, SearchingKb, StudentPart, student_systems
from kbgraph.search.eval.transient import transient_corpus

__all__ = ["ABLATIONS", "BASELINES", "HeldOutRow", "SetRow", "SuiteKb", "SuiteReport", "SuiteSet", "corpus_files",
           "discover_sets", "run_suite"]

#: The shared sets: name → corpus folder under the shared data root.
SHARED_SETS = {"retail": "trajectories", "webarena": "trajectories", "real_same": "real_runs", "real_other": "real_runs"}
#: The project's sets that are not over the gold trajectories: name → corpus folder. ``alternative``
#: asks what worked after a failed step, which only the real runs (with their errors) can answer.
DEV_CORPORA = {"alternative": "real_runs"}
#: The project's sets over a corpus derived from a shared one: name → (folder, how it is derived,
#: into the cache). ``transient``: the gold runs, half of them with a call that failed for the
#: moment and was retried (search/eval/transient.py).
DERIVED_CORPORA: dict[str, tuple[str, Callable[[Path, Path], Path]]] = {"transient": ("trajectories", transient_corpus)}


class SuiteKb(SearchingKb, BuildingKb, Protocol):
    """What the suite needs of an open knowledge base: to build (or check) its namespace, and to search it."""


OpenKb = Callable[[str], AbstractContextManager[SuiteKb]]


@dataclass(frozen=True)
class SuiteSet:
    name: str
    queries: Path
    qrels: Path
    corpus: Path
    #: Answer each query from the corpus without its own domain's files (leave-one-domain-out).
    hold_out_domain: bool = False


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


def run_suite(
    open_kb: OpenKb,
    embedder: TextEmbedder,
    sets: Sequence[SuiteSet],
    k: int = 10,
    weights: Mapping[str, Any] | None = None,
    ablations: Recipes = ABLATIONS,
    on_progress: Progress | None = None,
    held_out: bool = False,
    cache_dir: Path | None = None,
    per_query: bool = False,
    runs_fraction: float = 1.0,
    note: Note | None = None,
) -> SuiteReport:
    """nDCG@k of kbgraph, of each baseline and of kbgraph under each ablation, for every set; with
    ``held_out``, each set whose queries exclude runs also from the corpus without those runs
    (made under ``cache_dir``), from ``runs_fraction`` of its runs (a learning curve's point:
    :func:`kbgraph.search.eval.held_out.kept_in_fraction`); with ``per_query``, every figure query by
    query as well. A namespace kept from an earlier run is checked before it is used
    (kbgraph.search.eval.cached_namespace); ``note`` (stderr by default) hears when one is rebuilt."""
    base = dict(weights or {})
    columns = [recipe.checked(base) for recipe in (KBGRAPH, *ablations.values())]  # a bad --set fails first
    run = _Runner(ready_opener(open_kb, on_progress, note or _to_stderr), Corpora(embedder), base, k, on_progress)
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    rows: list[SetRow] = []
    for suite_set in sets:
        started = time.perf_counter()
        queries = load_queries(suite_set.queries)
        qrels = qrels_by_query(load_qrels(suite_set.qrels))
        eval_set = EvalSet(suite_set.name, tuple(_parts(suite_set, queries)), qrels)
        set_run = run(eval_set, columns)
        own = _own_text(run, eval_set, set_run, per_query)
        held = (_held_out(run, suite_set, queries, qrels, cache, per_query, runs_fraction)
                if held_out and not suite_set.hold_out_domain else None)
        scores = set_run.ndcg()
        rows.append(SetRow.of(
            set_run, per_query, set=suite_set.name, ablations={name: scores[name] for name in ablations},
            own_text_hidden=own.kbgraph, own_text_margin=own.margin, own_text_queries=own.hiding, own_text=own,
            held_out=held,
            seconds=round(time.perf_counter() - started, 1), namespaces=set_run.namespaces))
    worst = min(rows, key=lambda row: row.margin)
    return SuiteReport(k=k, weights=base, ablations=ablations.changes(), rows=rows, worst_set=worst.set,
                       worst_margin=worst.margin)


@dataclass(frozen=True)
class _Runner:
    """Runs a set of the suite through the pipeline: its namespaces opened with ``open_ready``, its
    systems kbgraph under the recipes given and the baselines of ``corpora`` (shared by every set)."""

    open_ready: Callable[[StudentPart], AbstractContextManager[SearchingKb]]
    corpora: Corpora
    weights: Mapping[str, Any]
    k: int
    on_progress: Progress | None

    def __call__(self, eval_set: EvalSet[EvalQuery], recipes: Sequence[Recipe]) -> SetRun:
        systems = student_systems(self.corpora, recipes, self.weights, self.k, eval_set.name, self.on_progress)
        return run_set(eval_set, systems, self.open_ready, self.k, self.on_progress)


def _parts(suite_set: SuiteSet, queries: Sequence[EvalQuery]) -> Iterator[StudentPart]:
    """The set's queries by the corpus they are answered from: all from the whole corpus, or (a
    leave-one-domain-out set) each domain's from the corpus less that domain's files."""
    if not suite_set.hold_out_domain:
        yield CorpusPart(eval_namespace(suite_set.corpus), tuple(corpus_files(suite_set.corpus)), tuple(queries))
        return
    for domain in sorted({q.domain for q in queries}):
        yield CorpusPart(eval_namespace(suite_set.corpus, domain), tuple(corpus_files(suite_set.corpus, domain)),
                         tuple(q for q in queries if q.domain == domain))


def _own_text(run: _Runner, eval_set: EvalSet[EvalQuery], main: SetRun, per_query: bool = False) -> OwnTextRow:
    """The set with each query's own text hidden (:class:`OwnTextRow`): the queries with runs to leave
    out besides their exclusions are asked again, by kbgraph and every baseline, with those runs
    excluded too and judged without them; every other query keeps its figures from ``main``."""
    left_out: dict[str, frozenset[str]] = {}
    parts: list[StudentPart] = []
    for part in eval_set.parts:
        with run.open_ready(part) as kb:
            found = run.corpora.own_text_runs(kb.gateway, part)
        left_out.update(found)
        asked = tuple(q.model_copy(update={"exclude": q.exclude | found[q.qid]}) for q in part.queries if q.qid in found)
        if asked:
            parts.append(CorpusPart(part.namespace, part.files, asked))
    systems = [KBGRAPH.name, *main.baselines]
    evaluated = {name: main.evaluated[name] for name in systems}
    if left_out:
        qrels = {qid: {doc: rel for doc, rel in eval_set.qrels.get(qid, {}).items() if doc not in runs}
                 for qid, runs in left_out.items()}
        again = run(EvalSet(f"{eval_set.name}, own text hidden", tuple(parts), qrels), [KBGRAPH])
        evaluated = {name: with_queries_replaced(main.evaluated[name], again.evaluated[name], left_out) for name in systems}
    judged_before = set(main.evaluated[KBGRAPH.name]["per_query"])
    view = replace(main, evaluated=evaluated)
    unjudged = len((judged_before & set(left_out)) - set(evaluated[KBGRAPH.name]["per_query"]))
    return OwnTextRow.of(view, per_query, hiding=len(left_out), unjudged=unjudged,
                         runs_left_out=sum(len(runs) for runs in left_out.values()))


def _held_out(
    run: _Runner, suite_set: SuiteSet, queries: Sequence[EvalQuery], qrels: Mapping[str, Mapping[str, float]],
    cache_dir: Path, per_query: bool = False, runs_fraction: float = 1.0,
) -> HeldOutRow | None:
    """The set from its corpus less every run its queries exclude (None when they exclude none)."""
    runs = sorted({run for q in queries for run in q.exclude})
    if not runs:
        return None
    corpus = without_runs(suite_set.corpus, runs, cache_dir, runs_fraction)
    part = CorpusPart(eval_namespace(corpus), tuple(corpus_files(corpus)), tuple(queries))
    # Judged on the runs left in the corpus only: a run left out can be found by no system.
    present = {document.id for document in run.corpora.documents(part.files)}
    held = run(EvalSet(f"{suite_set.name}, held out", (part,), judged_present(qrels, present)), [KBGRAPH])
    return HeldOutRow.of(held, per_query, namespace=part.namespace, runs_left_out=len(runs))


def _to_stderr(message: str) -> None:
    print(f"kbgraph eval: {message}", file=sys.stderr)
