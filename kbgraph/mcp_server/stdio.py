"""The stdio transport of ``kbgraph mcp``: the MCP SDK's, with every line checked before the SDK
sees it, so that no line goes unanswered.

The SDK's own reader drops a line it cannot parse (malformed JSON, a lone surrogate, nesting deep
enough to exhaust the recursion limit) after logging it, and the client waits for an answer that
never comes. Here each line is read with a size bound, decoded, parsed and bounded
(kbgraph.core.value_bounds) first; a line that fails gets the JSON-RPC error the specification names
(-32700 parse error, -32600 invalid request, -32602 invalid params), with the request's id when it
could be read, and the server goes on serving.

When the client closes stdin, every request already handed on is answered before the SDK is told
the input has ended: on end of input the SDK cancels the requests still in progress, and a client
that wrote its requests and closed stdin lost the last replies.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any, get_args

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel, ValidationError
from mcp.shared.message import SessionMessage

from kbgraph.core.jsonl import LongIntegerError, json_problem, loads, read_bounded_line
from kbgraph.core.value_bounds import MAX_NESTING_DEPTH, value_problem

#: A request line longer than this is refused unread (MCP tool arguments are small).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

#: What the SDK's low-level ``Server.run`` reads from and writes to: anyio's memory streams (the
#: SDK's own stdio transport wraps them to carry each sender's context variables, which nothing
#: here sets).
Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


def _error(request_id: Any, code: int, message: str, field: str | None = None, reason: str | None = None) -> str:
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:  # the SDK's own invalid-params errors carry an empty data and no field
        error["data"] = {"field": field}
    elif reason is not None:
        error["data"] = {"reason": reason}
    reply = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return json.dumps(reply, ensure_ascii=True)


def _request_id(value: Any) -> Any:
    """The id to answer with: the request's own when it is a valid id, else null (as the spec says)."""
    if isinstance(value, dict):
        found = value.get("id")
        if isinstance(found, str | int) and not isinstance(found, bool) and value_problem(found) is None:
            return found
    return None


# An unterminated string runs to the end (possessively): else from each of n quotes in
# '\\"\\"\\"…' the scan walked the rest of the message again, O(n²).
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\Z)|[\[\]{}:,]|[^\s\[\]{}:,"]+')


def _top_level_id(text: str) -> Any:
    """The id of a request too deep for the JSON decoder, read by a flat scan of its tokens so
    that the client can still match the error to its request (null if it cannot be found)."""
    depth, expect_key, key = 0, False, None
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            expect_key = token == "{" and depth == 1
            if depth > 1 and key == "id":
                return None
        elif token in "]}":
            depth -= 1
            if depth <= 0:
                return None
        elif depth != 1 or token == ":":
            continue
        elif token == ",":
            expect_key, key = True, None
        elif expect_key:
            key = token[1:-1] if token.startswith('"') else None
            expect_key = False
        elif key == "id":
            try:
                return _request_id({"id": json.loads(token)})
            except ValueError:
                return None
    return None


def check_line(raw: bytes, length: int) -> tuple[Any | None, str | None]:
    """(the JSON-RPC message, None) for a line to hand on, or (None, the error reply to write), or
    (None, None) for a line that needs no answer (blank, or a malformed notification)."""
    if length > MAX_MESSAGE_BYTES:
        return None, _error(None, types.PARSE_ERROR, f"message is {length:,} bytes, over the {MAX_MESSAGE_BYTES:,}-byte limit")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, _error(None, types.PARSE_ERROR, f"message is not UTF-8 (byte {exc.start + 1})")
    if not text.strip():
        return None, None
    try:
        value = loads(text)  # an integer of 5,000 digits too: a parse error with its column
    except LongIntegerError as exc:  # valid JSON, so the request's id can still be found
        return None, _error(_top_level_id(text), types.INVALID_REQUEST, f"invalid request: {json_problem(exc)}")
    except json.JSONDecodeError as exc:
        return None, _error(None, types.PARSE_ERROR, json_problem(exc))
    except RecursionError:
        return None, _error(_top_level_id(text), types.INVALID_REQUEST, f"message nested deeper than {MAX_NESTING_DEPTH} levels")
    request_id = _request_id(value)
    is_notification = isinstance(value, dict) and "id" not in value and "method" in value
    if (problem := value_problem(value)) and not _left_to_the_tool(value):
        code = types.INVALID_PARAMS if problem.startswith("params") else types.INVALID_REQUEST
        field = problem.split(":", 1)[0] if code == types.INVALID_PARAMS else None
        return None, None if is_notification else _error(request_id, code, f"invalid request: {problem}", field)
    if problem := _envelope_problem(value):
        return None, None if is_notification else _error(request_id, types.INVALID_REQUEST, f"invalid request: {problem}")
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"][1:]) or "(message)"
        reply = _error(request_id, types.INVALID_REQUEST, f"invalid request: {where}: {first['msg']}")
        return None, None if is_notification else reply
    if not is_notification and (found := _params_problem(value)):
        field, reason = found
        return None, _error(request_id, types.INVALID_PARAMS, f"invalid params: {field}: {reason}", field)
    return message, None


def _request_models() -> dict[str, type[BaseModel]]:
    """The model of each request a client may send, by its method (the SDK's union of them)."""
    models: dict[str, type[BaseModel]] = {}
    for model in get_args(types.ClientRequest):
        for method in get_args(model.model_fields["method"].annotation):
            models[method] = model
    return models


_REQUESTS = _request_models()


def _left_to_the_tool(value: Any) -> bool:
    """Whether the only values out of bounds are integers past 64 bits among a tool call's
    arguments: the tool refuses those by the argument's name, as it refuses 1e308, rather than the
    whole request being refused here."""
    if not (isinstance(value, dict) and value.get("method") == "tools/call" and isinstance(value.get("params"), dict)):
        return False
    params = value["params"]
    envelope = {**value, "params": {name: part for name, part in params.items() if name != "arguments"}}
    return value_problem(envelope) is None and value_problem(params.get("arguments"), int64=False) is None


def _params_problem(value: dict[str, Any]) -> tuple[str, str] | None:
    """(``params.field``, reason) when a request's params are not what the SDK takes for its
    method (tools/call, initialize, resources/read, …): the SDK refuses them as "Invalid request
    parameters" with an empty data, naming no field. Methods it does not know are its to answer
    (Method not found, naming the method)."""
    model = _REQUESTS.get(value.get("method", ""))
    if model is None:
        return None
    try:
        model.model_validate({key: value[key] for key in ("method", "params") if key in value}, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        return ".".join(str(part) for part in first["loc"]) or "params", first["msg"]
    return None


def _envelope_problem(value: Any) -> str | None:
    """What the SDK's lenient parsing would let through or misread (an object id made the request
    a notification, which is never answered)."""
    if isinstance(value, list):
        return "batches are not supported: send one request per line"
    if not isinstance(value, dict):
        return f"a message must be a JSON object, not {type(value).__name__}"
    if value.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "id" in value and (isinstance(value["id"], bool) or not isinstance(value["id"], str | int)):
        return "id must be a string or an integer"
    if "method" in value and not isinstance(value["method"], str):
        return "method must be a string"
    return None


#: What a client may ask before initialize (as the SDK serves it).
BEFORE_INITIALIZE = frozenset({"ping"})


def _before_initialize(request: types.JSONRPCRequest) -> str | None:
    """The error for a request sent before initialize, which the SDK refuses as "Invalid request
    parameters" with an empty data: the same code, saying why."""
    if request.method in BEFORE_INITIALIZE:
        return None
    return _error(request.id, types.INVALID_PARAMS,
                  f"invalid request: {request.method} before initialize: send initialize first",
                  reason="not initialized")


def _with_data(message: types.JSONRPCMessage) -> types.JSONRPCMessage:
    """An error of the SDK's with an empty ``data`` given its message as the reason: a client
    that reads ``data`` finds why, not an empty string."""
    if isinstance(message, types.JSONRPCError) and message.error.data == "":
        error = message.error.model_copy(update={"data": {"reason": message.error.message}})
        return message.model_copy(update={"error": error})
    return message


class _Unanswered:
    """The requests handed to the SDK and not answered yet, by id (as text: the SDK takes "7" and
    7 for one id). A request the client cancels needs no answer (the specification forbids one)."""

    def __init__(self) -> None:
        self._ids: Counter[str] = Counter()
        self._changed = anyio.Event()

    def asked(self, request_id: types.RequestId) -> None:
        self._ids[str(request_id)] += 1

    def settled(self, request_id: Any) -> None:
        key = str(request_id)
        if self._ids[key] > 0:
            self._ids[key] -= 1
        if self._ids[key] <= 0:
            del self._ids[key]
        self._changed.set()
        self._changed = anyio.Event()

    def settled_by(self, message: types.JSONRPCMessage) -> None:
        """Settles what ``message`` (a reply of the SDK, or a client's cancellation) settles."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
            self.settled(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            params = message.params or {}
            if (request_id := params.get("requestId")) is not None:
                self.settled(request_id)

    async def all_answered(self) -> None:
        while self._ids:
            await self._changed.wait()


def _read_line(wire: IO[bytes]) -> tuple[bytes, int]:
    return read_bounded_line(wire, MAX_MESSAGE_BYTES)


@asynccontextmanager
async def bounded_stdio_server(stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> AsyncIterator[Streams]:
    """Like ``mcp.server.stdio.stdio_server``: while serving, fd 0 reads the null device and fd 1
    writes to stderr, so stray output from handlers never reaches the protocol stream."""
    restore: list[tuple[int, int]] = []
    if stdin is None:
        stdin = os.fdopen(_divert(0, os.open(os.devnull, os.O_RDONLY), restore), "rb", buffering=0)
    if stdout is None:
        sys.stdout.flush()
        stdout = os.fdopen(_divert(1, os.dup(2), restore), "wb", buffering=0)
    wire_in, wire_out = stdin, stdout
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writing = anyio.Lock()
    unanswered = _Unanswered()

    async def write(line: str) -> None:
        async with writing:
            await anyio.to_thread.run_sync(wire_out.write, (line + "\n").encode("utf-8"))

    initialize_sent = False

    async def stdin_reader() -> None:
        nonlocal initialize_sent
        async with read_stream_writer:
            while True:
                raw, length = await anyio.to_thread.run_sync(_read_line, wire_in, abandon_on_cancel=True)
                if not raw:  # the end of input ends the SDK's loop only once every request is answered
                    await unanswered.all_answered()
                    return
                message, reply = check_line(raw, length)
                if reply is None and isinstance(message, types.JSONRPCRequest):
                    initialize_sent = initialize_sent or message.method == "initialize"
                    reply = None if initialize_sent else _before_initialize(message)
                if reply is not None:
                    await write(reply)
                elif message is not None:
                    if isinstance(message, types.JSONRPCRequest):
                        unanswered.asked(message.id)
                    else:
                        unanswered.settled_by(message)
                    await read_stream_writer.send(SessionMessage(message))

    async def stdout_writer() -> None:
        async with write_stream_reader:
            async for session_message in write_stream_reader:
                await write(_with_data(session_message.message).model_dump_json(by_alias=True, exclude_unset=True))
                unanswered.settled_by(session_message.message)

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(stdin_reader)
            tasks.start_soon(stdout_writer)
            yield read_stream, write_stream
    finally:
        for fd, saved in reversed(restore):
            os.dup2(saved, fd)
            os.close(saved)


def _divert(fd: int, replacement: int, restore: list[tuple[int, int]]) -> int:
    """A private duplicate of ``fd`` (the wire) after pointing ``fd`` itself at ``replacement``."""
    wire = os.dup(fd)
    os.dup2(replacement, fd)
    os.close(replacement)
    restore.append((fd, os.dup(wire)))
    return wire
