"""``kbgraph llm local start|stop|status``: a real LLM on this machine for the LLM path (llama-cpp-python's
OpenAI-compatible server with Gemma 3 270M, built once into kbgraph's cache; see
:mod:`kbgraph.llm.local_server` and docs/llm.md)."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from kbgraph.cli._common import JsonOption, _print_json, err, out
from kbgraph.llm.local_server import LocalLlamaServer, LocalLlamaStatus, environment_variables
from kbgraph.core.settings import Settings

llm_app = typer.Typer(help="The model behind the LLM path (abstractor, reflector, document writer).",
                      no_args_is_help=True)
local_app = typer.Typer(help="A local OpenAI-compatible server with Gemma 3 270M (llama-cpp-python), cached "
                             "in kbgraph's cache folder.", no_args_is_help=True)
llm_app.add_typer(local_app, name="local")


def register(app: typer.Typer) -> None:
    app.add_typer(llm_app, name="llm")


def local_server() -> LocalLlamaServer:
    """The local LLM server of the settings, saying what it does on standard error."""
    return LocalLlamaServer.from_settings(Settings(), say=lambda line: err.print(line, markup=False,
                                                                                  highlight=False))


def _export_line(server: LocalLlamaServer) -> str:
    variables = environment_variables(server.client_settings())
    return "export " + " ".join(f"{name}={shlex.quote(value)}" for name, value in variables.items())


def _show(status: LocalLlamaStatus, server: LocalLlamaServer, as_json: bool) -> None:
    if as_json:
        settings = server.client_settings() if status.running else None
        _print_json(status.as_dict() | {"settings": settings,
                                        "environment_variables": environment_variables(settings or {})})
        return
    if not status.running:
        built = "built" if status.built else "not built yet (the first start builds it: minutes)"
        out.print(f"local LLM: stopped; environment {status.environment} {built}", markup=False, highlight=False)
        return
    out.print(f"local LLM: {status.model} running (pid {status.pid}) at {status.endpoint}\n"
              f"Point kbgraph's LLM path at it (then `kbgraph ingest …`):\n  {_export_line(server)}",
              markup=False, highlight=False, soft_wrap=True)


@local_app.command("start")
def start(
    port: Annotated[int | None, typer.Option(
        "--port", min=1, max=65535, help="Port on 127.0.0.1 [default: 8736 if free, else any free one]")] = None,
    as_json: JsonOption = False,
) -> None:
    """Start the local LLM server (the first time, build its environment: about 12 minutes)."""
    local = local_server()
    _show(local.start(port), local, as_json)


@local_app.command("status")
def status(as_json: JsonOption = False) -> None:
    """Show whether the local LLM server runs, where, and the settings that use it."""
    local = local_server()
    _show(local.status(), local, as_json)


@local_app.command("stop")
def stop(as_json: JsonOption = False) -> None:
    """Stop the local LLM server."""
    stopped = local_server().stop()
    if as_json:
        _print_json({"stopped": stopped})
    else:
        out.print("local LLM stopped" if stopped else "local LLM was not running")
