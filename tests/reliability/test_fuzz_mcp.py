"""Property-based fuzz of ``kbgraph mcp`` over its stdio transport, written as a broken or hostile
MCP client would: malformed JSON, lone surrogates, deep nesting, wrong types in every tool's
arguments. Every request gets an answer (a result, a tool error or a JSON-RPC error) within a
bound, and the server keeps serving: a well-formed call right after still works. Rejected tool
calls write nothing (the namespace's counts are unchanged)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import neo4j
import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.mcp_server import TOOL_NAMES
from tests.conftest import Neo4jTarget
from tests.reliability.test_fuzz import FUZZ_SEED, NASTY_TEXT, TRIED, VALUES, Deep, dumps, fuzz_settings, mutated

pytestmark = [pytest.mark.timeout(600)]

# A reply slower than this is a failure: MCP hosts time out around 60 s.
REPLY_WITHIN_S = 45.0


class StdioPeer:
    """``python -m kbgraph.cli mcp`` as a subprocess, spoken to line by line."""

    def __init__(self, env: dict[str, str]):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kbgraph.cli", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=env)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send_text(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode("utf-8", "surrogatepass") + b"\n")
        self.process.stdin.flush()

    def reply(self, timeout: float = REPLY_WITHIN_S) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout} s (server alive: {self.process.poll() is None})") from None
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.send_text(dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        answer = self.reply()
        assert answer.get("id") == self.next_id, answer
        return answer

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="module")
def mcp_kb(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> Iterator[KnowledgeBase]:
    knowledge_base = KnowledgeBase(driver, embedder, namespace=f"test-mcpfuzz-{uuid.uuid4().hex[:8]}",
                                   database=neo4j_target.database)
    yield knowledge_base
    knowledge_base.clear()


@pytest.fixture(scope="module")
def peer(neo4j_target: Neo4jTarget, mcp_kb: KnowledgeBase) -> Iterator[StdioPeer]:
    server = StdioPeer({**os.environ, **neo4j_target.env(mcp_kb.namespace), "HF_HUB_OFFLINE": "1"})
    try:
        init = server.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "fuzz", "version": "0"}})
        assert "result" in init, init
        server.send_text(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield server
    finally:
        server.close()


def still_serving(peer: StdioPeer) -> None:
    answer = peer.request("tools/call", {"name": "get_experience", "arguments": {"id": "no-such-id"}})
    assert "result" in answer or "error" in answer, answer


VALID_ARGUMENTS: dict[str, dict[str, Any]] = {
    "search_experiences": {"task": "cancel a pending order", "domain": "retail", "k": 3, "agent": "a1",
                           "steps_so_far": ["get_order_details"]},
    "refine_steps": {"problematic_steps": [{"action": "cancel_pending_order", "error": "order not found"}]},
    "record_outcome": {"retrieved": ["x"], "used": ["x"], "outcome": True, "agent": "a1"},
    "add_trajectory": {"trajectory": {"id": "fuzz-t1", "domain": "retail", "task": "Cancel my pending order.",
                                      "steps": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}}],
                                      "outcome": {"success": True}}},
    "get_experience": {"id": "no-such-id"},
}

RAW_LINES = st.one_of(
    st.sampled_from([
        "{", "}", "[]", "null", "42", '"text"', "{\"jsonrpc\": \"2.0\"", "not json at all",
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_experience", "arguments": {"id": "\\udcff"}}}',
        '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": "\\ud800"}',
        '{"jsonrpc": "2.0", "id": 9, "method": 12}',
        '{"jsonrpc": "1.0", "id": 10, "method": "tools/list"}',
        '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}',
    ]),
    st.integers(50, 100_000).map(lambda n: "[" * n + "]" * n),
    st.integers(50, 20_000).map(lambda n: '{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": '
                                + Deep(n).text() + "}"),
    st.text(max_size=60),
)


@fuzz_settings(60)
@seed(FUZZ_SEED)
@given(line=RAW_LINES)
def test_any_line_gets_an_answer_and_the_server_keeps_serving(peer: StdioPeer, line: str) -> None:
    TRIED["mcp raw line"] = TRIED.get("mcp raw line", 0) + 1
    peer.send_text(line.replace("\n", " "))
    # A line that is a notification (no id) or empty needs no answer; anything else does.
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        message = None
    expects_answer = not (isinstance(message, dict) and "id" not in message and "method" in message) and line.strip()
    if expects_answer:
        answer = peer.reply()
        assert answer.get("jsonrpc") == "2.0" and ("error" in answer or "result" in answer), answer
    still_serving(peer)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from(TOOL_NAMES))
    arguments = draw(st.one_of(mutated(VALID_ARGUMENTS[name]), VALUES, NASTY_TEXT))
    return name, arguments


@fuzz_settings(80)
@seed(FUZZ_SEED)
@given(call=tool_calls())
def test_fuzzed_tool_arguments_get_a_result_or_an_error_and_refusals_write_nothing(
    peer: StdioPeer, mcp_kb: KnowledgeBase, call: tuple[str, Any]
) -> None:
    TRIED["mcp tool call"] = TRIED.get("mcp tool call", 0) + 1
    name, arguments = call
    before = mcp_kb.stats().model_dump(exclude={"namespace"})
    answer = peer.request("tools/call", {"name": name, "arguments": arguments})
    refused = "error" in answer or answer["result"].get("isError")
    if "result" in answer and answer["result"].get("isError"):  # one line a model can act on
        text = " ".join(block["text"] for block in answer["result"]["content"])
        assert text.startswith(name) and "\n" not in text and "Traceback" not in text, text
    if refused:
        assert mcp_kb.stats().model_dump(exclude={"namespace"}) == before, f"{name} refused but wrote: {answer}"
    still_serving(peer)


@pytest.mark.parametrize("outcome", ["yes", "true", "1", "null"])
def test_an_outcome_given_as_a_string_is_refused_not_read_as_a_success(
    peer: StdioPeer, mcp_kb: KnowledgeBase, outcome: str
) -> None:
    before = mcp_kb.stats().model_dump(exclude={"namespace"})
    answer = peer.request("tools/call", {"name": "record_outcome",
                                         "arguments": {"retrieved": [], "used": [], "outcome": outcome, "agent": "a1"}})
    assert answer["result"]["isError"], answer
    [block] = answer["result"]["content"]
    assert block["text"].startswith("record_outcome: invalid arguments, nothing was done: outcome: "), block
    assert "\n" not in block["text"]
    assert mcp_kb.stats().model_dump(exclude={"namespace"}) == before


def test_an_oversized_line_is_refused_unbuffered_and_the_server_keeps_serving(peer: StdioPeer) -> None:
    from kbgraph.mcp_server.stdio import MAX_MESSAGE_BYTES

    TRIED["mcp raw line"] = TRIED.get("mcp raw line", 0) + 1
    peer.send_text('{"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {"x": "' + "a" * MAX_MESSAGE_BYTES + '"}}')
    answer = peer.reply()
    assert answer["error"]["code"] == -32700 and "limit" in answer["error"]["message"], answer
    still_serving(peer)


@fuzz_settings(8)
@seed(FUZZ_SEED)
@given(digits=st.integers(4_301, 200_000), where=st.sampled_from(["params", "arguments", "id"]))
def test_an_integer_too_long_to_read_is_answered_with_its_column_and_the_server_keeps_serving(
    peer: StdioPeer, digits: int, where: str
) -> None:
    TRIED["mcp long integer"] = TRIED.get("mcp long integer", 0) + 1
    number = "7" * digits
    request_id = number if where == "id" else 4242
    arguments = f'{{"id": {number}}}' if where == "arguments" else '{"id": "x"}'
    params = f'{{"name": "get_experience", "arguments": {arguments}}}' if where != "params" else f'{{"n": {number}}}'
    line = f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'
    peer.send_text(line)
    answer = peer.reply()
    # The request's own id when it can be read (a 5,000-digit id cannot: null, as JSON-RPC says).
    assert answer["id"] == (None if where == "id" else 4242), answer
    assert answer["error"]["message"] == (f"invalid request: invalid JSON at column {line.index(number) + 1}: "
                                          f"an integer of {digits:,} digits (at most 4,300 are read)"), answer
    still_serving(peer)


def test_an_unknown_prompt_is_a_bad_parameter_not_a_crash(peer: StdioPeer) -> None:
    answer = peer.request("prompts/get", {"name": "no-such-prompt"})
    assert answer["error"] == {"code": -32602, "message": "Unknown prompt: 'no-such-prompt' (kbgraph offers no prompts)"}
    still_serving(peer)
