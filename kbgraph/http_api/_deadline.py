"""A deadline for reading each request, so a slow client cannot hold a connection.

uvicorn's HTTP/1.1 protocol (h11) closes a connection left idle after a response
(``timeout_keep_alive``), but not one whose request arrives a few bytes at a time: a client that
trickles its head or its body holds the connection, and the endpoint waiting for the body, for as
long as it likes (eight such clients held a server 40 s, and would have held it for good). Here
each request must have arrived, head and body, within ``read_timeout_s`` of its first byte (of the
connection opening, for the first request: a connection that sends nothing is closed too); one
that has not is answered ``408 Request Timeout`` (when no response was started) and the
connection is closed. Time the endpoint spends after the request arrived (an ingest may take
minutes) is not counted, nor the idle time between requests (``timeout_keep_alive``'s).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds a client has to send a whole request: 32 MiB (the body limit) at ~1 MB/s.
READ_TIMEOUT_S = 30.0


def _timeout_response(seconds: float) -> bytes:
    body = json.dumps({"detail": f"the request did not arrive within {seconds:g} s: the connection is closed"})
    return (f"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n{body}").encode()


class ReadDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request to arrive (the module says why)."""

    read_timeout_s = READ_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None:  # the first bytes of the next request on this connection
            self._arm()
        super().data_received(data)

    def on_response_complete(self) -> None:
        # Idle until the next request: uvicorn's keep-alive timeout closes the connection then.
        self._disarm()
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.read_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        # IDLE: the head has not arrived (or nothing has); SEND_BODY: the body is still coming.
        # Anything else (the whole request is in, the endpoint runs) is not the client's delay.
        if self.transport.is_closing() or self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            return
        if self.conn.their_state is h11.IDLE or (self.cycle is not None and not self.cycle.response_started):
            self.transport.write(_timeout_response(self.read_timeout_s))
        self.transport.close()  # an endpoint still waiting for the body gets http.disconnect


def read_deadline_protocol(read_timeout_s: float) -> type[ReadDeadlineProtocol]:
    """The protocol class for uvicorn's ``http`` setting, with this deadline."""
    return type("ReadDeadlineProtocol", (ReadDeadlineProtocol,), {"read_timeout_s": read_timeout_s})


def server_config(app: Any, *, host: str = "127.0.0.1", port: int = 0, log_level: str = "info",
                  read_timeout_s: float = READ_TIMEOUT_S) -> uvicorn.Config:
    """How kbgraph serves ``app`` with uvicorn: h11 with the read deadline (and uvicorn's own
    ``timeout_keep_alive``, 5 s, for idle connections between requests)."""
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, http=read_deadline_protocol(read_timeout_s))
