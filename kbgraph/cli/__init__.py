"""The ``kbgraph`` command line. Errors print as one line (``kbgraph: error: …``), never a traceback."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import neo4j
import typer
from pydantic import ValidationError
from rich.table import Table

from kbgraph.errors import InvalidInputError, KbgraphError
from kbgraph.jsonl import read_jsonl
from kbgraph.kb import KnowledgeBase
from kbgraph.managed import ManagedNeo4j
from kbgraph.progress import ProgressDisplay, progress_display, stage_reporter
from kbgraph.settings import Settings, checked_namespace
from kbgraph.terminal import SafeConsole, json_safe, markup_safe, plain

app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
    help="kbgraph — a knowledge-graph memory engine for LLM agents, on Neo4j.",
)
server_app = typer.Typer(help="The managed local Neo4j (used when NEO4J_URI is not set).", no_args_is_help=True)
schema_app = typer.Typer(help="The graph schema: constraints, vector and full-text indexes.", no_args_is_help=True)
app.add_typer(server_app, name="server")
bench_app = typer.Typer(help="Benchmarks: figures printed next to a baseline measured in the same run.",
                        no_args_is_help=True)
app.add_typer(schema_app, name="schema")
app.add_typer(bench_app, name="bench")

# Not a terminal (CI, pipes): do not squeeze tables into 80 columns.
out = SafeConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = SafeConsole(stderr=True, soft_wrap=True)

NamespaceOption = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Namespace (tenant) to work in [default: settings]")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON")]


def _settings(namespace: str | None = None) -> Settings:
    # ``-n ""`` is an error, never "the configured namespace".
    return Settings() if namespace is None else Settings(namespace=checked_namespace(namespace))


def _open(namespace: str | None) -> KnowledgeBase:
    return KnowledgeBase.from_settings(_settings(namespace))


def _print_json(value: Any) -> None:
    sys.stdout.write(json_safe(json.dumps(value, indent=2, default=str)) + "\n")


def _progress() -> ProgressDisplay:
    return progress_display(err)


# -- server -----------------------------------------------------------------------------------------


@server_app.command("start")
def server_start(as_json: JsonOption = False) -> None:
    """Start the managed Neo4j (downloads it from Maven Central on first use)."""
    status = ManagedNeo4j.from_settings(_settings()).start()
    if as_json:
        _print_json(status.as_dict())
    else:
        out.print(f"Neo4j running (pid {status.pid}) — Bolt {status.bolt_uri}, Browser {status.browser_url}")


@server_app.command("reset-password")
def server_reset_password(as_json: JsonOption = False) -> None:
    """Set a new password for the managed Neo4j (when its password file was lost); data is kept."""
    server = ManagedNeo4j.from_settings(_settings())
    status = server.reset_password()
    if as_json:
        _print_json(status.as_dict() | {"password_file": str(server.password_file)})
    else:
        out.print(f"new password written to {server.password_file} (readable by you only); Neo4j running "
                  f"(pid {status.pid}) — Bolt {status.bolt_uri}", markup=False, highlight=False)


@server_app.command("stop")
def server_stop(as_json: JsonOption = False) -> None:
    """Stop the managed Neo4j cleanly."""
    stopped = ManagedNeo4j.from_settings(_settings()).stop()
    if as_json:
        _print_json({"stopped": stopped})
    else:
        out.print("Neo4j stopped" if stopped else "Neo4j was not running")


@server_app.command("status")
def server_status(as_json: JsonOption = False) -> None:
    """Show whether the managed Neo4j runs, and where."""
    status = ManagedNeo4j.from_settings(_settings(), quiet=True).status()
    if as_json:
        _print_json(status.as_dict())
        return
    state = f"running (pid {status.pid})" if status.running else "stopped"
    guide = f"\n  Guide   :play {status.browser_guide_url}" if status.browser_guide_url else ""
    out.print(f"Neo4j {status.version}: {state}\n  Bolt    {status.bolt_uri}\n  Browser {status.browser_url}{guide}\n"
              f"  Home    {status.home}")


# -- schema -----------------------------------------------------------------------------------------


@schema_app.command("apply")
def schema_apply() -> None:
    """Create missing constraints and indexes (idempotent) and wait until they are ONLINE."""
    with _open(None) as kb:  # opening the knowledge base applies the schema
        states = kb.index_status()
    out.print(f"schema applied: {len(states)} indexes, {sum(s.state == 'ONLINE' for s in states)} ONLINE")


@schema_app.command("status")
def schema_status(as_json: JsonOption = False) -> None:
    """Show every index and whether it is ONLINE."""
    with _open(None) as kb:
        states = kb.index_status()
    if as_json:
        _print_json([s.as_dict() for s in states])
        return
    table = Table("index", "type", "on", "state", "populated")
    for s in states:
        on = f"{'|'.join(s.labels_or_types)}({', '.join(s.properties)})" if s.labels_or_types else "—"
        table.add_row(plain(s.name), plain(s.type), plain(on), plain(s.state), f"{s.population_percent:.0f}%")
    out.print(table)


# -- data -------------------------------------------------------------------------------------------


def _read_experience_files(paths: list[Path]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    values, labels, problems = [], [], []
    for path in paths:
        if not path.is_file():
            problems.append(f"{path}: no such file")
            continue
        count = 0
        for record in read_jsonl(path):
            count += 1
            if record.problem or record.value is None:
                problems.append(f"{record.where}: {record.problem}")
            else:
                values.append(record.value)
                labels.append(record.where)
        if count == 0:
            problems.append(f"{path}: empty file, no experiences in it")
    return values, labels, problems


def _by_file_and_line(problem: str) -> tuple[str, int]:
    match = re.match(r"(.*?):(\d+): ", problem)
    return (match.group(1), int(match.group(2))) if match else (problem, 0)


def add_files(kb: KnowledgeBase, paths: list[Path], votes: dict[str, bool] | None = None) -> dict[str, Any]:
    """Validates every record of every file first and reports all problems at once, in file and
    line order; writes only when all are valid. With ``votes``, the experiences are EDV candidates
    (see :meth:`KnowledgeBase.add_verified`)."""
    values, labels, problems = _read_experience_files(paths)
    experiences = []
    try:
        experiences = kb.validate(values, labels)
    except InvalidInputError as invalid:
        problems += invalid.problems
    if problems:
        raise InvalidInputError(sorted(problems, key=_by_file_and_line))
    started = time.perf_counter()
    if votes is not None:
        verified = kb.add_verified(experiences, votes)
        return {**verified.model_dump(), "seconds": round(time.perf_counter() - started, 2)}
    with _progress() as progress:
        task = progress.add_task("storing experiences", total=len(experiences))
        report = kb.add_experiences(experiences, labels=labels, on_progress=lambda n: progress.advance(task, n))
    return {**report.model_dump(exclude={"ids"}), "seconds": round(time.perf_counter() - started, 2)}


@app.command("add")
def add(
    files: Annotated[list[Path], typer.Argument(help="JSON Lines files of ready-made experiences")],
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Store ready-made experiences (one JSON object per line). Nothing is written if any line is bad."""
    with _open(namespace) as kb:
        result = add_files(kb, files)
    if as_json:
        _print_json(result)
    else:
        out.print(f"{result['received']} experiences read: {result['new']} new, {result['existing']} already stored "
                  f"({result['seconds']} s)")


def _print_ingest_report(report: dict[str, Any]) -> None:
    out.print(f"records read {report['records_read']}, rejected {report['records_rejected']}, "
              f"already ingested {report['records_already_ingested']}, duplicates skipped {report['duplicates_skipped']}")
    for line in report["rejected"][:50]:
        out.print(f"  skipped {line}", markup=False, highlight=False)
    out.print(f"experiences: {report['experiences_new']} new, {report['experiences_existing']} existing, "
              f"{report['experiences_merged']} merged away, {report['abstract_experiences']} abstract")
    out.print(f"concepts {report['concepts']}, insights {report['insights']}, meta-concepts {report['meta_concepts']} "
              f"({report['meta_concepts_new']} new), documents updated {report['documents_updated']}")
    out.print("relations: " + ", ".join(f"{k} {v}" for k, v in report["relations"].items()))
    for stage, counts in (report.get("llm") or {}).items():  # the LLM stages, when configured
        out.print(f"LLM {stage}: {counts['calls']} calls, {counts['valid_first_try']} valid at the first try, "
                  f"{counts['repaired']} repaired, {counts['retried']} after a retry, "
                  f"{counts['fell_back']} fell back to the rules", markup=False, highlight=False)
    out.print("seconds per stage: " + ", ".join(f"{k} {v}" for k, v in report["stage_seconds"].items()))
    out.print(f"total {report['total_seconds']} s, {report['trajectories_per_second']} records/s, "
              f"peak memory {report['peak_memory_mb']} MB")


@app.command("ingest")
def ingest(
    files: Annotated[list[Path], typer.Argument(help="JSON Lines of trajectories or ready-made experiences; a folder "
                                                    "stands for its *.jsonl files; - reads standard input")],
    namespace: NamespaceOption = None,
    skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Skip bad records and list them")] = False,
    as_json: JsonOption = False,
) -> None:
    """Turn trajectories into experiences, concepts, documents and relations (idempotent)."""
    if Path("-") in files and len(files) > 1:
        raise InvalidInputError(["-: standard input is read on its own, not with files"])
    with _open(namespace) as kb, _progress() as progress:
        on_progress = stage_reporter(progress)

        if files == [Path("-")]:
            values, labels, bad = _stdin_records(skip_invalid)
            if not values:
                raise InvalidInputError([*bad, "<stdin>: no record to ingest"])
            report = kb.add_trajectories(values, skip_invalid=skip_invalid, on_progress=on_progress,
                                         labels=labels).model_dump()
            report["records_read"] += len(bad)
            report["records_rejected"] += len(bad)
            report["rejected"] = bad + report["rejected"]
        else:
            report = kb.ingest(files, skip_invalid=skip_invalid, on_progress=on_progress).model_dump()
    if as_json:
        _print_json(report)
    else:
        _print_ingest_report(report)


def _stdin_records(skip_invalid: bool) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """JSON Lines from standard input (``kbgraph ingest -``): the values, their ``<stdin>:line``
    labels, and the lines that are not JSON objects within the bounds (an error unless skipped)."""
    from kbgraph.jsonl import read_jsonl_stream

    values: list[dict[str, Any]] = []
    labels: list[str] = []
    bad: list[str] = []
    for line in read_jsonl_stream(sys.stdin.buffer, "<stdin>"):
        if line.value is None:
            bad.append(f"{line.where}: {line.problem}")
        else:
            values.append(line.value)
            labels.append(line.where)
    if bad and not skip_invalid:
        raise InvalidInputError(bad)
    return values, labels, bad


@app.command("recluster")
def recluster(namespace: NamespaceOption = None, as_json: JsonOption = False) -> None:
    """Rebuild every meta-concept and its document from all concepts (global deduplication)."""
    with _open(namespace) as kb:
        err.print("reclustering concepts…")
        report = kb.recluster().model_dump()
    if as_json:
        _print_json(report)
    else:
        _print_ingest_report(report)


@app.command("get")
def get(experience_id: str, namespace: NamespaceOption = None, embeddings: bool = False) -> None:
    """Print one experience as JSON."""
    with _open(namespace) as kb:
        exp = kb.get(experience_id)
    if exp is None:
        raise KbgraphError(f"no experience {experience_id!r} in namespace {kb.namespace!r}")
    exclude: Any = None
    if not embeddings:
        exclude = {"pg_embedding": True, "structure_embedding": True, "context_embedding": True,
                   "steps": {"__all__": {"embedding"}}, "failure_modes": {"__all__": {"embedding"}}}
    sys.stdout.write(json_safe(exp.model_dump_json(indent=2, exclude=exclude)) + "\n")


@app.command("stats")
def stats(namespace: NamespaceOption = None, as_json: JsonOption = False) -> None:
    """Counts of the knowledge base: experiences, nodes by label, relationships by type."""
    with _open(namespace) as kb:
        result = kb.stats()
    if as_json:
        _print_json(result.model_dump())
        return
    _print_stats(result.model_dump())


def _print_stats(s: dict[str, Any]) -> None:
    out.print(f"namespace [bold]{s['namespace']}[/]: {s['experiences']} experiences")
    for title, key in (("nodes", "nodes"), ("relationships", "relationships"), ("by domain", "experiences_by_domain")):
        if s[key]:
            # Domain names are stored text: printed as written, never read as markup.
            out.print(f"  {title}: " + ", ".join(f"{k} {v}" for k, v in sorted(s[key].items())),
                      markup=False, highlight=False)


@app.command("delete")
def delete(
    ids: Annotated[list[str] | None, typer.Argument(help="Experience ids")] = None,
    namespace: NamespaceOption = None,
    everything: Annotated[bool, typer.Option("--all", help="Delete the whole namespace")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Confirm --all")] = False,
) -> None:
    """Delete experiences by id, or a whole namespace with --all --yes."""
    with _open(namespace) as kb:
        if everything:
            if not yes:
                raise KbgraphError(f"--all deletes everything in namespace {kb.namespace!r}: add --yes to confirm")
            kb.clear()
            out.print(f"namespace {kb.namespace!r} deleted")
        elif ids:
            out.print(f"{kb.delete(ids)} experiences deleted")
        else:
            raise KbgraphError("name experience ids to delete, or --all --yes")


# -- search -----------------------------------------------------------------------------------------


def _json_argument(raw: str, where: str) -> Any:
    """``raw`` decoded as JSON (json.JSONDecodeError when it is not JSON), or InvalidInputError
    naming ``where`` when it is JSON out of bounds: nested so deep the decoder itself recurses out
    (RecursionError), deeper than the models take, or an integer Neo4j cannot store."""
    from kbgraph.value_bounds import MAX_NESTING_DEPTH, value_problem

    try:
        value = json.loads(raw)
    except RecursionError:
        raise InvalidInputError([f"{where}: nested deeper than {MAX_NESTING_DEPTH} levels"]) from None
    if problem := value_problem(value):
        raise InvalidInputError([f"{where}: {problem.removeprefix('(value): ')}"])
    return value


def _parse_assignments(values: list[str] | None, what: str) -> dict[str, Any]:
    """``name=value`` pairs; values are JSON when they parse (numbers, lists, objects), else text."""
    out: dict[str, Any] = {}
    for item in values or []:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise InvalidInputError([f"{what} {item!r}: expected name=value"])
        try:
            out[name.strip()] = _json_argument(raw, f"{what} {name.strip()}")
        except json.JSONDecodeError:
            out[name.strip()] = raw
    return out


def _parse_steps(values: list[str] | None) -> list[dict[str, Any]]:
    """``--step ACTION`` or ``--step 'ACTION {"arg": 1}'`` (the arguments as a JSON object)."""
    steps = []
    for index, item in enumerate(values or []):
        action, _, raw = item.strip().partition(" ")
        arguments: Any = {}
        if raw.strip():
            try:
                arguments = _json_argument(raw, f"--step {index + 1} ({action[:60]}) arguments")
            except json.JSONDecodeError as error:
                raise InvalidInputError([f"--step {index + 1} ({action}): arguments are not JSON: {error.msg}"]) from None
            if not isinstance(arguments, dict):
                raise InvalidInputError([f"--step {index + 1} ({action}): arguments must be a JSON object"])
        steps.append({"action": action, "arguments": arguments})
    return steps


@app.command("search")
def search(
    task: Annotated[str, typer.Argument(help="The task, in words (may be empty with --step)")] = "",
    namespace: NamespaceOption = None,
    domain: Annotated[str | None, typer.Option("--domain", "-d", help="The domain the agent works in")] = None,
    k: Annotated[int, typer.Option("--k", "-k", help="How many experiences")] = 5,
    step: Annotated[list[str] | None, typer.Option(
        "--step", help='A step executed so far: ACTION or \'ACTION {"arg": "value"}\' (repeatable, in order)')] = None,
    only_domain: Annotated[list[str] | None, typer.Option("--only-domain", help="Filter: only these domains")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Filter: concrete or abstract")] = None,
    min_success: Annotated[float, typer.Option(help="Filter: minimum success rate")] = 0.0,
    setting: Annotated[list[str] | None, typer.Option(
        "--set", help="Override a search weight for this call: NAME=VALUE (e.g. alpha=0.3; repeatable)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Student-phase search: the experiences that worked for tasks like this one, each explained."""
    filters: dict[str, Any] = {"min_success": min_success}
    if only_domain:
        filters["domains"] = only_domain
    if kind:
        filters["kinds"] = [kind]
    weights = _parse_assignments(setting, "--set")
    steps = _parse_steps(step)
    # Everything is validated before connecting or loading the model: a typo fails in a moment.
    from kbgraph.search.student import parse_query, parse_search_options

    settings = _settings(namespace)
    query = parse_query({"task": task, "domain": domain, "steps_so_far": steps, "k": k})
    parsed_filters, effective = parse_search_options(settings.search, filters, weights or None)
    with KnowledgeBase.from_settings(settings) as kb:
        results = kb.student.search(query, filters=parsed_filters, weights=effective)
    if as_json:
        sys.stdout.write(json_safe(results.model_dump_json(indent=2)) + "\n")
        return
    from kbgraph.search.explain import explain_results

    omega = effective.structure_weight if steps else effective.task_structure_weight
    out.print(explain_results(results, effective.alpha, omega), markup=False, highlight=False)


@app.command("refine")
def refine(
    steps: Annotated[list[str], typer.Argument(
        help='Problematic steps, each a JSON object: \'{"action": "get_order_details", "arguments": {...}, '
             '"error": "order not found"}\' (issue_type optional)')],
    namespace: NamespaceOption = None,
    domain: Annotated[str | None, typer.Option("--domain", "-d", help="Only experiences of this domain")] = None,
    k: Annotated[int, typer.Option("--k", "-k", help="Matches per problematic step")] = 5,
    agent: Annotated[str | None, typer.Option(help="The calling agent (sees its private experiences)")] = None,
    as_json: JsonOption = False,
) -> None:
    """Teacher-phase retrieval: stored steps and failure modes like the ones going wrong, with recoveries."""
    parsed: list[dict[str, Any]] = []
    problems: list[str] = []
    for index, raw in enumerate(steps):
        try:
            value = _json_argument(raw, f"step {index + 1}")
        except json.JSONDecodeError as error:
            problems.append(f"step {index + 1}: not JSON: {error.msg}")
            continue
        except InvalidInputError as invalid:
            problems += invalid.problems
            continue
        if not isinstance(value, dict):
            problems.append(f"step {index + 1}: must be a JSON object with an action")
            continue
        parsed.append(value)
    if problems:
        raise InvalidInputError(problems)
    from kbgraph.search.teacher import parse_refine_request

    parse_refine_request(parsed, domain=domain, k=k, agent=agent)  # fail fast, before connecting
    with _open(namespace) as kb:
        results = kb.refine(parsed, domain=domain, k=k, agent=agent)
    if as_json:
        sys.stdout.write(json_safe(results.model_dump_json(indent=2)) + "\n")
        return
    for index, step in enumerate(parsed):
        out.print(f"problematic step {index + 1}: {step.get('action')}" + (f" — {step['error']}" if step.get("error") else ""),
                  markup=False, highlight=False)
        for match in (m for m in results.steps if m.query_step == index):
            b = match.breakdown
            out.print(f"  {b.score:.3f}  {match.experience_id} [{match.domain}] step {match.step.order} "
                      f"{match.step.action}: sim {b.sim_step:.2f} · issue {b.issue_match:.2f} · precision {b.precision:.2f}"
                      f" — {match.goal[:80]}", markup=False, highlight=False)
        for failure in (f for f in results.failures if f.query_step == index):
            out.print(f"  failed the same way ({failure.score:.3f}): {failure.description[:160]}"
                      f"\n      {failure.summary}"
                      f"\n      recovery ({failure.run_id or failure.experience_id}): {failure.recovery[:400]}",
                      markup=False, highlight=False)
    for note in results.notes:
        out.print(f"note: {note}", markup=False, highlight=False)


@app.command("eval")
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
    setting: Annotated[list[str] | None, typer.Option("--set", help="Override a search weight: NAME=VALUE")] = None,
    per_query: Annotated[bool, typer.Option("--per-query", help="Include each query's nDCG per system")] = False,
    as_json: JsonOption = False,
) -> None:
    """nDCG@k, Recall@k and MRR of kbgraph next to TF-IDF, MiniLM cosine, the Agent KB hybrid and MiniLM over the
    successful runs only; with --phase teacher, the failure matches and recoveries next to TF-IDF and the oracle."""
    from kbgraph.search.evaluate import eval_namespace, run_eval

    if phase not in ("student", "teacher"):
        raise InvalidInputError([f"--phase {phase!r}: must be student or teacher"])
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
    with _open(eval_namespace(corpus) if namespace is None else namespace) as kb, _progress() as progress:
        on_progress = stage_reporter(progress)

        kb.ingest(sorted(corpus.glob("*.jsonl")), on_progress=lambda stage, done, total: on_progress(f"ingest: {stage}", done, total))
        if phase == "teacher":
            from kbgraph.search.teacher import TeacherRetriever
            from kbgraph.search.teacher_eval import run_teacher_eval

            teacher = run_teacher_eval(TeacherRetriever(kb.gateway, kb.embedder, kb.namespace), corpus, on_progress)
        else:
            assert queries is not None and qrels is not None
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


def _print_teacher_report(report: Any, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json_safe(report.model_dump_json(indent=2)) + "\n")
        return
    table = Table("system", f"nDCG@{report.k} (failure matches)", "concrete recovery that went through",
                  "… and the run succeeded", "queries", "seconds")
    for row in report.systems:
        table.add_row(row.system, f"{row.ndcg:.4f}", f"{row.concrete_success:.4f}", f"{row.concrete_run_success:.4f}",
                      str(row.evaluated), f"{row.seconds:.1f}")
    out.print(f"teacher phase over namespace {report.namespace!r} (corpus {report.corpus}): {report.queries} errored "
              f"steps, {report.judged} of them hit by another run too (nDCG is over those)")
    out.print(table)
    out.print(f"kbgraph − oracle: {report.kbgraph_minus_oracle:+.4f}; kbgraph − TF-IDF: {report.kbgraph_minus_tfidf:+.4f} "
              "(share of first recoveries of the same error that are concrete and went through)")


# -- benchmarks -------------------------------------------------------------------------------------


@bench_app.command("write")
def bench_write(
    experiences: Annotated[list[int] | None, typer.Option("--experiences", "-e", help="Sizes to write (repeatable)")] = None,
    steps: Annotated[int, typer.Option(help="Steps per experience")] = 8,
    baseline_sample: Annotated[int, typer.Option(help="Experiences the per-transaction baseline writes")] = 200,
    as_json: JsonOption = False,
) -> None:
    """Write throughput (nodes/s) of the batched writer vs one transaction per experience."""
    from kbgraph.bench.write import run_write_benchmark

    sizes = experiences or [1000, 10000]
    problems = [f"--experiences {size}: must be between 1 and 1000000" for size in sizes if not 1 <= size <= 1_000_000]
    if not 1 <= steps <= 100:
        problems.append(f"--steps {steps}: must be between 1 and 100")
    if not 1 <= baseline_sample <= 100_000:
        problems.append(f"--baseline-sample {baseline_sample}: must be between 1 and 100000")
    if problems:  # before connecting: a typo fails at once
        raise InvalidInputError(problems)
    with _open("bench-write") as kb, _progress() as progress:
        on_progress = stage_reporter(progress)

        result = run_write_benchmark(kb, sizes, steps=steps, baseline_sample=baseline_sample, on_progress=on_progress)
    if as_json:
        _print_json(result)
        return
    table = Table("writer", "experiences", "nodes", "seconds", "nodes/s", "experiences/s", "rewrite s")
    for row in result["kbgraph"]:
        table.add_row(f"kbgraph (UNWIND, batch {result['batch_size']})", f"{row['experiences']:,}",
                      f"{row['nodes']:,}", str(row["write_s"]), f"{row['nodes_per_s']:,}",
                      str(row["experiences_per_s"]), str(row["rewrite_s"]))
    b = result["baseline"]
    table.add_row("baseline (1 tx / experience)", f"{b['experiences']:,}", f"{b['nodes']:,}", str(b["write_s"]),
                  f"{b['nodes_per_s']:,}", str(b["experiences_per_s"]), "—")
    out.print(table)


@bench_app.command("search")
def bench_search(
    sizes: Annotated[list[int] | None, typer.Option(
        "--size", "-s", help="KB sizes in experiences (repeatable); 0 = the namespace as it is. Sizes above 0 "
                             "are scaled up from the source namespace into bench-search-<size>")] = None,
    queries: Annotated[int, typer.Option("--queries", "-q", help="Random queries per size")] = 300,
    k: Annotated[int, typer.Option("--k", "-k", help="Results per search")] = 5,
    namespace: NamespaceOption = None,
    corpus: Annotated[Path, typer.Option(
        "--corpus", help="Trajectories ingested into the source namespace first when it is empty")] = Path("../shared/data/trajectories"),
    as_json: JsonOption = False,
) -> None:
    """Student-search latency (p50/p95/p99, embedding excluded) next to exact brute-force cosine."""
    from kbgraph.bench.search import bench_search_cli

    if not 1 <= queries <= 100_000:
        raise InvalidInputError([f"--queries {queries}: must be between 1 and 100000"])
    with _open(namespace) as kb:
        source = kb.namespace
        if kb.count() == 0:
            files = sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else []
            if not files:
                raise InvalidInputError([f"namespace {source!r} is empty and --corpus {corpus} has no .jsonl files to ingest"])
            err.print(f"ingesting {len(files)} files from {corpus} into namespace {source!r} first…")
            kb.ingest(files)
    code = bench_search_cli(sizes or [0], queries, k, as_json, out, err, source=source, namespace=source)
    if code:
        raise typer.Exit(code)


@bench_app.command("concurrent")
def bench_concurrent(
    clients: Annotated[list[int] | None, typer.Option(
        "--clients", "-c", help="Client threads per round (repeatable)")] = None,
    seconds: Annotated[float, typer.Option("--seconds", help="Duration of each round")] = 30.0,
    write_share: Annotated[float, typer.Option("--write-share", help="Share of operations that add one run")] = 0.1,
    namespace: NamespaceOption = None,
    corpus: Annotated[Path, typer.Option(
        "--corpus", help="Trajectories: ingested first when the namespace is empty, and the pool of runs added")]
        = Path("../shared/data/trajectories"),
    as_json: JsonOption = False,
) -> None:
    """Many agents at once: 90 % searches and 10 % runs added, with 1, 4 and 8 client threads; QPS and p50/p95 per operation."""
    from kbgraph.bench.concurrent import load_runs, run_concurrent_benchmark

    rounds = clients or [1, 4, 8]
    problems = [f"--clients {n}: must be between 1 and 256" for n in rounds if not 1 <= n <= 256]
    if not 1.0 <= seconds <= 3600.0:
        problems.append(f"--seconds {seconds}: must be between 1 and 3600")
    if not 0.0 <= write_share <= 1.0:
        problems.append(f"--write-share {write_share}: must be between 0 and 1")
    files = sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else []
    if not files:
        problems.append(f"--corpus {corpus}: no .jsonl files (the runs to add come from there)")
    if problems:
        raise InvalidInputError(problems)
    with _open(namespace or "bench-concurrent") as kb, _progress() as progress:
        if kb.count() == 0:
            err.print(f"ingesting {len(files)} files from {corpus} into namespace {kb.namespace!r} first…")
            kb.ingest(files)
        on_progress = stage_reporter(progress)

        report = run_concurrent_benchmark(kb, load_runs(files), rounds, seconds, write_share, on_progress=on_progress)
    if as_json:
        _print_json(report)
        return
    table = Table(title=f"mixed traffic on namespace {report['namespace']!r} ({report['experiences']:,} experiences, "
                        f"{report['write_share']:.0%} add one run), latencies in ms")
    for column in ("clients", "QPS", "search QPS", "search p50", "search p95", "add-run QPS", "add-run p50",
                   "add-run p95", "errors"):
        table.add_column(column, justify="right")
    for r in report["rounds"]:
        table.add_row(str(r["clients"]), f"{r['qps']:.1f}", f"{r['search_qps']:.1f}", f"{r['search']['p50']:.1f}",
                      f"{r['search']['p95']:.1f}", f"{r['add_run_qps']:.2f}", f"{r['add_run']['p50']:.0f}",
                      f"{r['add_run']['p95']:.0f}", str(sum(r["errors"].values())))
    out.print(table)
    for r in report["rounds"]:
        for message, count in r["errors"].items():
            err.print(f"{r['clients']} clients: {count} × {plain(message)}")
    out.print(f"load average before {report['load_average_before']}, after {report['load_average_after']}")


@bench_app.command("add")
def bench_add(
    namespaces: Annotated[list[str] | None, typer.Option(
        "--namespace", "-n", help="Namespaces to add runs to (repeatable) [default: settings]")] = None,
    runs: Annotated[int, typer.Option("--runs", help="Runs added by each path, per namespace")] = 10,
    corpus: Annotated[Path, typer.Option(
        "--corpus", help="Trajectories (a .jsonl file or a folder of them): the pool of runs added")]
        = Path("../shared/data/real_runs"),
    seed: Annotated[int | None, typer.Option("--seed", help="Order of the runs added [default: a new one, printed]")]
        = None,
    as_json: JsonOption = False,
) -> None:
    """What adding one run costs in a long-lived process: incremental next to from scratch (the
    path a process's first ingest takes), alternating, embedding excluded; p50/p95 per namespace."""
    from kbgraph.bench.add import run_add_benchmark
    from kbgraph.bench.concurrent import load_runs

    problems = [] if 1 <= runs <= 1000 else [f"--runs {runs}: must be between 1 and 1000"]
    files = sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else [corpus] if corpus.is_file() else []
    if not files:
        problems.append(f"--corpus {corpus}: no .jsonl files (the runs to add come from there)")
    for name in namespaces or []:
        _settings(name)  # a blank or invalid namespace fails here, before connecting
    if problems:
        raise InvalidInputError(problems)
    with _progress() as progress:
        report_stage = stage_reporter(progress)

        def on_progress(namespace: str, done: int, total: int) -> None:
            report_stage(f"add runs to {namespace}", done, total)

        report = run_add_benchmark(_open, namespaces or [_settings().namespace], load_runs(files, limit=100_000), runs,
                                   secrets.randbelow(1_000_000) if seed is None else seed, on_progress)
    if as_json:
        _print_json(report)
        return
    table = Table(title=f"add one run (kb.add_trajectories, warm process, embedding excluded), {runs} runs per path, ms")
    for column in ("namespace", "experiences", "incremental p50", "p95", "from scratch p50", "p95", "speed-up",
                   "first add"):
        table.add_column(column, justify="right")
    for r in report["namespaces"]:
        table.add_row(plain(r["namespace"]), f"{r['experiences']:,}", f"{r['incremental']['p50']:.0f}",
                      f"{r['incremental']['p95']:.0f}", f"{r['from_scratch']['p50']:.0f}",
                      f"{r['from_scratch']['p95']:.0f}", f"{r['speedup_p50']}x", f"{r['first_add_ms']:.0f}")
    out.print(table)
    for r in report["namespaces"]:
        stages = ", ".join(f"{k} {v:.0f}" for k, v in r["incremental"]["stages_p50_ms"].items())
        out.print(f"{plain(r['namespace'])}: incremental stages p50 (ms): {stages}; new experiences "
                  f"{r['incremental']['new_experiences']} of {runs} incremental adds, "
                  f"{r['from_scratch']['new_experiences']} of {runs} from scratch (the others extended a stored one)")
        for path in ("incremental", "from_scratch"):
            if r[path]["with_maintenance_ms"]:
                out.print(f"  {path}: {len(r[path]['with_maintenance_ms'])} add(s) also ran the automatic maintenance "
                          f"of a growth checkpoint (left out above): {r[path]['with_maintenance_ms']} ms")
    out.print(f"runs in the order of --seed {report['seed']}")
    out.print(f"load average before {report['load_average_before']}, after {report['load_average_after']}")


# -- the main job -----------------------------------------------------------------------------------


#: The error an agent hits in the demo's refine: the hotel sample runs hit it too, and one recovered.
DEMO_PROBLEM: dict[str, Any] = {
    "action": "book_room",
    "arguments": {"hotel": "harbour_view", "payments": [{"payment_id": "gift_card_1", "amount": 100},
                                                         {"payment_id": "credit_card_2", "amount": 250}]},
    "error": "Error: payments do not cover the total: total is 420, paid 350",
}
DEMO_QUERY = "A customer received a damaged item and wants to send it back for a refund"


@app.command("demo")
def demo(namespace: NamespaceOption = None, as_json: JsonOption = False) -> None:
    """The main job: start the managed Neo4j, apply the schema, run the whole ingestion pipeline
    on the bundled sample trajectories (and sample experiences), print the counts, a sample of
    meta-concept documents and the Browser URL."""
    started = time.perf_counter()
    settings = _settings(namespace or "demo")
    samples = resources.files("kbgraph") / "samples"
    with KnowledgeBase.from_settings(settings) as kb, \
            resources.as_file(samples / "trajectories.jsonl") as trajectories, \
            resources.as_file(samples / "experiences.jsonl") as experiences, \
            resources.as_file(samples / "real_runs.jsonl") as real_runs, _progress() as progress:
        task = progress.add_task("ingesting the sample trajectories", total=None)
        report = kb.ingest([trajectories, experiences, real_runs],
                           on_progress=lambda _s, done, total: progress.update(task, completed=done, total=total))
        result = kb.stats().model_dump()
        documents = kb.gateway.read("meta_concepts_top", kb=kb.namespace, limit=3)
        browser = kb.browser_url
        search = kb.search(DEMO_QUERY, k=3)
        refine = kb.refine([DEMO_PROBLEM], domain="hotel", k=2)
    elapsed = round(time.perf_counter() - started, 1)
    if as_json:
        _print_json({**result, "ingest": report.model_dump(), "documents": documents, "browser_url": browser,
                     "search": search.model_dump(mode="json"), "refine": refine.model_dump(mode="json"),
                     "seconds": elapsed})
        return
    _print_stats(result)
    out.print(f"meta-concepts {report.meta_concepts}, relations: "
              + ", ".join(f"{k} {v}" for k, v in report.relations.items()))
    for doc in documents:
        out.print(f"\n[bold]{markup_safe(doc['name'])}[/] — {doc['experiences']} experiences, version {doc['version']}")
        out.print(doc["document"], markup=False, highlight=False)
    from kbgraph.search.explain import explain_results

    out.print(f"\n[bold]kb.search({DEMO_QUERY!r}, k=3)[/]")
    out.print(explain_results(search), markup=False, highlight=False)
    out.print(f"\n[bold]kb.refine([{json.dumps(DEMO_PROBLEM)}], domain='hotel')[/]", highlight=False)
    for failure in refine.failures[:1]:
        out.print(f"failed the same way: {failure.description}\n  {failure.summary}\n  recovery: {failure.recovery}",
                  markup=False, highlight=False)
    if browser:
        out.print(f"\nNeo4j Browser: {browser}  (user neo4j, password in "
                  f"{ManagedNeo4j.from_settings(settings).password_file})")
        out.print(f'Try in the Browser: MATCH (e:Experience {{kb: "{kb.namespace}"}})-[r]->(n) RETURN e, r, n LIMIT 50',
                  markup=False)
    out.print(f"done in {elapsed} s")


# Modules under kbgraph.cli, registered in this order.
COMMAND_MODULES: tuple[str, ...] = (
    "learning", "mcp", "cypher", "bench.learning", "bench.online", "transfer", "report", "serve", "skills", "llm",
)


def _register_command_modules() -> None:
    from importlib import import_module

    for name in COMMAND_MODULES:
        import_module(f"kbgraph.cli.{name}").register(app)


_register_command_modules()


def _undecodable_argument() -> str | None:
    """Python reads argument bytes that are not UTF-8 as lone surrogates (surrogateescape)."""
    for index, argument in enumerate(sys.argv[1:], start=1):
        if any("\udc80" <= char <= "\udcff" for char in argument):
            shown = argument.encode("utf-8", "surrogateescape")[:60]
            return f"argument {index} ({shown!r}) is not valid UTF-8 text"
    return None


def quiet_driver_logs() -> None:
    """The driver logs each retry as a multi-line WARNING; a failure is reported once, by us, in
    one line (KBGRAPH_DEBUG=1 keeps them)."""
    if not os.environ.get("KBGRAPH_DEBUG"):
        logging.getLogger("neo4j").setLevel(logging.ERROR)


def main() -> None:
    quiet_driver_logs()
    if problem := _undecodable_argument():
        err.print(f"kbgraph: error: {problem}", markup=False, highlight=False)
        sys.exit(2)
    try:
        app()
    except InvalidInputError as exc:
        err.print(f"kbgraph: error: {exc}", markup=False, highlight=False)
        sys.exit(2)
    except KbgraphError as exc:
        err.print(f"kbgraph: error: {exc}", markup=False, highlight=False)
        sys.exit(1)
    except ValidationError as exc:  # settings from flags, environment or kbgraph.toml
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False))
        err.print(f"kbgraph: error: invalid setting: {problems}", markup=False, highlight=False)
        sys.exit(2)
    except neo4j.exceptions.Neo4jError as exc:
        err.print(f"kbgraph: error: Neo4j refused a query: {exc.code}: {exc.message}", markup=False, highlight=False)
        sys.exit(1)
    except neo4j.exceptions.DriverError as exc:
        err.print(f"kbgraph: error: lost Neo4j during the run ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                  "completed batches are kept and re-running resumes", markup=False, highlight=False)
        sys.exit(1)
    except Exception as exc:  # a bug: say so in one line, the traceback only on request
        if os.environ.get("KBGRAPH_DEBUG"):
            raise
        err.print(f"kbgraph: internal error: {type(exc).__name__}: {exc} (set KBGRAPH_DEBUG=1 for a traceback)",
                  markup=False, highlight=False)
        sys.exit(70)
