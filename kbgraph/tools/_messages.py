"""Failures and refused arguments as one line a model can act on, the same from every way in.

:func:`failure_message` words the failures kbgraph anticipates (bad input, Neo4j refusing a query
or lost); :func:`argument_problems` names each refused argument by its path in what was sent.
"""

from __future__ import annotations

import json
import re
from typing import Any

import neo4j
from pydantic import ValidationError

from kbgraph.core.errors import KbgraphError

#: Problems shown in one error line; the rest are counted.
MAX_PROBLEMS_SHOWN = 5
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_WHOLE = "(arguments)"


def failure_message(exc: Exception) -> str | None:
    """The message a model can act on for a failure kbgraph anticipates; None for a bug."""
    # Settings are validated when a server starts (kbgraph.cli.mcp, kbgraph.cli.serve), so a
    # pydantic ValidationError here would be a bug and is left to the caller like any other.
    if isinstance(exc, KbgraphError):  # bad input, Neo4j unreachable, embedder missing, …
        return str(exc)
    if isinstance(exc, neo4j.exceptions.Neo4jError):
        return f"Neo4j refused a query: {exc.code}: {exc.message}"
    if isinstance(exc, neo4j.exceptions.DriverError):
        first_line = (str(exc).splitlines() or [""])[0]
        return (f"lost Neo4j during the call ({type(exc).__name__}: {first_line}); what was committed "
                "is kept and calling again resumes")
    return None


def one_line(text: str) -> str:
    """A message as one line: the headline, then its indented problems joined by '; '."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    return lines[0] + (" " + "; ".join(lines[1:]) if len(lines) > 1 else "")


def json_type(value: Any) -> str:
    """The JSON kind of ``value``, as a message names it: 'a string', 'an integer', 'null' …"""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _place(part: str | int) -> str:
    if isinstance(part, int) or _PLAIN_NAME.fullmatch(part):
        return str(part)
    return json.dumps(part[:40] + ("…" if len(part) > 40 else ""))  # escapes control characters


def _input_path(loc: tuple[str | int, ...], arguments: Any, missing: bool) -> str:
    """Where in the arguments a problem is. Pydantic's location also names the member of a union
    that was tried ('outcome.bool', 'outcome.float'): only the steps found in the input are kept."""
    parts: list[str] = []
    value = arguments
    for position, part in enumerate(loc):
        if isinstance(value, str) and value[:1] in "[{":  # a list or object sent as a JSON string
            try:
                value = json.loads(value)
            except (ValueError, RecursionError):
                pass
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        elif not (missing and position == len(loc) - 1):
            continue
        parts.append(_place(part))
    return ".".join(parts) or _WHOLE


def argument_problems(error: ValidationError, arguments: Any) -> str:
    """One line: ``field.path: what it should be (got a string)`` for each argument refused."""
    reasons: dict[str, list[str]] = {}
    given: dict[str, str] = {}
    for item in error.errors(include_url=False):
        path = _input_path(item["loc"], arguments, missing=item["type"] == "missing")
        reason = str(item["msg"]).removeprefix("Value error, ")
        if reason not in reasons.setdefault(path, []):
            reasons[path].append(reason)
        if item["type"].endswith("_type"):  # the kind of value that was refused, never the value itself
            given.setdefault(path, f" (got {json_type(item['input'])})")
    # A check across fields (a blank task with no steps) has no path: its reason names the fields.
    problems = [("" if path == _WHOLE else f"{path}: ") + found[0]
                + "".join(", or " + other.removeprefix("Input should be ") for other in found[1:])
                + given.get(path, "") for path, found in reasons.items()]
    more = len(problems) - MAX_PROBLEMS_SHOWN
    return one_line("; ".join(problems[:MAX_PROBLEMS_SHOWN]) + (f"; … and {more} more" if more > 0 else ""))
