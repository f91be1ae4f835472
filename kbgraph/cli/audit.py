"""``kbgraph audit``: what a namespace's documents and skills say, checked against their evidence
(see :mod:`kbgraph.audit` and docs/ingestion.md). Exit status 0 when it finds nothing, 1 otherwise."""

from __future__ import annotations

from typing import Annotated

import typer

from kbgraph.audit import CHECKS, audit_namespace
from kbgraph.cli._common import JsonOption, NamespaceOption, _open, _print_json, err, out
from kbgraph.skills.export import DEFAULT_MIN_RUNS, checked_min_runs


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)


def audit_command(
    namespace: NamespaceOption = None,
    min_runs: Annotated[int, typer.Option(
        "--min-runs", help="Audit the skills an export at this threshold would write")] = DEFAULT_MIN_RUNS,
    as_json: JsonOption = False,
) -> None:
    """Check every meta-concept document and every skill an export would write against the runs
    behind them: How/Why backed only by failed runs, outcome words their counts contradict, pitfalls
    about another action, duplicate rules, one domain's steps shown for another, a "when to use" its
    examples contradict. Prints each finding with the statement and its evidence; exit status 1
    when there is any."""
    checked_min_runs(min_runs)
    with _open(namespace) as kb, err.status("audit: reading"):
        report = audit_namespace(kb.gateway, kb.namespace, kb.embedder.embed, min_runs)
    if as_json:
        _print_json(report.model_dump(mode="json"))
    else:
        out.print(f"audited {report.documents} documents and {report.skills} skills of namespace "
                  f"{report.namespace!r}: {len(report.findings)} findings", markup=False, highlight=False)
        for finding in report.findings:
            out.print(f"\n{finding.where} — {finding.check}: {finding.detail}\n  statement: {finding.statement}\n"
                      f"  evidence: {finding.evidence}", markup=False, highlight=False)
        if report.findings:
            out.print("\nchecks: " + "; ".join(f"{name}: {what}" for name, what in CHECKS.items()),
                      markup=False, highlight=False)
    if report.findings:
        raise typer.Exit(1)
