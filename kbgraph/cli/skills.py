"""``kbgraph skills export DIR``: what a namespace learnt, as Agent Skills folders (see
:mod:`kbgraph.skills.export` and docs/skills.md). Not under ``kbgraph export``, whose argument is a file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from kbgraph.cli._common import JsonOption, NamespaceOption, _open, _print_json, err, out
from kbgraph.core.errors import InvalidInputError
from kbgraph.skills.export import DEFAULT_MIN_RUNS, checked_min_runs, export_skills
from kbgraph.skills.folder import target_problems
from kbgraph.core.terminal import plain

skills_app = typer.Typer(help="Agent Skills: what a namespace learnt, as skill folders agents load on demand.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(skills_app, name="skills")


@skills_app.command("export")
def export_command(
    directory: Annotated[Path, typer.Argument(
        help="Folder to write the skill folders into (created when missing; other files in it are left alone)",
        metavar="DIR")],
    namespace: NamespaceOption = None,
    min_runs: Annotated[int, typer.Option(
        "--min-runs", help="Export a meta-concept or workflow only when it worked in at least this many runs")
    ] = DEFAULT_MIN_RUNS,
    as_json: JsonOption = False,
) -> None:
    """Write one skill folder (SKILL.md, references/examples.md) per meta-concept document or
    workflow that worked in at least --min-runs runs. Re-exporting rewrites only what changed and
    removes the folders of skills that are gone; it never touches what kbgraph did not write."""
    checked_min_runs(min_runs)
    if problems := target_problems(directory):  # before connecting: a typo fails at once
        raise InvalidInputError(problems, headline="cannot export skills, nothing was written")
    with _open(namespace) as kb, err.status("skills: reading") as status:
        report = export_skills(kb.gateway, kb.namespace, directory, min_runs=min_runs,
                               on_stage=lambda stage: status.update(f"skills: {stage}"))
    if as_json:
        _print_json(report.model_dump(mode="json"))
        return
    written = sum(s.status == "written" for s in report.skills)
    out.print(f"exported {len(report.skills)} skills of namespace {report.namespace!r} to {report.directory} "
              f"({written} written, {len(report.skills) - written} unchanged, {len(report.removed)} removed) "
              f"in {report.seconds} s; threshold: worked in at least {report.min_runs} runs",
              markup=False, highlight=False)
    if report.skills:
        table = Table("skill", "from", "worked", "runs", "tasks", "status")
        for skill in report.skills:
            table.add_row(plain(skill.name), plain(skill.kind), str(skill.worked), str(skill.runs),
                          str(skill.tasks), skill.status)
        out.print(table)
    for name in report.removed:
        out.print(f"  removed {name} (no longer a skill)", markup=False, highlight=False)
    if report.below_threshold:
        out.print(f"  {len(report.below_threshold)} meta-concepts and workflows worked in fewer runs "
                  f"(--min-runs {report.min_runs}); --json lists them", markup=False, highlight=False)
    if not report.skills:
        out.print("  nothing passed the threshold: ingest more runs, or lower --min-runs", markup=False,
                  highlight=False)
