"""``kbgraph mcp``: serve the knowledge base to MCP clients (Claude Desktop, IDEs, agent
frameworks) over stdio. See :mod:`kbgraph.mcp_server` for the tools."""

from __future__ import annotations

from typing import Annotated

import typer

from kbgraph.cli._common import NamespaceOption, add_commands, err
from kbgraph.core.extras import require
from kbgraph.core.settings import Settings, checked_namespace


def register(app: typer.Typer) -> None:
    add_commands(app, {"mcp": mcp})


def mcp(
    namespace: NamespaceOption = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", help="Agent name used when a tool call names none (private experiences, ability)")] = None,
) -> None:
    """Serve kbgraph as an MCP server over stdio (tools: search_experiences, refine_steps,
    record_outcome, add_trajectory, get_experience). Stdout carries only the protocol."""
    require("mcp", "mcp", "kbgraph mcp")
    from kbgraph.mcp_server import serve_stdio

    # Settings are read now, so a bad configuration fails at start-up; Neo4j and the
    # embedding model are opened on the first tool call.
    settings = Settings() if namespace is None else Settings(namespace=checked_namespace(namespace))
    err.print(f"kbgraph mcp: serving namespace {settings.namespace!r} over stdio "
              "(Neo4j is opened on the first tool call)", markup=False, highlight=False)
    serve_stdio(settings, default_agent=agent)
