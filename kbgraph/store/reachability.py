"""Whether a Neo4j server answers at all, asked beside the driver's pool: the Bolt handshake on a
connection of its own, the one address a direct driver talks to, and the retry time it was made with."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import neo4j

__all__ = ["BOLT_HANDSHAKE", "direct_address", "driver_retry_time_s", "handshake_answers"]


#: The Bolt handshake's opening: the magic number, then four protocol versions proposed (5.0–5.8
#: and 4.4). Any four bytes back, the version agreed or none, are an answer.
BOLT_HANDSHAKE = b"\x60\x60\xb0\x17" + b"\x00\x08\x08\x05" + b"\x00\x00\x04\x04" + bytes(8)


def handshake_answers(address: tuple[str, int], timeout_s: float, clock: Callable[[], float] = time.monotonic) -> bool:
    """Whether the Bolt server at ``address`` answers the protocol handshake within ``timeout_s``,
    on a connection of its own: no pool connection, no login, no transaction. A frozen server
    (SIGSTOP) or a dead one does not answer; a busy one does, at once."""
    deadline = clock() + timeout_s
    try:
        with socket.create_connection(address, timeout=timeout_s) as connection:
            connection.settimeout(max(deadline - clock(), 0.001))
            connection.sendall(BOLT_HANDSHAKE)
            reply = b""
            while len(reply) < 4:
                connection.settimeout(max(deadline - clock(), 0.001))
                chunk = connection.recv(4 - len(reply))
                if not chunk:
                    return False
                reply += chunk
    except OSError:  # refused, reset, timed out
        return False
    return True


def direct_address(driver: neo4j.Driver) -> tuple[str, int] | None:
    """The host and port of the one server a plain ``bolt://`` driver connects to, or None (a
    routing or encrypted driver, or a driver without the attributes: then pings go through the
    pool). The driver keeps its address in a private attribute of its pool."""
    pool = getattr(driver, "_pool", None)
    address = getattr(pool, "address", None)
    if not getattr(pool, "is_direct_pool", False) or not isinstance(address, tuple) or len(address) < 2:
        return None
    try:
        if driver.encrypted:
            return None
    except AttributeError:
        return None
    host, port = address[0], address[1]
    return (host, port) if isinstance(host, str) and isinstance(port, int) else None


def driver_retry_time_s(driver: neo4j.Driver, default: float = 30.0) -> float:
    """The ``max_transaction_retry_time`` ``driver`` was made with. The driver keeps it in a
    private attribute; a driver without it (another version, a wrapper) gets the driver's
    documented default, 30 s."""
    config = getattr(driver, "_default_workspace_config", None)
    value = getattr(config, "max_transaction_retry_time", None)
    return float(value) if isinstance(value, int | float) else default
