"""What every command module of the CLI shares: the output consoles, the ``--namespace`` and
``--json`` options, settings and knowledge base from the options, the JSON and progress printers,
and the parsers of JSON and ``name=value`` arguments. Command modules import it at the top; it
imports no command module, so the CLI has no import cycle."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.progress import ProgressDisplay, progress_display
from kbgraph.core.settings import Settings, checked_namespace
from kbgraph.core.terminal import SafeConsole, json_safe

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


def seconds_since_start() -> float | None:
    """Wall seconds since this process started (Python's own start-up and every import included),
    from Linux's /proc; None where that cannot be read."""
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - int(after_name[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return None


def startup_and_search(startup_s: float | None, search_ms: float) -> str:
    """The line that tells a command's start-up from its search, which a person timing the command
    would otherwise read as one."""
    startup = f"start-up {startup_s:.1f} s" if startup_s is not None else "start-up"
    return (f"{startup} (Python and kbgraph's imports, the Neo4j connection, loading the embedding model), "
            f"then the search {search_ms:.0f} ms")


def _print_json(value: Any) -> None:
    sys.stdout.write(json_safe(json.dumps(value, indent=2, default=str)) + "\n")


def _progress() -> ProgressDisplay:
    return progress_display(err)


def _json_argument(raw: str, where: str) -> Any:
    """``raw`` decoded as JSON (json.JSONDecodeError when it is not JSON), or InvalidInputError
    naming ``where`` when it is JSON out of bounds: nested so deep the decoder itself recurses out
    (RecursionError), deeper than the models take, or an integer Neo4j cannot store."""
    from kbgraph.core.jsonl import loads
    from kbgraph.core.value_bounds import MAX_NESTING_DEPTH, value_fault

    try:
        value = loads(raw)  # a 5,000-digit integer is a JSONDecodeError with its column too
    except RecursionError:
        raise InvalidInputError([f"{where}: nested deeper than {MAX_NESTING_DEPTH} levels"]) from None
    if fault := value_fault(value):
        raise InvalidInputError([fault.within(where)])
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


def add_commands(app: typer.Typer, commands: dict[str, Callable[..., None]]) -> None:
    """Adds each function to ``app`` as the command of that name, in this order (the order
    ``--help`` lists them in)."""
    for name, command in commands.items():
        app.command(name)(command)
