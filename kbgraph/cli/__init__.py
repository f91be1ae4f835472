"""The ``kbgraph`` command line. Errors print as one line (``kbgraph: error: …``), never a traceback.

The app, :func:`run` (a command line to its exit status) and :func:`main` (the command) live here;
the commands live in one module per group (``records``, ``search``, ``learning``, ``bench``, …), and
what they share (options, printers, the parsers of arguments) in :mod:`kbgraph.cli._common`.
``python -m kbgraph.cli`` runs :mod:`kbgraph.cli.__main__`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import NoReturn, Protocol, cast

import neo4j
import typer
from pydantic import ValidationError

from kbgraph.cli import (
    audit,
    bench,
    cypher,
    demo,
    learning,
    llm,
    mcp,
    records,
    report,
    schema,
    search,
    serve,
    server,
    skills,
    transfer,
)
from kbgraph.cli import eval as evaluation  # not bound as `eval`, the builtin
from kbgraph.cli._common import err
from kbgraph.cli.records import _print_ingest_report
from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.store.connection import quiet_driver_log

# _print_ingest_report: the ingest report's printer, which tests call directly.
__all__ = ["_print_ingest_report", "app", "main", "run"]

app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
    help="kbgraph — a knowledge-graph memory engine for LLM agents, on Neo4j.",
)

# `kbgraph --help` lists the commands, then the groups (server, schema, bench, cypher, skills,
# llm), each in the order they are added here.
for _register in (server.register, schema.register, records.register, search.register, evaluation.register,
                  bench.register, demo.register, learning.register, mcp.register, cypher.register,
                  transfer.register, report.register, serve.register, skills.register, llm.register, audit.register):
    _register(app)


def _undecodable_argument(argv: Sequence[str]) -> str | None:
    """Python reads argument bytes that are not UTF-8 as lone surrogates (surrogateescape)."""
    for index, argument in enumerate(argv, start=1):
        if any("\udc80" <= char <= "\udcff" for char in argument):
            shown = argument.encode("utf-8", "surrogateescape")[:60]
            return f"argument {index} ({shown!r}) is not valid UTF-8 text"
    return None


def _click_error(name: str) -> type[Exception]:
    """The click error class ``name`` that typer raises, found through typer's public
    ``typer.BadParameter``: typer 0.26 and later carry their own copy of click (its private
    ``typer._click``), whose errors are not the click package's, and export none of them but
    BadParameter (and Abort, Exit); earlier typer raised the click package's own."""
    return next(cls for cls in typer.BadParameter.__mro__ if cls.__name__ == name)


#: The base of click's errors (each says itself with format_message() and has an exit_code) and
#: of its usage errors (which carry the context of the command they are about).
ClickException, UsageError = _click_error("ClickException"), _click_error("UsageError")


class _SaysItself(Protocol):
    exit_code: int

    def format_message(self) -> str: ...


def _error(message: str) -> None:
    err.print(message, markup=False, highlight=False)


def _exit_status(code: object) -> int:
    """The status a process ends with on ``SystemExit(code)``, which click raises at the end of
    every run, success included; a code that is not a number is printed to stderr and means 1, as
    Python does it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run(argv: Sequence[str]) -> int:
    """Runs the command line ``argv`` (the arguments after the program's name) and returns the exit
    status, every error reported in one line on stderr: :func:`main` without leaving the process,
    which the tests call to run commands in theirs."""
    quiet_driver_log()  # a failure is reported once, by us, in one line
    if problem := _undecodable_argument(argv):
        _error(f"kbgraph: error: {problem}")
        return 2
    try:
        # `python -m kbgraph.cli` (what ./kb runs) would otherwise name itself that way in --help.
        # Not standalone: click's usage errors come here to be said in one line, not as typer's
        # box of usage, hint and wrapped message; an Exit comes back as its status.
        status = app(args=list(argv), prog_name="kbgraph", standalone_mode=False)
    except SystemExit as exc:
        return _exit_status(exc.code)
    except ClickException as raised:
        click_error = cast(_SaysItself, raised)
        if type(raised).__name__ == "NoArgsIsHelpError":  # the help was printed when it was raised
            if message := click_error.format_message():
                print(message)
            return click_error.exit_code
        ctx = getattr(raised, "ctx", None) if isinstance(raised, UsageError) else None
        where, hint = (f"{ctx.command_path}: ", f" (see {ctx.command_path} --help)") if ctx is not None else ("", "")
        _error(f"kbgraph: error: {where}{' '.join(click_error.format_message().split())}{hint}")
        return click_error.exit_code
    except typer.Abort:
        _error("kbgraph: error: aborted")
        return 1
    except InvalidInputError as exc:
        _error(f"kbgraph: error: {exc}")
        return 2
    except KbgraphError as exc:
        _error(f"kbgraph: error: {exc}")
        return 1
    except ValidationError as exc:  # settings from flags, environment or kbgraph.toml
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False))
        _error(f"kbgraph: error: invalid setting: {problems}")
        return 2
    except neo4j.exceptions.Neo4jError as exc:
        # One line: some of Neo4j's messages quote a whole query's values (9 KB for a vector).
        reason = (exc.message or "").strip().splitlines()[0] if (exc.message or "").strip() else "no reason given"
        reason = reason if len(reason) <= 300 else f"{reason[:300]}… ({len(exc.message or ''):,} characters)"
        _error(f"kbgraph: error: Neo4j refused a query: {exc.code}: {reason}")
        return 1
    except neo4j.exceptions.DriverError as exc:
        _error(f"kbgraph: error: lost Neo4j during the run ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
               "completed batches are kept and re-running resumes")
        return 1
    except Exception as exc:  # a bug: say so in one line, the traceback only on request
        if os.environ.get("KBGRAPH_DEBUG"):
            raise
        _error(f"kbgraph: internal error: {type(exc).__name__}: {exc} (set KBGRAPH_DEBUG=1 for a traceback)")
        return 70
    return status if isinstance(status, int) and not isinstance(status, bool) else 0


def main() -> NoReturn:
    """The ``kbgraph`` command (and ``python -m kbgraph.cli``)."""
    sys.exit(run(sys.argv[1:]))
