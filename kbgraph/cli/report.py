"""``kbgraph report``: one self-contained HTML page about a namespace (see :mod:`kbgraph.report`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from kbgraph.cli._common import JsonOption, NamespaceOption, _open, _print_json, add_commands, err, out
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.files import target_problem
from kbgraph.core.extras import require


def register(app: typer.Typer) -> None:
    add_commands(app, {"report": report})


def _output_problems(path: Path) -> list[str]:
    """Why the report cannot be written to ``path`` (empty when it can)."""
    if path.is_dir():
        return [f"--output {path}: is a folder; name a file, e.g. {path / 'report.html'}"]
    if problem := target_problem(path):
        return [f"--output {problem}"]
    if not path.resolve().parent.is_dir():
        return [f"--output {path}: folder {path.resolve().parent} does not exist"]
    if not os.access(path.resolve().parent, os.W_OK):
        return [f"--output {path}: folder {path.resolve().parent} is not writable"]
    return []


def report(
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="HTML file to write [default: ./kbgraph-report-<namespace>.html]")] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """An HTML report of the knowledge base: counts, domains, meta-concepts, a map of concept
    clusters and the utility distribution. Prints the file's path."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    require("matplotlib", "report", "kbgraph report")
    from kbgraph.report import STAGES, build_report, default_report_path, write_report

    if output is not None and (problems := _output_problems(output)):
        raise InvalidInputError(problems)  # before connecting: a typo fails at once
    with _open(namespace) as kb, Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True,
    ) as progress:
        task = progress.add_task("report", total=len(STAGES) + 1)

        def on_stage(name: str) -> None:
            progress.update(task, description=f"report: {name}", completed=STAGES.index(name))

        data = build_report(kb, on_stage=on_stage)
        progress.update(task, description="report: rendering", completed=len(STAGES))
        path = write_report(data, output if output is not None else default_report_path(kb.namespace))
        progress.update(task, completed=len(STAGES) + 1)
    if as_json:
        _print_json({
            "path": str(path), "namespace": data.namespace, "bytes": path.stat().st_size, "empty": data.empty,
            "experiences": data.stats.experiences, "active": data.utility.active,
            "domains": len(data.domains), "meta_concepts": len(data.meta_concepts),
            "map": {"points": len(data.concept_map.points), "source": data.concept_map.source,
                    "method": data.concept_map.method},
            "mean_utility": data.utility.mean_utility,
        })
    else:
        out.print(str(path), markup=False, highlight=False, soft_wrap=True)
