"""``kbgraph eval``: retrieval quality of kbgraph next to the baselines, for the student phase
(:mod:`kbgraph.search.eval.evaluate`) or the teacher phase (:mod:`kbgraph.search.eval.teacher`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from kbgraph.cli._common import JsonOption, _open, _parse_assignments, _progress, add_commands, err, out
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.settings import Settings
from kbgraph.kb import KnowledgeBase
from kbgraph.core.progress import StageReporter, stage_reporter
from kbgraph.core.terminal import json_safe

if TYPE_CHECKING:  # the suite is imported when it runs (the CLI starts without the eval stack)
    from kbgraph.search.eval.pipeline import CorpusPart
    from kbgraph.search.eval.suite import SuiteReport


def register(app: typer.Typer) -> None:
    add_commands(app, {"eval": eval_command})


def eval_command(
    queries: Annotated[Path | None, typer.Option("--queries", help="Queries (JSON Lines: qid, query, domain, …); "
                                                 "the student phase needs them")] = None,
    qrels: Annotated[Path | None, typer.Option("--qrels", help="Relevance judgements (JSON Lines: qid, doc_id, rel); "
                                               "the student phase needs them")] = None,
    corpus: Annotated[Path, typer.Option(
        "--corpus", help="Folder of trajectory files the KB is built from; the baselines index it, and it is "
                         "ingested first (idempotent) so the KB and the baselines see the same data")] = Path("../shared/data/trajectories"),
    phase: Annotated[str, typer.Option(
        "--phase", help="student: search for a task (needs --queries and --qrels); teacher: refine every errored "
                        "step of the corpus, leave-one-run-out")] = "student",
    namespace: Annotated[str | None, typer.Option(
        "--namespace", "-n", help="Namespace the corpus is built in; default: one of its own per corpus "
                                  "(eval-<folder>-<hash>), so the KB holds exactly what the baselines index")] = None,
    k: Annotated[int, typer.Option("--k", help="Cut-off of nDCG and Recall")] = 10,
    setting: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a search weight: NAME=VALUE (a path of the settings tree, lexical.alpha=0.3, "
        "or its flat name, alpha=0.3)")] = None,
    per_query: Annotated[bool, typer.Option("--per-query", help="Include each query's nDCG per system (with "
                                             "--suite: in the JSON, and the table lists, per set, the queries where "
                                             "kbgraph is below the best baseline)")] = False,
    suite: Annotated[bool, typer.Option(
        "--suite", help="Run every development set (the shared ones and the project's data/dev) in one table: "
                        "kbgraph, each baseline and each ablation column")] = False,
    sets: Annotated[str | None, typer.Option("--sets", help="With --suite: only these sets (comma-separated)")] = None,
    ablations: Annotated[str | None, typer.Option(
        "--ablations", help="With --suite: only these ablation columns, or opt-in variants by name "
        "(comma-separated; 'none' for none; the recipes are in kbgraph.search.eval.recipes)")] = None,
    held_out: Annotated[bool, typer.Option(
        "--held-out", help="With --suite: also answer each set whose queries exclude runs from the corpus without "
                           "those runs (kbgraph and the baselines; one more namespace per set)")] = False,
    runs_fraction: Annotated[float, typer.Option(
        "--runs-fraction", help="With --suite --held-out: the held-out view from this share of the runs (0 < F <= 1; "
                                "the same runs on every machine, nested: a point of a learning curve)")] = 1.0,
    data: Annotated[Path, typer.Option("--data", help="With --suite: the shared data folder (eval/, trajectories/, "
                                       "real_runs/)")] = Path("../shared/data"),
    dev_sets: Annotated[Path | None, typer.Option(
        "--dev-sets", help="With --suite: the project's own development sets (default: data/dev of this checkout)")] = None,
    split: Annotated[str | None, typer.Option(
        "--split", help="teacher: the runs of the tasks at even (or odd) positions are the memory, the errored "
                        "steps of the others the queries; default: leave one run out")] = None,
    compare: Annotated[tuple[Path, Path] | None, typer.Option(
        "--compare", help="Compare two saved suite reports (BEFORE AFTER, each from eval --suite --per-query --json): "
                          "per set kbgraph's leak-free change with its paired-bootstrap 95% interval, pooled, and "
                          "whether the change may become a default")] = None,
    by_changes: Annotated[Path | None, typer.Option(
        "--by-changes", help="A saved suite report (eval --suite --held-out --per-query --json): its requests without "
                             "steps grouped by one change or several and by domain, each query in its strictest "
                             "leak-free view, kbgraph's margin over the best baseline and over plain cosine with "
                             "paired-bootstrap 95% intervals (--sets: only these sets; --data, --dev-sets as for "
                             "--suite)")] = None,
    as_json: JsonOption = False,
) -> None:
    """nDCG@k, Recall@k and MRR of kbgraph next to TF-IDF, MiniLM cosine, the Agent KB hybrid and MiniLM over the
    successful runs only; with --phase teacher, the failure matches and recoveries next to TF-IDF and the oracle."""
    from kbgraph.search.eval.evaluate import eval_namespace, run_eval
    from kbgraph.search.eval.pipeline import CorpusPart, ready_opener

    if compare is not None:
        _compare(*compare, as_json=as_json)
        return
    if by_changes is not None:
        _by_changes(by_changes, sets, data, dev_sets, as_json)
        return
    if suite:
        if not 0.0 < runs_fraction <= 1.0 or (runs_fraction < 1.0 and not held_out):
            raise InvalidInputError([f"--runs-fraction {runs_fraction}: must be in (0, 1], with --held-out"])
        _run_suite(sets, ablations, data, dev_sets, k, _parse_assignments(setting, "--set"), as_json, held_out,
                   per_query, runs_fraction)
        return
    if phase not in ("student", "teacher"):
        raise InvalidInputError([f"--phase {phase!r}: must be student or teacher"])
    if split is not None and (phase != "teacher" or split not in ("even", "odd")):
        raise InvalidInputError([f"--split {split!r}: must be even or odd, and only with --phase teacher"])
    if not 1 <= k <= 1000:
        raise InvalidInputError([f"--k {k}: must be between 1 and 1000"])
    if phase == "student":
        for path, what in ((queries, "--queries"), (qrels, "--qrels")):
            if path is None:
                raise InvalidInputError([f"{what}: required for --phase student"])
            if not path.is_file():
                raise InvalidInputError([f"{what} {path}: no such file"])
    if not corpus.is_dir() or not sorted(corpus.glob("*.jsonl")):
        raise InvalidInputError([f"--corpus {corpus}: no folder of .jsonl trajectory files there"])
    weights = _parse_assignments(setting, "--set")
    name = eval_namespace(corpus) if namespace is None else namespace
    with _progress() as progress:
        on_progress = stage_reporter(progress)
        # The evaluation's own namespace, kept between runs, is checked before it is reused; one named
        # with --namespace is only ingested into (idempotent).
        open_ready = ready_opener(_open, on_progress, _note) if namespace is None else _ingesting(on_progress)
        if phase == "teacher":
            from kbgraph.search.eval.teacher import SPLITS, run_teacher_phase

            teacher = run_teacher_phase(open_ready, corpus, name, on_progress,
                                        split=None if split is None else SPLITS[SPLITS.index(split)])
        else:
            assert queries is not None and qrels is not None
            with open_ready(CorpusPart(name, tuple(sorted(corpus.glob("*.jsonl"))), ())) as kb:
                report = run_eval(kb.student, kb.gateway, kb.embedder, queries, qrels, corpus, k=k,
                                  weights=weights or None, on_progress=on_progress, per_query=per_query)
    if phase == "teacher":
        _print_teacher_report(teacher, as_json)
        return
    if as_json:
        sys.stdout.write(json_safe(report.model_dump_json(indent=2)) + "\n")
        return
    table = Table("system", f"nDCG@{k}", f"Recall@{k}", "MRR", "queries", "seconds")
    for row in report.systems:
        table.add_row(row.system, f"{row.ndcg:.4f}", f"{row.recall:.4f}", f"{row.mrr:.4f}", str(row.evaluated),
                      f"{row.seconds:.1f}")
    out.print(f"{report.queries.rsplit('/', 1)[-1]} over namespace {report.namespace!r} (corpus {corpus})")
    out.print(table)
    out.print(f"kbgraph − best baseline ({report.best_baseline}): {report.kbgraph_minus_best_baseline:+.4f} nDCG@{k}")


def _ingesting(on_progress: StageReporter) -> Callable[[CorpusPart[Any]], AbstractContextManager[KnowledgeBase]]:
    """Opens a namespace named with --namespace and ingests the part's files into it (idempotent)."""

    @contextmanager
    def open_ingested(part: CorpusPart[Any]) -> Iterator[KnowledgeBase]:
        with _open(part.namespace) as kb:
            kb.ingest(part.files, on_progress=lambda stage, done, total: on_progress(f"ingest: {stage}", done, total))
            yield kb

    return open_ingested


def _note(message: str) -> None:
    err.print(f"kbgraph eval: {message}", markup=False, highlight=False)


def _names(raw: str | None) -> list[str] | None:
    return None if raw is None else [n.strip() for n in raw.split(",") if n.strip() and n.strip() != "none"]


def _run_suite(sets: str | None, ablations: str | None, data: Path, dev_sets: Path | None, k: int,
               weights: dict[str, Any], as_json: bool, held_out: bool = False, per_query: bool = False,
               runs_fraction: float = 1.0) -> None:
    from kbgraph.search.eval.recipes import columns as recipe_columns
    from kbgraph.search.eval.suite import BASELINES, discover_sets, run_suite
    from kbgraph.store.step_texts import open_namespace

    columns = recipe_columns(_names(ablations))
    found = discover_sets(data, dev_sets if dev_sets is not None else _checkout_dev_sets(), _names(sets),
                          cache_dir=Settings().cache_dir)
    with _open(None) as kb, _progress() as progress:
        on_progress = stage_reporter(progress)

        @contextmanager
        def open_kb(namespace: str) -> Iterator[KnowledgeBase]:
            # One driver and one embedder for every namespace of the suite.
            other = KnowledgeBase(kb.driver, kb.embedder, namespace=namespace, database=kb.gateway.database,
                                  settings=kb.settings.model_copy(update={"namespace": namespace}), ensure_schema=False)
            # The schema is applied already; a namespace written before still gets one vector per step text.
            open_namespace(other.gateway, kb.embedder.dimension, namespace, schema=False)
            try:
                yield other
            finally:
                other.close()

        report = run_suite(open_kb, kb.embedder, found, k=k, weights=weights, ablations=columns, on_progress=on_progress,
                           held_out=held_out, cache_dir=Settings().cache_dir, per_query=per_query,
                           runs_fraction=runs_fraction, note=_note)
    if as_json:
        sys.stdout.write(json_safe(report.model_dump_json(indent=2)) + "\n")
        return
    held = ["held out (best baseline, margin)"] if held_out else []
    table = Table("set", "queries", "kbgraph", *BASELINES, "margin", "own text hidden", *held, *columns)
    for row in report.rows:
        table.add_row(row.set, str(row.queries), f"{row.kbgraph:.3f}", *(
            f"[bold]{row.baselines[b]:.3f}[/bold]" if b == row.best_baseline else f"{row.baselines[b]:.3f}" for b in BASELINES),
            f"{row.margin:+.3f}", f"{row.own_text_hidden:.3f} ({row.own_text_margin:+.3f}, {row.own_text_queries} q)",
            *([(f"{row.held_out.kbgraph:.3f} ({row.held_out.baselines[row.held_out.best_baseline]:.3f}, "
                f"{row.held_out.margin:+.3f}, {row.held_out.queries} q)") if row.held_out else "-"] if held_out else []),
            *(f"{row.ablations[a]:.3f} ({row.ablations[a] - row.kbgraph:+.3f})" for a in columns))
    out.print(f"development suite, nDCG@{k}; margin = kbgraph − the best baseline (bold); ablation columns: kbgraph "
              f"with that mechanism off (change from kbgraph); own text hidden: kbgraph when a merged experience that "
              f"shows the text of a query's own excluded run is left out too, with the runs it stands for, for every "
              f"system (its margin over that view's best baseline, the queries it touched)"
              + ("; held out: the set from the corpus without its queries' excluded runs, kbgraph (the best "
                 "baseline there, margin)" if held_out else ""))
    out.print(table)
    out.print(f"worst set: {report.worst_set} (margin {report.worst_margin:+.4f})")
    if per_query:
        _print_queries_below(report)


def _by_changes(path: Path, sets: str | None, data: Path, dev_sets: Path | None, as_json: bool) -> None:
    from kbgraph.search.eval.by_changes import changes_by_run, groups_by_changes, requests_of
    from kbgraph.search.eval.suite import DERIVED_CORPORA, corpus_files, discover_sets

    report = _read_report(path, "--by-changes")
    in_report = {row.set for row in report.rows}
    # The project's requests without steps answered from the gold runs: not a shared set, a derived
    # corpus, or leave-one-domain-out.
    names = _names(sets) or sorted(n for n in in_report if n not in DERIVED_CORPORA and not n.startswith("lodo"))
    gold = data / "trajectories"
    own_sets = dev_sets if dev_sets is not None else _checkout_dev_sets()
    chosen = [found for found in discover_sets(data, own_sets, names)
              if found.name in in_report and (sets or found.queries.parent == own_sets)]
    relevant, domains = requests_of(chosen, gold)
    groups = groups_by_changes(report, relevant, domains, changes_by_run(corpus_files(gold)))
    if as_json:
        sys.stdout.write(json_safe(json.dumps([g.model_dump() for g in groups], indent=2)) + "\n")
        return
    table = Table("changes", "domain", "queries", "kbgraph", "best baseline", "margin [95%]", "cosine",
                  "over cosine [95%]")
    for g in groups:
        table.add_row(g.changes, g.domain, str(g.queries), f"{g.kbgraph:.3f}",
                      f"{g.best_baseline} {g.baselines[g.best_baseline]:.3f}",
                      f"{g.over_best.mean:+.3f} [{g.over_best.low:+.3f}, {g.over_best.high:+.3f}]",
                      f"{g.baselines['minilm_cosine']:.3f}",
                      f"{g.over_cosine.mean:+.3f} [{g.over_cosine.low:+.3f}, {g.over_cosine.high:+.3f}]")
    out.print(f"requests without steps by the changes they ask for, {path} (sets: {', '.join(sorted(relevant))}; "
              "each query in its strictest leak-free view)")
    out.print(table)


def _read_report(path: Path, option: str) -> SuiteReport:
    from kbgraph.search.eval.suite import SuiteReport

    try:
        return SuiteReport.model_validate_json(path.read_bytes())
    except OSError as error:
        raise InvalidInputError([f"{option} {path}: cannot read it ({error.strerror or error})"]) from None
    except ValueError as error:
        raise InvalidInputError([f"{option} {path}: not a suite report of eval --suite --json "
                                 f"({str(error).splitlines()[0]})"]) from None


def _compare(before: Path, after: Path, as_json: bool) -> None:
    from kbgraph.search.eval.compare import compare_reports

    reports = [_read_report(path, "--compare") for path in (before, after)]
    comparison = compare_reports(reports[0], reports[1])
    if as_json:
        sys.stdout.write(json_safe(comparison.model_dump_json(indent=2)) + "\n")
        return
    table = Table("set", "view", "queries", "before", "after", "mean change", "95% interval")
    for change in comparison.sets:
        table.add_row(change.set, change.view, str(change.change.queries), f"{change.before:.3f}", f"{change.after:.3f}",
                      f"{change.change.mean:+.3f}", f"[{change.change.low:+.3f}, {change.change.high:+.3f}]")
    pooled = comparison.verdict.pooled
    out.print(f"kbgraph's leak-free nDCG per query, {before} → {after} (paired bootstrap over queries)")
    out.print(table)
    out.print(f"pooled over {pooled.queries} queries: {pooled.mean:+.4f} [{pooled.low:+.4f}, {pooled.high:+.4f}]; "
              + ("may become a default" if comparison.verdict.adopt else "not a default: "
                 + ("the pooled interval reaches 0" if pooled.low <= 0 else "")
                 + ("; " if pooled.low <= 0 and comparison.verdict.harmed else "")
                 + (f"wholly below -0.02 on {', '.join(comparison.verdict.harmed)}" if comparison.verdict.harmed else "")))


def _print_queries_below(report: SuiteReport) -> None:
    """Per set and per held-out set, the queries where kbgraph is below its best baseline
    (--per-query without --json; the JSON carries every query's figure by system)."""
    for row in report.rows:
        views = [(row.set, row.best_baseline, row.per_query)]
        if row.held_out is not None:
            views.append((f"{row.set}, held out", row.held_out.best_baseline, row.held_out.per_query))
        for title, best, by_query in views:
            below = sorted(((qid, f) for qid, f in by_query.items() if f["kbgraph"] < f[best]),
                           key=lambda item: item[1]["kbgraph"] - item[1][best])
            if not below:
                out.print(f"{title}: kbgraph is below {best} on no query")
                continue
            table = Table("query", "kbgraph", best)
            for qid, figures in below:
                table.add_row(qid, f"{figures['kbgraph']:.3f}", f"{figures[best]:.3f}")
            out.print(f"{title}: kbgraph below {best} on {len(below)} of {len(by_query)} queries")
            out.print(table)


def _checkout_dev_sets() -> Path | None:
    """data/dev of the checkout this kbgraph runs from (absent from an installed wheel)."""
    folder = Path(__file__).resolve().parents[2] / "data" / "dev"
    return folder if folder.is_dir() else None


def _print_teacher_report(report: Any, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json_safe(report.model_dump_json(indent=2)) + "\n")
        return
    table = Table("system", f"nDCG@{report.k} (failure matches)", "same error class",
                  "… from a run that then reached its goal (good)", "concrete recovery that went through",
                  "queries", "seconds")
    for row in report.systems:
        table.add_row(row.system, f"{row.ndcg:.4f}", f"{row.same_class:.4f}", f"{row.good:.4f}",
                      f"{row.concrete_success:.4f}", str(row.evaluated), f"{row.seconds:.1f}")
    memory = ("every other run" if report.split is None
              else f"the {report.memory_runs} runs of the tasks at {report.split} positions")
    out.print(f"teacher phase over namespace {report.namespace!r} (corpus {report.corpus}): {report.queries} errored "
              f"steps asked of {memory}, {report.judged} of them of an error class the memory holds too "
              "(nDCG is over those)")
    out.print(table)
    out.print(f"kbgraph − oracle: {report.kbgraph_minus_oracle:+.4f}; kbgraph − TF-IDF: {report.kbgraph_minus_tfidf:+.4f} "
              "(share of first failure matches of the same error class from a run that then reached its goal)")
    classes = Table("error class", "queries", "kbgraph good", "oracle good")
    for cls in report.classes:
        classes.add_row(cls.error_class, str(cls.queries), str(cls.good), str(cls.oracle))
    out.print(classes)
    out.print("error classes where good < oracle: " + ("; ".join(report.short_classes) or "none"))
