"""``kbgraph serve``: the HTTP API (FastAPI, OpenAPI at /docs). See :mod:`kbgraph.http_api`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from kbgraph.cli._common import NamespaceOption, add_commands, err
from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.core.settings import Settings, checked_namespace

#: What the HTTP API needs beyond kbgraph's own dependencies (the ``http`` extra).
HTTP_PACKAGES = ("fastapi", "uvicorn", "starlette")


def register(app: typer.Typer) -> None:
    add_commands(app, {"serve": serve})


def _api_key(path: Path | None, argument: str | None) -> str | None:
    """The key from --api-key-file or KBGRAPH_API_KEY. Never from the command line: every user of
    the machine can read a process's arguments (ps, /proc/PID/cmdline)."""
    if argument is not None:
        raise InvalidInputError(["--api-key: a key on the command line is visible to every user of this machine "
                                 "(ps); set KBGRAPH_API_KEY or put it in a file given with --api-key-file"],
                                "cannot serve")
    if path is None:
        return os.environ.get("KBGRAPH_API_KEY")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInputError([f"--api-key-file {path}: cannot read it ({getattr(error, 'strerror', None) or error})"],
                                "cannot serve") from None
    return lines[0].strip() if lines else ""


def serve(
    namespace: NamespaceOption = None,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; beyond loopback (e.g. 0.0.0.0) an API key is required")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port to listen on (0: a free one)")]
    = 8000,
    api_key_file: Annotated[Path | None, typer.Option(
        "--api-key-file", help="File holding the key clients send as 'Authorization: Bearer <key>' (its first "
                               "line); or set KBGRAPH_API_KEY. Optional on loopback")] = None,
    api_key_argument: Annotated[str | None, typer.Option("--api-key", hidden=True)] = None,
) -> None:
    """Serve kbgraph as an HTTP API: search, refine, steps search, feedback, adding trajectories,
    experiences by id, stats and health. The namespace is -n unless a request's
    X-Kbgraph-Namespace header names another. Stop with Ctrl-C."""
    # Settings and the binding are checked before anything is loaded or connected.
    api_key = _api_key(api_key_file, api_key_argument)
    settings = Settings() if namespace is None else Settings(namespace=checked_namespace(namespace))
    try:
        from kbgraph import http_api
    except ImportError as exc:
        if exc.name not in HTTP_PACKAGES:
            raise
        raise KbgraphError(f"kbgraph serve needs the 'http' extra ({exc.name} is not installed): "
                           "pip install 'kbgraph[http]'") from None

    def announce(line: str) -> None:
        err.print(line, markup=False, highlight=False)

    http_api.serve(settings, host=host, port=port, api_key=api_key, announce=announce)
