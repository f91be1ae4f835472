"""The MCP stdio transport answers every line: what the SDK alone dropped unanswered (malformed
JSON, lone surrogates, deep nesting, ids the SDK misread) gets the JSON-RPC error the
specification names, with the request's id whenever it can be read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import mcp_types as types
import pytest

from kbgraph.mcp_server import stdio as mcp_stdio
from kbgraph.mcp_server.stdio import check_line
from kbgraph.store.managed.server import free_port


def answer(line: str) -> dict[str, Any]:
    raw = line.encode("utf-8", "surrogatepass")
    message, reply = check_line(raw, len(raw))
    assert message is None and reply is not None
    parsed: dict[str, Any] = json.loads(reply)
    return parsed


@pytest.mark.parametrize(("line", "code", "request_id"), [
    ("{", -32700, None),
    ("not json", -32700, None),
    ("42", -32600, None),
    ("[]", -32600, None),
    ('{"jsonrpc": "1.0", "id": 3, "method": "tools/list"}', -32600, 3),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', -32600, None),
    ('{"jsonrpc": "2.0", "id": 9, "method": 12}', -32600, 9),
    ('{"jsonrpc": "2.0", "id": "r1", "method": "tools/call", "params": {"name": "x\\udcff"}}', -32602, "r1"),
    ('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": ' + "[" * 100 + "]" * 100 + "}", -32602, 5),
    ('{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": ' + "[" * 50_000 + "]" * 50_000 + "}", -32600, 6),
])
def test_each_broken_line_gets_the_error_the_spec_names(line: str, code: int, request_id: Any) -> None:
    reply = answer(line)
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id and reply["error"]["code"] == code
    assert reply["error"]["message"] and "Traceback" not in reply["error"]["message"]


@pytest.mark.parametrize(("params", "field", "reason"), [
    ('{"name": 5}', "params.name", "Input should be a valid string"),
    ('{"name": "get_experience", "arguments": "x"}', "params.arguments", "Input should be a valid dictionary"),
    ('{"name": "get_experience", "_meta": {"n": 99999999999999999999}}', "params._meta.n", "outside the 64-bit"),
])
def test_invalid_tool_call_params_are_refused_naming_the_field(params: str, field: str, reason: str) -> None:
    # The SDK answered these "Invalid request parameters" with an empty data: which field, it did not say.
    reply = answer('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": ' + params + "}")
    assert reply["id"] == 8 and reply["error"]["code"] == -32602 and reply["error"]["data"] == {"field": field}
    assert f"{field}: " in reply["error"]["message"] and reason in reply["error"]["message"]


@pytest.mark.parametrize(("method", "params", "field", "reason"), [
    ("initialize", '{"protocolVersion": 5}', "params.protocolVersion", "Input should be a valid string"),
    ("resources/read", "{}", "params.uri", "Field required"),
    ("prompts/get", '{"name": 3}', "params.name", "Input should be a valid string"),
    ("logging/setLevel", '{"level": "loud"}', "params.level", "Input should be 'debug'"),
    ("tools/list", '{"cursor": 5}', "params.cursor", "Input should be a valid string"),
    ("ping", '{"_meta": 3}', "params._meta", "Input should be a valid dictionary"),
])
def test_invalid_params_of_every_method_are_refused_naming_the_field(method: str, params: str, field: str,
                                                                     reason: str) -> None:
    # Outside tools/call the SDK still answered "Invalid request parameters" with an empty data.
    reply = answer(f'{{"jsonrpc": "2.0", "id": 4, "method": "{method}", "params": {params}}}')
    assert reply["id"] == 4 and reply["error"]["code"] == -32602 and reply["error"]["data"] == {"field": field}
    assert f"{field}: {reason}" in reply["error"]["message"]


def test_a_request_before_initialize_and_an_unknown_method_say_why_in_their_data() -> None:
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 2, "method": "ping"},
             {"jsonrpc": "2.0", "id": 3, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 4, "method": "no/such"},
             {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}]
    env = {**os.environ, "NEO4J_URI": f"bolt://127.0.0.1:{free_port()}", "KBGRAPH_NAMESPACE": "stdio"}
    with subprocess.Popen([sys.executable, "-m", "kbgraph.cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, env=env) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("".join(json.dumps(line) + "\n" for line in lines).encode())
        server.stdin.flush()
        replies = {reply["id"]: reply for reply in (json.loads(server.stdout.readline()) for _ in range(5))}
        server.stdin.close()
    before = replies[1]["error"]
    assert before["code"] == -32602 and before["data"] == {"reason": "not initialized"}
    assert "tools/list before initialize: send initialize first" in before["message"]
    assert replies[2]["result"] == {} and "result" in replies[3] and "tools" in replies[5]["result"]
    assert replies[4]["error"]["code"] == -32601 and replies[4]["error"]["data"] == "no/such"


def test_an_sdk_error_with_an_empty_data_gets_its_message_as_the_reason() -> None:
    empty = types.JSONRPCError(jsonrpc="2.0", id=7, error=types.ErrorData(code=-32602, message="Invalid request parameters",
                                                                          data=""))
    given = mcp_stdio._with_data(empty)
    assert isinstance(given, types.JSONRPCError) and given.error.data == {"reason": "Invalid request parameters"}


def test_an_integer_past_64_bits_among_a_tools_arguments_is_left_for_the_tool_to_refuse_by_name() -> None:
    # As a float past the range is: the tool answers a tool error naming the argument (test_mcp).
    line = (b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "add_trajectory", "arguments": '
            b'{"trajectory": {"id": "t", "task": "x", "steps": [{"action": "a", "arguments": {"n": 99999999999999999999}}]}}}}')
    message, reply = check_line(line, len(line))
    assert reply is None and message is not None and message.method == "tools/call"


def test_bytes_that_are_not_utf8_are_a_parse_error() -> None:
    message, reply = check_line(b'{"a": "\xff"}\n', 12)
    assert message is None and json.loads(reply or "")["error"]["code"] == -32700


def test_an_oversized_message_is_refused_by_its_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_stdio, "MAX_MESSAGE_BYTES", 10)
    message, reply = check_line(b'{"jsonrpc"', 500)
    assert message is None and "over the 10-byte limit" in json.loads(reply or "")["error"]["message"]


@pytest.mark.parametrize("line", ["", "   ", '{"jsonrpc": "2.0", "method": 7}'])
def test_blank_lines_and_broken_notifications_need_no_answer(line: str) -> None:
    assert check_line(line.encode(), len(line)) == (None, None)


def test_a_valid_request_is_handed_on() -> None:
    line = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    message, reply = check_line(line, len(line))
    assert reply is None and message is not None and message.method == "tools/list"


def test_a_client_that_writes_its_requests_and_closes_stdin_gets_every_reply() -> None:
    # The SDK cancels what is in progress when its input ends: the last replies were lost (4 of 21).
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    lines: list[dict[str, Any]] = [initialize, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": i, "method": "tools/list" if i % 2 else "ping"} for i in range(1, 21)]
    lines += [{"jsonrpc": "2.0", "id": f"call-{i}", "method": "tools/call",  # a tool error: no Neo4j there
               "params": {"name": "search_experiences", "arguments": {"task": "return an item"}}} for i in range(3)]
    # A request the client cancels needs no answer, and is not waited for.
    lines += [{"jsonrpc": "2.0", "id": "gone", "method": "tools/call",
               "params": {"name": "search_experiences", "arguments": {"task": "x"}}},
              {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "gone"}}]
    env = {**os.environ, "NEO4J_URI": f"bolt://127.0.0.1:{free_port()}", "KBGRAPH_NAMESPACE": "stdio"}
    done = subprocess.run([sys.executable, "-m", "kbgraph.cli", "mcp"], env=env, capture_output=True, timeout=120,
                          input="".join(json.dumps(line) + "\n" for line in lines).encode())
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    answered = {reply["id"] for reply in replies}
    assert answered - {"gone"} == {0, *range(1, 21), "call-0", "call-1", "call-2"}, done.stderr.decode()[-2000:]
    assert done.returncode == 0
    assert all(reply["result"]["isError"] for reply in replies if str(reply["id"]).startswith("call-"))


def test_the_stdio_transport_runs_the_sdks_low_level_server_and_names_the_sdk_should_it_go() -> None:
    """The SDK has no public way to run a session over streams of one's own; kbgraph reads its
    low-level server in one place (lowlevel_server), pinned here for the installed SDK."""
    from mcp.server.lowlevel import Server

    from kbgraph.mcp_server import KnowledgeBaseSource, build_server
    from kbgraph.mcp_server._server import SERVER_NAME, lowlevel_server

    server = build_server(KnowledgeBaseSource(lambda: pytest.fail("no knowledge base is opened")))
    lowlevel = lowlevel_server(server)
    assert isinstance(lowlevel, Server) and lowlevel.name == SERVER_NAME
    assert lowlevel.create_initialization_options().server_name == SERVER_NAME
    with pytest.raises(RuntimeError, match=r"installed MCP SDK \(mcp \S+\) keeps no low-level server"):
        lowlevel_server(object())  # type: ignore[arg-type]


def test_an_unknown_prompt_is_a_bad_parameter_and_a_known_one_is_read_from_the_sdks_public_list() -> None:
    import anyio
    from mcp.shared.exceptions import MCPError

    from kbgraph.mcp_server import KnowledgeBaseSource, build_server

    server = build_server(KnowledgeBaseSource(lambda: pytest.fail("no knowledge base is opened")))
    with pytest.raises(MCPError) as raised:
        anyio.run(server.get_prompt, "no-such-prompt")
    assert raised.value.error.code == types.INVALID_PARAMS
    assert raised.value.error.message == "Unknown prompt: 'no-such-prompt' (kbgraph offers no prompts)"

    @server.prompt()
    def greet() -> str:  # a prompt added the SDK's public way is known and served
        return "hello"

    result = anyio.run(server.get_prompt, "greet")
    assert [m.content.text for m in result.messages] == ["hello"]  # type: ignore[union-attr]


def test_the_server_reads_the_sdks_private_state_in_one_place_only() -> None:
    """kbgraph's server subclasses the SDK's: what it reads of the SDK's private names is listed
    here (each behind a function that names the SDK should it go)."""
    import inspect

    from mcp.server.mcpserver import MCPServer

    from kbgraph.mcp_server import KnowledgeBaseSource, _server, build_server

    server = build_server(KnowledgeBaseSource(lambda: pytest.fail("no knowledge base is opened")))
    private = {name for name in [*dir(MCPServer), *vars(server)]
               if name.startswith("_") and not name.startswith("__")}
    source = inspect.getsource(_server)
    read = {name for name in private if f".{name}" in source or f'"{name}"' in source}
    assert read == {"_lowlevel_server"}
