"""A client that sends its request slowly cannot hold the server: each request must arrive, head
and body, within the read deadline (kbgraph.http_api._deadline), or it is answered 408 and its
connection closed (issue 35 item 11: eight trickling clients held connections 40 s). The deadline
is 1 s here; the socket waits up to 120 s for the close, so the machine's speed decides nothing."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from kbgraph.core.errors import Neo4jUnavailableError
from kbgraph.http_api import create_app
from kbgraph.kb import KnowledgeBase
from tests.kbgraph.http_api.test_http_api import serving

pytestmark = [pytest.mark.timeout(300)]

GENEROUS_S = 120.0


def no_neo4j() -> KnowledgeBase:
    raise Neo4jUnavailableError("no Neo4j in this test: the requests here never reach an endpoint that needs it")


@pytest.fixture(scope="module")
def address() -> Iterator[tuple[str, int]]:
    with serving(create_app(no_neo4j, None), read_timeout_s=1.0) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        yield host, int(port)


def sent_then_answer(address: tuple[str, int], data: bytes) -> bytes:
    """Everything the server sends after ``data`` until it closes the connection."""
    with socket.create_connection(address, timeout=GENEROUS_S) as client:
        client.sendall(data)
        received = b""
        while chunk := client.recv(65536):  # b"": the server closed it
            received += chunk
        return received


@pytest.mark.parametrize("partial", [
    b"",  # connected, nothing sent
    b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\n",  # the head, not finished
    b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    b'{"task": "ca',  # the head, and 12 of the body's 100 bytes
], ids=["nothing", "part of the head", "part of the body"])
def test_a_request_that_does_not_arrive_in_time_is_answered_408_and_its_connection_closed(
    address: tuple[str, int], partial: bytes
) -> None:
    answer = sent_then_answer(address, partial)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b'"detail": "the request did not arrive within 1 s' in answer


def test_a_request_sent_whole_is_answered_and_the_connection_kept_until_idle(address: tuple[str, int]) -> None:
    answer = sent_then_answer(address, b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    # Answered (503: no Neo4j here); the connection then closes when idle, without a 408 for it.
    assert answer.startswith(b"HTTP/1.1 503 ") and b"408" not in answer, answer[:300]


def test_a_head_trickled_a_byte_at_a_time_is_cut_off_though_bytes_keep_coming(address: tuple[str, int]) -> None:
    """Slowloris: every byte comes well within the deadline, the whole head never does."""
    with socket.create_connection(address, timeout=0.2) as client:
        client.sendall(b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answer = b""
        given_up = time.monotonic() + GENEROUS_S
        while time.monotonic() < given_up:
            try:
                client.sendall(b"a")
                chunk = client.recv(65536)
            except TimeoutError:
                continue  # nothing from the server yet: another byte
            except OSError:  # reset: the server closed while a byte was on its way
                break
            if not chunk:
                break
            answer += chunk
        else:
            pytest.fail(f"the server kept a trickling request open for {GENEROUS_S:g} s")
    assert not answer or answer.startswith(b"HTTP/1.1 408 "), answer[:200]
