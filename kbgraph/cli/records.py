"""The commands that write and read experiences: ``kbgraph add``, ``ingest``, ``recluster``, ``get``,
``stats`` and ``delete``, with the readers of experience files and standard input and the printers of
their reports."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from kbgraph.cli._common import JsonOption, NamespaceOption, _open, _print_json, _progress, add_commands, err, out
from kbgraph.core.errors import InvalidInputError, KbgraphError, Problem
from kbgraph.core.jsonl import read_jsonl, read_jsonl_stream
from kbgraph.kb import KnowledgeBase
from kbgraph.core.progress import stage_reporter
from kbgraph.core.terminal import json_safe
from kbgraph.store.server_info import server_info


def register(app: typer.Typer) -> None:
    add_commands(app, {"add": add, "ingest": ingest, "recluster": recluster, "get": get, "stats": stats,
                       "delete": delete})


@dataclass
class _ExperienceFiles:
    """The records of experience files: their values and labels (``file:line``), the problems
    found in them, and each label's file and line number (the order problems are reported in)."""

    values: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    places: dict[str, tuple[str, int]] = field(default_factory=dict)

    def in_file_and_line_order(self, problems: list[str]) -> list[str]:
        """``problems`` by file, then line: a problem of a record where its label stands, one of
        a whole file (no such file, empty) as its line 0; one found in several places keeps its
        order among them."""
        def place(problem: str) -> tuple[str, int]:
            if isinstance(problem, Problem):
                return self.places.get(problem.where, (problem.where, 0))
            return problem, 0
        return sorted(problems, key=place)


def _read_experience_files(paths: list[Path]) -> _ExperienceFiles:
    read = _ExperienceFiles()
    for path in paths:
        if not path.is_file():
            read.problems.append(Problem(str(path), "no such file"))
            continue
        count = 0
        for record in read_jsonl(path):
            count += 1
            read.places[record.where] = (str(path), record.line)
            if record.problem or record.value is None:
                read.problems.append(Problem(record.where, str(record.problem)))
            else:
                read.values.append(record.value)
                read.labels.append(record.where)
        if count == 0:
            read.problems.append(Problem(str(path), "empty file, no experiences in it"))
    return read


def add_files(kb: KnowledgeBase, paths: list[Path], votes: dict[str, bool] | None = None) -> dict[str, Any]:
    """Validates every record of every file first and reports all problems at once, in file and
    line order; writes only when all are valid. With ``votes``, the experiences are EDV candidates
    (see :meth:`KnowledgeBase.add_verified`)."""
    read = _read_experience_files(paths)
    problems = list(read.problems)
    experiences = []
    try:
        experiences = kb.validate(read.values, read.labels)
    except InvalidInputError as invalid:
        problems += invalid.problems
    if problems:
        raise InvalidInputError(read.in_file_and_line_order(problems))
    started = time.perf_counter()
    if votes is not None:
        verified = kb.add_verified(experiences, votes)
        return {**verified.model_dump(), "seconds": round(time.perf_counter() - started, 2)}
    with _progress() as progress:
        task = progress.add_task("storing experiences", total=len(experiences))
        report = kb.add_experiences(experiences, labels=read.labels, on_progress=lambda n: progress.advance(task, n))
    return {**report.model_dump(exclude={"ids"}), "seconds": round(time.perf_counter() - started, 2)}


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
    if report.get("plans_warmed_s") is not None:
        out.print(f"plans warmed in {report['plans_warmed_s']} s (kbgraph.plan_warmup)", markup=False, highlight=False)


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


def recluster(namespace: NamespaceOption = None, as_json: JsonOption = False) -> None:
    """Rebuild every meta-concept and its document from all concepts (global deduplication)."""
    with _open(namespace) as kb:
        err.print("reclustering concepts…")
        report = kb.recluster().model_dump()
    if as_json:
        _print_json(report)
    else:
        _print_ingest_report(report)


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


def stats(namespace: NamespaceOption = None, as_json: JsonOption = False) -> None:
    """Counts of the knowledge base: experiences, nodes by label, relationships by type; and which Neo4j
    (release, edition, Java) holds it."""
    with _open(namespace) as kb:
        result = kb.stats()
        server = server_info(kb.gateway)
    if as_json:
        _print_json(result.model_dump() | {"server": server.as_dict()})
        return
    _print_stats(result.model_dump())
    out.print(f"  server: Neo4j {server.neo4j_version} {server.edition} on Java {server.java or 'unknown'}",
              markup=False, highlight=False)


def _print_stats(s: dict[str, Any]) -> None:
    out.print(f"namespace [bold]{s['namespace']}[/]: {s['experiences']} experiences")
    for title, key in (("nodes", "nodes"), ("relationships", "relationships"), ("by domain", "experiences_by_domain")):
        if s[key]:
            # Domain names are stored text: printed as written, never read as markup.
            out.print(f"  {title}: " + ", ".join(f"{k} {v}" for k, v in sorted(s[key].items())),
                      markup=False, highlight=False)


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
