"""``kbgraph export FILE|-`` and ``kbgraph import FILE``: one namespace as JSON Lines (see
:mod:`kbgraph.transfer` for the format and what an import does to nodes that already exist)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kbgraph.cli._common import JsonOption, NamespaceOption, _open, _progress, add_commands, err, out
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.files import check_target, source_problem
from kbgraph.core.progress import stage_reporter
from kbgraph.core.terminal import json_safe
from kbgraph.transfer import export_to, import_file


def register(app: typer.Typer) -> None:
    add_commands(app, {"export": export_command, "import": import_command})


def _counts(counts: dict[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in counts.items()) or "nothing"


def export_command(
    target: Annotated[str, typer.Argument(help="File to write, or - for standard output", metavar="FILE|-")],
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write one namespace — every node with its properties and embeddings, every relationship —
    as JSON Lines that `kbgraph import` reads back. A file appears whole or not at all."""
    to_stdout = target == "-"
    if not to_stdout:  # say so before connecting
        check_target(Path(target))
    # With `-` the data owns standard output: the summary goes to standard error.
    summary = err if to_stdout else out
    with _open(namespace) as kb, _progress() as progress:
        report = export_to(kb.gateway, kb.namespace, target, on_progress=stage_reporter(progress))
    if as_json:
        stream = sys.stderr if to_stdout else sys.stdout
        stream.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
        return
    summary.print(f"exported namespace {report.namespace!r} to {report.file} in {report.seconds} s", markup=False)
    summary.print(f"  nodes: {_counts(report.nodes)}", markup=False, highlight=False)
    summary.print(f"  relationships: {_counts(report.relationships)}", markup=False, highlight=False)
    if report.cross_namespace_relationships:
        summary.print(f"  left out {report.cross_namespace_relationships} relationships to other namespaces",
                      markup=False, highlight=False)


def import_command(
    source: Annotated[Path, typer.Argument(help="A file written by `kbgraph export`", metavar="FILE")],
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Read an export into a namespace (-n, else the configured one — not the file's). The whole
    file is checked first: a bad one writes nothing. Nodes and relationships the namespace
    already holds are left as they are; the rest is added."""
    if problem := source_problem(source):  # say so before connecting
        raise InvalidInputError([problem])
    with _open(namespace) as kb, _progress() as progress:
        report = import_file(kb.gateway, kb.namespace, source, batch_size=kb.settings.write_batch_size,
                             on_progress=stage_reporter(progress))
    if as_json:
        sys.stdout.write(json_safe(json.dumps(report.model_dump(mode="json"), indent=2)) + "\n")
        return
    out.print(f"imported {report.file} (namespace {report.source_namespace!r}) into namespace "
              f"{report.namespace!r} in {report.seconds} s", markup=False)
    out.print(f"  nodes: {report.nodes_new} new, {report.nodes_existing} already there", markup=False)
    for label, counts in report.nodes.items():
        out.print(f"    {label}: {counts.new} new, {counts.existing} already there", markup=False)
    out.print(f"  relationships: {report.relationships_new} new, {report.relationships_existing} already there",
              markup=False)
    for type_, counts in report.relationships.items():
        out.print(f"    {type_}: {counts.new} new, {counts.existing} already there", markup=False)
