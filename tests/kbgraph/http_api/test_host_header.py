"""Which Host headers a server without an API key answers (DNS rebinding): this machine's names,
with or without a port, and nothing else, whatever a page sends."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbgraph.http_api._limits import loopback_host_header

PORTS = st.one_of(st.just(""), st.integers(0, 65535).map(lambda p: f":{p}"))
LOOPBACK = st.one_of(st.sampled_from(["localhost", "LocalHost", "[::1]"]),
                     st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255)).map(
                         lambda t: f"127.{t[0]}.{t[1]}.{t[2]}"))
LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
NAMES = st.lists(LABEL, min_size=1, max_size=4).map(".".join)


@settings(max_examples=200, derandomize=True, database=None)
@given(host=LOOPBACK, port=PORTS)
def test_this_machine_is_answered_with_or_without_a_port(host: str, port: str) -> None:
    assert loopback_host_header(host + port)


def _is_loopback_name(name: str) -> bool:
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@settings(max_examples=300, derandomize=True, database=None)
@given(name=st.one_of(NAMES, NAMES.map(lambda n: f"127.0.0.1.{n}"), NAMES.map(lambda n: f"localhost.{n}"),
                      st.sampled_from(["0.0.0.0", "[::]", "10.0.0.1", "[::ffff:7f00:1]", "", " ", "127.0.0.1@evil"]),
                      st.text(max_size=30)),
       port=PORTS)
def test_any_other_name_is_refused(name: str, port: str) -> None:
    if _is_loopback_name(name.strip()):
        return
    assert not loopback_host_header(name + port)


@pytest.mark.parametrize("header", ["evil.example", "evil.example:8000", "127.0.0.1.nip.io", "localhost.evil", ""])
def test_a_rebound_name_is_refused(header: str) -> None:
    assert not loopback_host_header(header)
