"""``kbgraph schema apply | status``: the graph schema's constraints, vector and full-text indexes."""

from __future__ import annotations

import typer
from rich.table import Table

from kbgraph.cli._common import JsonOption, _open, _print_json, out
from kbgraph.core.terminal import plain

schema_app = typer.Typer(help="The graph schema: constraints, vector and full-text indexes.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(schema_app, name="schema")


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
