"""``kbgraph server start | reset-password | stop | status``: the managed local Neo4j (see
:mod:`kbgraph.store.managed`), used when NEO4J_URI is not set."""

from __future__ import annotations

from typing import Annotated

import typer

from kbgraph.cli._common import JsonOption, _print_json, _progress, _settings, out
from kbgraph.core.progress import stage_reporter, with_prefix
from kbgraph.kb import KnowledgeBase
from kbgraph.plan_warmup import PlanWarmup
from kbgraph.store.managed import ManagedNeo4j
from kbgraph.store.server_info import server_status

server_app = typer.Typer(help="The managed local Neo4j (used when NEO4J_URI is not set).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start(
    as_json: JsonOption = False,
    warm_plans: Annotated[bool, typer.Option(
        "--warm-plans/--no-warm-plans",
        help="Once it runs, run kbgraph's statements once in a namespace of their own (deleted after), so that "
             "Neo4j plans them now, not during the first adds and searches (kbgraph.plan_warmup)")] = True,
) -> None:
    """Start the managed Neo4j (downloads it from Maven Central on first use)."""
    settings = _settings()
    status = ManagedNeo4j.from_settings(settings).start()
    warmed: PlanWarmup | None = None
    if warm_plans:
        with KnowledgeBase.from_settings(settings, quiet=True) as kb, _progress() as progress:
            warmed = kb.warm_plans(with_prefix(stage_reporter(progress), "warming plans"))
    if as_json:
        _print_json(status.as_dict() | {"plans_warmed": warmed.as_dict() if warmed is not None else None})
    else:
        out.print(f"Neo4j {status.version} running (pid {status.pid}) — Bolt {status.bolt_uri}, "
                  f"Browser {status.browser_url}")
        if warmed is not None:
            out.print(f"plans warmed in {warmed.seconds['total']:.1f} s ({warmed.added} sample runs and experiences added and "
                      f"{warmed.searches} searches in namespace {warmed.namespace}, deleted)", markup=False, highlight=False)


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
def server_status_command(as_json: JsonOption = False) -> None:
    """Show whether the managed Neo4j runs and where, and which Neo4j and Java kbgraph uses (asked of
    the running server: the managed one, or the one at NEO4J_URI)."""
    status = server_status(_settings())
    if as_json:
        _print_json(status)
        return
    state = f"running (pid {status['pid']})" if status["running"] else "stopped"
    guide = f"\n  Guide   :play {status['browser_guide_url']}" if status["browser_guide_url"] else ""
    out.print(f"managed Neo4j {status['version']} (line {status['line']}): {state}\n  Bolt    {status['bolt_uri']}\n"
              f"  Browser {status['browser_url']}{guide}\n  Home    {status['home']}", markup=False, highlight=False)
    if status["uses"] != "managed":
        uses = f"kbgraph uses {status['neo4j_uri']}"
    else:
        uses = "kbgraph uses the managed server" if status["running"] else "kbgraph's managed server would start"
    java = f"Java {status['java']}" if status["java"] else "Java unknown"
    vector = ", Lucene vector API on" if status.get("vector_api") else ""
    out.print(f"{uses}: Neo4j {status['neo4j_version'] or 'unknown'} on {java}{vector}", markup=False, highlight=False)
    if status.get("error"):
        out.print(f"  ({status['error']})", markup=False, highlight=False)
