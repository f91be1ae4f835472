"""Request bodies refused before an endpoint runs: over the size limit (413), or not what it takes (422).

:func:`body_problem` says in one line where a body is refused — where it stops being JSON, or the
field and why, checked again against the endpoint's model so the words are the MCP tools'.
:class:`BodyLimit` refuses an oversized body with a JSON line rather than Starlette's plain text.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kbgraph.core.jsonl import loads
from kbgraph.core.value_bounds import value_problem
from kbgraph.http_api._bodies import API_PREFIX
from kbgraph.http_api._errors import ApiError, answer
from kbgraph.tools import argument_problems, one_line

#: Larger request bodies are refused (413): a few thousand trajectories fit in far less.
MAX_BODY_BYTES = 32 * 1024 * 1024


def _json_kind(value: Any) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return kinds.get(type(value), type(value).__name__)


def _where_json_stops(document: str, position: int) -> str:
    line = document.count("\n", 0, position) + 1
    column = position - (document.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}"


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach ``host`` (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name (or "" = every interface): it may reach beyond this machine
        return False


def loopback_host_header(value: str | None) -> bool:
    """Whether a request's ``Host`` header names this machine (``localhost``, ``127.0.0.1``,
    ``[::1]``, with or without a port). Without an API key only these are answered: a web page
    whose domain is rebound to 127.0.0.1 still sends its own name (DNS rebinding)."""
    if value is None:  # HTTP/1.0 without a Host: no browser sends that
        return True
    host = value.strip()
    if host.startswith("["):  # [::1] or [::1]:8000
        host = host[: host.find("]") + 1] if "]" in host else host
    elif host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return bool(host) and is_loopback(host)


#: An endpoint's body, checked again to name its problems: the model, and whether the body is a list.
BodyModel = tuple[type[BaseModel], bool]


def body_problem(request: Request, exc: RequestValidationError, bodies: dict[str, BodyModel]) -> str:
    """One line saying where the request body is refused and why (the MCP tools' wording).
    ``bodies``: each endpoint's body by the endpoint's name."""
    errors = list(exc.errors())
    headline = "invalid request body, nothing was done"
    for error in errors:
        if error.get("type") == "json_invalid":
            document = exc.body if isinstance(exc.body, str) else ""
            position = error["loc"][-1] if isinstance(error["loc"][-1], int) else 0
            return (f"{headline}: the body is not valid JSON: {error.get('ctx', {}).get('error', 'JSON decode error')} "
                    f"at {_where_json_stops(document, position)}")
    if isinstance(exc.body, bytes | bytearray):
        sent = request.headers.get("content-type") or "none"
        return f"{headline}: the body must be JSON, sent with 'Content-Type: application/json' (Content-Type: {sent})"
    route = request.scope.get("route")
    expected = bodies.get(getattr(route, "name", ""))
    if any(error.get("loc") == ("body",) and error.get("type") == "missing" for error in errors):
        return f"{headline}: the body is missing: send a JSON {'list' if expected and expected[1] else 'object'}"
    if expected is not None:
        model, is_list = expected
        body = exc.body
        if is_list and not isinstance(body, list):
            return f"{headline}: body: expected a JSON list of trajectories (got {_json_kind(body)})"
        if not is_list and not isinstance(body, dict):
            return f"{headline}: body: expected a JSON object (got {_json_kind(body)})"
        arguments: Any = {"trajectories": body} if is_list else body
        if problem := value_problem(arguments):  # refused before the model looks: say where
            return f"{headline}: {problem}"
        try:
            model.model_validate(arguments)
        except ValidationError as error:
            return f"{headline}: {argument_problems(error, arguments)}"
    # Not reached for kbgraph's bodies; any other parameter is named by FastAPI's location.
    problems = [f"{'.'.join(str(part) for part in error.get('loc', ())) or '(request)'}: {error.get('msg', 'invalid')}"
                for error in errors]
    return one_line(f"{headline}: " + "; ".join(problems))


def unreadable_body(body: bytes) -> str:
    """Why a body the JSON decoder gave up on with a bare ValueError (an integer too long for
    Python to read, bytes that are not UTF-8) is refused, and where: it is read again, by the
    decoder that says where."""
    headline = "invalid request body, nothing was done: the body is not valid JSON"
    try:
        loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        return (f"invalid request body, nothing was done: the body is not UTF-8 text (byte {error.start + 1:,} "
                f"is 0x{body[error.start]:02x}); send JSON encoded as UTF-8")
    except json.JSONDecodeError as error:
        return f"{headline}: {error.msg} at {_where_json_stops(error.doc, error.pos)}"
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return f"{headline}: {type(error).__name__}"
    return headline


class BodyTooLarge(Exception):
    pass


class BodyLimit:
    """Refuses request bodies over ``max_bytes`` with 413 and a JSON line, like every other
    refusal (Starlette's own limit answers in plain text): at once for a declared Content-Length,
    otherwise when the body read so far outgrows it."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def _message(self, path: str) -> str:
        advice = {f"{API_PREFIX}/trajectories": "send fewer trajectories at once",
                  f"{API_PREFIX}/trajectory": "send a shorter trajectory (fewer or shorter steps)"}.get(
            path.rstrip("/"), "send a shorter body (a task, steps and ids fit in far less)")
        return f"the request body is over the limit of {self.max_bytes:,} bytes: {advice}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await answer(ApiError(413, self._message(scope.get("path", ""))))(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self._message(scope.get("path", "")))
            return message

        await self.app(scope, limited, send)
