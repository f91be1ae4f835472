"""Opens a Neo4j driver from settings: the server at NEO4J_URI, or else the managed local one.

Both paths return the same driver; everything above this module is unaware of which it got.
Failures become one :class:`~kbgraph.core.errors.Neo4jUnavailableError` line that says what was tried
and how to fix it.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

import neo4j

from kbgraph.store.queries import query
from kbgraph.store.deadline import Neo4jTimeoutError, within
from kbgraph.core.errors import Neo4jUnavailableError
from kbgraph.core.redact import redact_uri
from kbgraph.store.managed import ManagedNeo4j
from kbgraph.core.settings import Settings


BOLT_SCHEMES = {"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"}


@dataclass(frozen=True)
class Connection:
    driver: neo4j.Driver
    database: str
    uri: str
    browser_url: str | None  # known for the managed server only
    auth: tuple[str, str] = ("neo4j", "")  # what the driver was verified with (AsyncKnowledgeBase reuses it)


def connect(settings: Settings, quiet: bool = False) -> Connection:
    """A verified driver. Starts the managed server first when no NEO4J_URI is set."""
    if settings.uses_managed_server:
        server = ManagedNeo4j.from_settings(settings, quiet=quiet)
        server.start()
        uri, auth = server.bolt_uri, server.auth()
        browser: str | None = server.browser_url
    else:
        uri, auth = users_server(settings)
        browser = None
    driver = open_driver(uri, auth, settings.neo4j_database, settings.connect_timeout_s, settings.retry_time_s)
    return Connection(driver, settings.neo4j_database, uri, browser, auth)


def users_server(settings: Settings) -> tuple[str, tuple[str, str]]:
    """The URI and credentials of the server at NEO4J_URI (set)."""
    assert settings.neo4j_uri is not None
    password = settings.neo4j_password.get_secret_value() if settings.neo4j_password else ""
    return settings.neo4j_uri, (settings.neo4j_username, password)


def open_driver(
    uri: str, auth: tuple[str, str], database: str, timeout_s: float = 15.0, retry_time_s: float = 10.0
) -> neo4j.Driver:
    """A driver whose connectivity and credentials have been checked against ``database``, within
    ``timeout_s`` (connecting, the handshake and a first query). Transactions are retried on
    transient errors for ``retry_time_s`` at most (the driver's default is 30 s)."""
    scheme = uri.split("://", 1)[0] if "://" in uri else ""
    if scheme not in BOLT_SCHEMES:
        raise Neo4jUnavailableError(
            f"NEO4J_URI {redact_uri(uri)!r} is not a Neo4j Bolt URI: use one of "
            + ", ".join(f"{s}://" for s in sorted(BOLT_SCHEMES))
        )
    try:
        driver = neo4j.GraphDatabase.driver(
            uri, auth=auth, connection_timeout=timeout_s, connection_acquisition_timeout=timeout_s,
            max_transaction_retry_time=retry_time_s,
            # "relationship type does not exist" on a fresh database is expected, not a problem.
            notifications_disabled_classifications=["UNRECOGNIZED"],
        )
    except (ValueError, neo4j.exceptions.ConfigurationError) as exc:
        reason = str(exc).replace(uri, redact_uri(uri))
        raise Neo4jUnavailableError(f"NEO4J_URI {redact_uri(uri)!r} is not a Neo4j URI ({reason}); use bolt:// or neo4j://") from None
    try:
        # An auto-commit query fails at once; execute_query would retry (and log) for 30 s.
        def ping() -> None:
            with driver.session(database=database) as session:
                session.run(query("ping")).consume()

        within(timeout_s, "connecting", ping)
    except Neo4jTimeoutError:
        driver.close()
        raise not_answering(uri, timeout_s) from None
    except neo4j.exceptions.AuthError:
        driver.close()
        raise Neo4jUnavailableError(
            f"Neo4j at {redact_uri(uri)} refused user {auth[0]!r}: check NEO4J_USERNAME and NEO4J_PASSWORD."
        ) from None
    except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired, OSError) as exc:
        driver.close()
        # Two timers run out at the same bound: ours (above) and the driver's on connecting, the
        # handshake and the login. Which one fires first is the machine's timing; what happened
        # is told by the error: a wait that timed out is a server that did not answer, a refusal
        # one that is not there.
        if timed_out(exc):
            raise not_answering(uri, timeout_s, accepted="Timed out trying to establish connection" not in str(exc)) from None
        raise Neo4jUnavailableError(
            f"cannot reach Neo4j at {redact_uri(uri)} ({_first_line(exc).replace(uri, redact_uri(uri))}): "
            "start that server, fix NEO4J_URI, "
            "or unset NEO4J_URI to use kbgraph's managed server."
        ) from None
    except neo4j.exceptions.Neo4jError as exc:
        driver.close()
        if (exc.code or "").endswith("Security.AuthenticationRateLimit"):
            raise Neo4jUnavailableError(
                f"Neo4j at {redact_uri(uri)} is refusing logins for user {auth[0]!r} for a while after too many "
                "failed attempts: check NEO4J_PASSWORD, wait (about 5 s by default, the server's "
                "dbms.security.auth_lock_time) and try again."
            ) from None
        raise Neo4jUnavailableError(
            f"Neo4j at {redact_uri(uri)} answered but database {database!r} is not usable ({exc.message}): "
            "check NEO4J_DATABASE."
        ) from None
    return driver


def not_answering(uri: str, timeout_s: float, accepted: bool = True) -> Neo4jUnavailableError:
    """The error of a server that did not answer within ``timeout_s``: frozen or overloaded when
    it accepted the connection, else not there at all or unreachable (a host that drops packets)."""
    if not accepted:
        return Neo4jUnavailableError(
            f"Neo4j at {redact_uri(uri)} did not answer within {timeout_s:g} s: nothing accepted the connection "
            "(a wrong host, a firewall, or a machine that is down or overloaded; KBGRAPH_CONNECT_TIMEOUT_S).")
    return Neo4jUnavailableError(
        f"Neo4j at {redact_uri(uri)} accepted the connection but did not answer within {timeout_s:g} s: it may be "
        "frozen or overloaded (KBGRAPH_CONNECT_TIMEOUT_S).")


def timed_out(error: BaseException) -> bool:
    """Whether connecting failed because a wait ran out (connecting, the Bolt handshake, the
    login), not because the server refused or dropped the connection. The driver says so in its
    chain of causes (a TimeoutError, or its own deadline error, recognised by its name: the
    class is private) or, for each address it tried, in its message."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, TimeoutError) or type(current).__name__ == "SocketDeadlineExceededError":
            return True
        pending += [current.__cause__, current.__context__]
    return "timed out" in str(error).lower()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    errno = re.search(r"reason \[Errno \d+\] ([^)]+)", text)
    if errno:
        return errno.group(1).lower()
    return text.splitlines()[0][:200].rstrip(":")


class _AtDebug(logging.Handler):
    """Hands each record of the driver's loggers to ``kbgraph.neo4j`` at DEBUG."""

    def emit(self, record: logging.LogRecord) -> None:
        logging.getLogger("kbgraph.neo4j").debug("%s: %s", record.name, record.getMessage())


def quiet_driver_log() -> None:
    """Sends the driver's log (a WARNING per retry, an ERROR per defunct connection: "Failed to
    read from defunct connection …") to the ``kbgraph.neo4j`` logger at DEBUG instead of stderr,
    where it would print beside the one line in which the CLI and the MCP server report the
    failure. KBGRAPH_DEBUG=1 leaves the driver's log as it is. Calling it again changes nothing."""
    if os.environ.get("KBGRAPH_DEBUG"):
        return
    driver_log = logging.getLogger("neo4j")
    if not any(isinstance(handler, _AtDebug) for handler in driver_log.handlers):
        driver_log.addHandler(_AtDebug())
    driver_log.propagate = False  # not to the root logger's handlers, nor Python's last resort
