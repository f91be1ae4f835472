"""CLI command groups that live outside :mod:`kbgraph.cli`, one module per capability.

Each module defines ``register(app: typer.Typer) -> None``, which adds its commands to the
``kbgraph`` application; :mod:`kbgraph.cli` calls it for every name in :data:`COMMAND_MODULES`.
"""

from __future__ import annotations

# Modules under kbgraph.commands, registered in this order.
COMMAND_MODULES: tuple[str, ...] = (
    "learning", "mcp", "inspect", "bench_learning", "bench_online", "transfer", "report", "serve", "skills",
    "llm_local",
)
