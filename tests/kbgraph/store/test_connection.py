"""An unreachable or wrongly authenticated Neo4j gives one clear line, not a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import neo4j
import pytest

from kbgraph.store import connection
from kbgraph.store.connection import open_driver, timed_out
from kbgraph.core.errors import Neo4jUnavailableError
from kbgraph.store.managed.server import free_port
from tests.conftest import Neo4jTarget


def test_an_unreachable_server_names_what_was_tried() -> None:
    uri = f"bolt://127.0.0.1:{free_port()}"
    with pytest.raises(Neo4jUnavailableError) as caught:
        open_driver(uri, ("neo4j", "x"), "neo4j", timeout_s=2)
    message = str(caught.value)
    assert uri in message and "NEO4J_URI" in message and "\n" not in message


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A Bolt URI whose port accepts connections and never answers, as a frozen (SIGSTOP) Neo4j:
    the kernel completes the TCP handshake for a listening socket nobody reads."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"bolt://127.0.0.1:{listener.getsockname()[1]}"


def driver_error(uri: str) -> BaseException:
    """What the driver itself raises connecting to ``uri`` within 0.5 s, at its first attempt (its
    managed retries would try again for 30 s, and raise the same error)."""
    with neo4j.GraphDatabase.driver(uri, auth=("neo4j", "x"), connection_timeout=0.5,
                                    connection_acquisition_timeout=0.5, max_transaction_retry_time=0) as driver:
        try:
            driver.execute_query("RETURN 1")
        except Exception as exc:  # noqa: BLE001 — the error is what is looked at
            return exc
    raise AssertionError(f"{uri} answered")


def test_a_connection_refused_and_one_never_answered_are_told_apart_by_what_happened(silent_server: str) -> None:
    assert timed_out(driver_error(silent_server))
    assert not timed_out(driver_error(f"bolt://127.0.0.1:{free_port()}"))


def test_a_server_that_accepts_and_never_answers_did_not_answer_whichever_timer_fires_first(
    silent_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our bound and the driver's run out at the same time; on a busy machine either comes first.
    Here ours is made to come last, so that the driver's error is the one classified (it read as
    'cannot reach Neo4j … start that server')."""
    real_within = connection.within

    def late(seconds: float, what: str, call: Callable[[], Any]) -> Any:
        return real_within(seconds * 4, what, call)

    for bound in (real_within, late):
        monkeypatch.setattr(connection, "within", bound)
        with pytest.raises(Neo4jUnavailableError) as caught:
            open_driver(silent_server, ("neo4j", "x"), "neo4j", timeout_s=1)
        message = str(caught.value)
        assert "accepted the connection but did not answer within 1 s" in message and "start that server" not in message


def test_a_wrong_password_says_which_setting_to_fix(neo4j_target: Neo4jTarget) -> None:
    with pytest.raises(Neo4jUnavailableError, match="refused user 'neo4j': check NEO4J_USERNAME and NEO4J_PASSWORD"):
        open_driver(neo4j_target.uri, ("neo4j", "wrong-password"), neo4j_target.database)


def test_a_malformed_uri_is_explained() -> None:
    with pytest.raises(Neo4jUnavailableError, match="not a Neo4j Bolt URI: use one of bolt://"):
        open_driver("http://localhost:7474", ("neo4j", "x"), "neo4j")


@pytest.mark.parametrize("password_ok", [False, True])
def test_the_cli_prints_one_line_and_no_traceback(neo4j_target: Neo4jTarget, password_ok: bool) -> None:
    env = neo4j_target.env("cli-errors")
    if password_ok:
        env["NEO4J_URI"] = f"bolt://127.0.0.1:{free_port()}"
    else:
        env["NEO4J_PASSWORD"] = "wrong-password"
    proc = subprocess.run([sys.executable, "-m", "kbgraph.cli", "stats"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kbgraph: error: "), proc.stderr


def test_the_drivers_log_goes_to_kbgraphs_logger_at_debug_not_beside_the_error(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The driver logs a lost connection as an ERROR ("Failed to read from defunct connection"),
    which Python prints on stderr beside the CLI's one-line error; it is kbgraph's DEBUG now."""
    import logging

    from kbgraph.store.connection import quiet_driver_log

    monkeypatch.delenv("KBGRAPH_DEBUG", raising=False)
    driver_log = logging.getLogger("neo4j")
    monkeypatch.setattr(driver_log, "handlers", list(driver_log.handlers))  # restored after the test
    monkeypatch.setattr(driver_log, "propagate", driver_log.propagate)
    quiet_driver_log()
    quiet_driver_log()  # twice: one handler
    with caplog.at_level(logging.DEBUG, logger="kbgraph.neo4j"):
        logging.getLogger("neo4j.io").error("[#E828]  _: <CONNECTION> error: Failed to read from defunct connection")
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("kbgraph.neo4j", logging.DEBUG, "neo4j.io: [#E828]  _: <CONNECTION> error: Failed to read from defunct connection")]
