"""Serving the HTTP API: where it may listen (loopback, or beyond with a key) and the uvicorn loop."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kbgraph.core.errors import InvalidInputError, KbgraphError, Neo4jUnavailableError
from kbgraph.core.settings import Settings
from kbgraph.http_api._app import create_app
from kbgraph.http_api._bodies import NAMESPACE_HEADER
from kbgraph.http_api._limits import is_loopback
from kbgraph.kb import KnowledgeBase
from kbgraph.tools import one_line

DEFAULT_PORT = 8000


def check_bind(host: str, api_key: str | None) -> None:
    """Refuses (InvalidInputError) an empty key, and listening beyond loopback without a key."""
    if api_key is not None and not api_key.strip():
        raise InvalidInputError(["api key: empty: give a key (KBGRAPH_API_KEY or --api-key-file), or none on loopback"],
                                "cannot serve")
    if api_key is None and not is_loopback(host):
        raise InvalidInputError([
            f"host: {host!r} is reachable beyond this machine, so an API key is required: set KBGRAPH_API_KEY or "
            "pass --api-key-file (clients send 'Authorization: Bearer <key>'), or listen on 127.0.0.1"], "cannot serve")


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port), or KbgraphError saying why not."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM,
                                                      flags=socket.AI_PASSIVE)[0]
        return socket.create_server(address[:2], family=family)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise KbgraphError(f"cannot listen on {host}:{port}: {reason} (choose another --host or --port)") from None


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextmanager
def _stopping_is_success() -> Iterator[None]:
    """After a graceful shutdown on SIGINT or SIGTERM, uvicorn raises the signal again for the
    handler that was in place before it (by default: KeyboardInterrupt, or death by SIGTERM). A
    stop that was asked for and done is a success here: that handler only notes the signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, lambda number, frame: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _warm(kb: KnowledgeBase, announce: Callable[[str], None]) -> None:
    """Reads what the searches of the served namespace keep in the process while the server starts
    (kbgraph.search.student.warm), so that the first requests do not pay for it. A failure is
    reported and left to the searches, which read it themselves as they come."""
    try:
        seconds = kb.student.warm()["total"]
    except Exception as exc:  # pylint: disable=broad-except  # Neo4j went away, or the server stopped first
        announce(f"kbgraph serve: namespace {kb.namespace!r} not warmed ({one_line(str(exc))}); its searches read "
                 "what they keep as they come")
        return
    announce(f"kbgraph serve: namespace {kb.namespace!r} warmed in {seconds:.1f} s (what its searches keep in the process)")


#: How long a stopping server waits for its warm thread before closing the knowledge base.
WARM_WAIT_S = 30.0


def close_after_warm(kb: KnowledgeBase, warming: threading.Thread | None, announce: Callable[[str], None],
                     wait_s: float = WARM_WAIT_S) -> bool:
    """Closes ``kb`` once its warm thread (:func:`_warm`) is over, and says whether it did: closing
    the driver while a read still uses one of its connections breaks that connection mid-message. A
    warm still under way after ``wait_s`` is left to the process's exit (its thread is a daemon), and
    ``kb`` with it."""
    if warming is not None and warming.is_alive():
        announce(f"kbgraph serve: waiting for the warm under way to end (at most {wait_s:.0f} s)")
        warming.join(wait_s)
        if warming.is_alive():
            announce("kbgraph serve: the warm is still reading; left to the process's exit")
            return False
    kb.close()
    return True


def serve(settings: Settings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT, api_key: str | None = None,
          log_level: str = "info", announce: Callable[[str], None] = print) -> None:
    """Serves the HTTP API until SIGINT/SIGTERM. Checks the binding first (:func:`check_bind`),
    then opens the knowledge base so the first request does not wait for the model, and warms it in a
    thread of its own (:func:`_warm`); a Neo4j that
    is not up yet is reported and tried again on each call (``/v1/health`` says 503 meanwhile).
    Each request must arrive within READ_TIMEOUT_S (kbgraph.http_api._deadline)."""
    import uvicorn

    from kbgraph.http_api._deadline import server_config

    check_bind(host, api_key)
    sock = listen(host, port)
    try:
        source: KnowledgeBase | Callable[[], KnowledgeBase]
        owned: KnowledgeBase | None = None
        warming: threading.Thread | None = None
        try:
            owned = source = KnowledgeBase.from_settings(settings)
            warming = threading.Thread(target=_warm, args=(owned, announce), name="kbgraph-warm", daemon=True)
            warming.start()
        except Neo4jUnavailableError as exc:
            announce(f"kbgraph serve: Neo4j is not available yet ({one_line(str(exc))}); serving anyway: "
                     "/v1/health answers 503 and each call tries again")
            source = lambda: KnowledgeBase.from_settings(settings)  # noqa: E731
        bound_port = sock.getsockname()[1]
        announce(f"kbgraph serve: {_url(host, bound_port)} (OpenAPI at /docs), namespace {settings.namespace!r} "
                 f"unless a request's {NAMESPACE_HEADER} header names another; API key "
                 + ("required" if api_key is not None else "not required (loopback only)"))
        server = uvicorn.Server(server_config(create_app(source, api_key), host=host, port=bound_port,
                                              log_level=log_level))
        try:
            with _stopping_is_success():
                server.run(sockets=[sock])
        finally:
            if owned is not None:
                close_after_warm(owned, warming, announce)
        if not server.started:
            raise KbgraphError("the HTTP server did not start (see the messages above)")
    finally:
        sock.close()
