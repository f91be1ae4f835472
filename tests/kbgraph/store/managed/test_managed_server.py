"""The managed Neo4j: fetched through Maven, bound to 127.0.0.1, password-protected, clean stop."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.core.errors import ManagedServerError
from kbgraph.store.managed.lines import DEFAULT_LINE, LINES
from kbgraph.store.managed.runtime import NEO4J_VERSION
from kbgraph.store.managed.server import (
    VECTOR_API_OPTION,
    ManagedNeo4j,
    free_port,
    generated_password,
    java_feature_version,
    probe_java_version,
    vector_api_options,
)
from kbgraph.core.settings import Settings
from tests.class_data import ClassDataArchive
from tests.reliability.throwaway import SHORT_LIVED_JIT


def short_lived(line_name: str | None = None) -> tuple[str, ...]:
    """The JVM options of a server that lives for one test, as tests/reliability's throw-away ones:
    the class-data archive the session's servers wrote (when there is one) and C1 alone. They are
    the JVM's and change nothing of what is tested (the start, the password, the stop, the lock);
    without them each start cost the JIT of a server that runs for seconds."""
    line = LINES[line_name or Settings().neo4j_version]
    return (*ClassDataArchive(Settings().cache_dir, line).jvm_options(), *SHORT_LIVED_JIT)


def test_the_pinned_server_is_neo4j_5_26() -> None:
    assert NEO4J_VERSION.startswith("5.26.")


def test_a_generated_password_is_never_read_as_an_option_by_neo4j_admin() -> None:
    # token_urlsafe starts with '-' one time in 64: neo4j-admin then printed its usage instead of
    # setting the password, and a fresh machine's first `kbgraph server start` failed.
    passwords = [generated_password() for _ in range(2000)]
    assert all(not p.startswith("-") and len(p) >= 20 for p in passwords)
    assert all(set(p) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") for p in passwords)
    assert len(set(passwords)) == len(passwords)


def test_the_config_binds_loopback_with_auth_and_sized_memory(tmp_path: Path) -> None:
    server = ManagedNeo4j(home=tmp_path, cache_dir=tmp_path, bolt_port=17687, http_port=17474, heap="4g",
                          pagecache="2g")
    config = dict(line.split("=", 1) for line in server.config_text().splitlines() if "=" in line and
                  not line.startswith("#"))
    assert config["server.default_listen_address"] == "127.0.0.1"
    assert config["server.bolt.listen_address"] == "127.0.0.1:17687"
    assert config["server.http.listen_address"] == "127.0.0.1:17474"
    assert config["server.http.enabled"] == "true" and config["server.https.enabled"] == "false"
    assert config["dbms.security.auth_enabled"] == "true"
    assert config["server.memory.heap.max_size"] == "4g" and config["server.memory.pagecache.size"] == "2g"
    assert config["dbms.usage_report.enabled"] == "false"
    # Vector indexes merge their segments early (Neo4j's default lets 49 of a size pile up, and a
    # query searches each): the start test below shows Neo4j accepts the setting.
    assert int(config["internal.dbms.index.vector.standard_merge_factor"]) <= 8


def test_each_line_closes_bolt_without_waiting_for_a_quiet_period(tmp_path: Path) -> None:
    # Neo4j's Bolt event loops waited 5 s each for a quiet period after both databases had stopped:
    # a stop took 10 s instead of one. The setting's name differs between the lines; the start test
    # shows that its line's Neo4j accepts it (unknown settings fail a start).
    for line in LINES.values():
        config = ManagedNeo4j(home=tmp_path, cache_dir=tmp_path, line=line).config_text().splitlines()
        quiet = [setting for setting in config if "netty_server_shutdown_quiet_period" in setting]
        assert len(quiet) == 1 and quiet[0].split("=", 1)[1] in ("0", "0s"), quiet
    assert "internal.dbms.bolt.netty_server_shutdown_quiet_period=0" in LINES["5.26"].own_settings
    assert "internal.dbms.bolt.netty_server_shutdown_quiet_period_duration=0s" in LINES["2026.09"].own_settings


def test_the_java_version_is_read_from_what_java_version_prints() -> None:
    assert java_feature_version('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment') == 17
    assert java_feature_version('openjdk version "21" 2023-09-19') == 21
    assert java_feature_version('java version "1.8.0_392"') == 8
    assert java_feature_version("something else entirely") is None


def test_lucene_gets_the_vector_api_only_on_the_java_versions_it_can_use_it_on() -> None:
    # Neo4j 5.26's Lucene 9.11 vectorizes on Java 20-22 with the incubator module; on 17 the
    # module exists but Lucene does not use it, and on 23+ it asks for a newer Lucene.
    assert vector_api_options(21) == [VECTOR_API_OPTION]
    assert vector_api_options(20) == vector_api_options(22) == [VECTOR_API_OPTION]
    assert vector_api_options(17) == vector_api_options(25) == vector_api_options(None) == []


def test_the_java_on_path_is_probed_and_a_missing_one_reads_as_unknown(tmp_path: Path) -> None:
    assert (probe_java_version("java") or 0) >= 17
    assert probe_java_version(str(tmp_path / "no-such-java")) is None


def test_settings_size_the_server_for_this_machine() -> None:
    settings = Settings()
    assert (settings.managed_heap, settings.managed_pagecache) == ("4g", "2g")


@pytest.mark.neo4j  # starts a managed server of its own
def test_start_status_browser_stop_and_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every command the first start runs is recorded (and run for real): the generated password
    # must never be on a command line, where `ps` shows it to every user.
    commands: list[list[str]] = []
    real_run = subprocess.run

    def recording_run(args: list[str], **kwargs: Any) -> Any:
        commands.append([str(a) for a in args])
        return real_run(args, **kwargs)

    monkeypatch.setattr("kbgraph.store.managed.server.subprocess.run", recording_run)
    # The line the suite runs on (KBGRAPH_NEO4J_VERSION): each line is started, served and restarted.
    line = LINES[Settings().neo4j_version]
    server = ManagedNeo4j(home=tmp_path / "instance", cache_dir=Settings().cache_dir, bolt_port=free_port(),
                          http_port=free_port(), heap="1g", pagecache="256m", quiet=True, line=line,
                          jvm_options=short_lived(), dies_with_starter=True)
    assert not server.status().running
    try:
        status = server.start()
        assert status.running and status.pid
        mode = stat.S_IMODE(server.password_file.stat().st_mode)
        assert mode == 0o600, oct(mode)
        password = server.password()
        assert len(password) >= 20 and password != "neo4j"
        assert any("set-initial-password" in c for c in commands)
        assert not any(password in argument for c in commands for argument in c)
        assert not list((server.home / "run").glob("*.args"))  # the argument file is gone

        with neo4j.GraphDatabase.driver(server.bolt_uri, auth=("neo4j", password)) as driver:
            records, _, _ = driver.execute_query("CALL dbms.components() YIELD name, versions, edition "
                                                 "RETURN versions[0] AS version, edition")
        assert records[0]["version"] == line.version and records[0]["edition"] == "community"
        assert status.version == line.version and status.line == line.name

        with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/", timeout=10) as response:
            discovery = json.load(response)
        assert discovery["neo4j_edition"] == "community"
        assert discovery["bolt_direct"] == f"bolt://127.0.0.1:{server.bolt_port}"
        with urllib.request.urlopen(server.browser_url, timeout=10) as response:
            page = response.read().decode()
        assert response.status == 200 and "Neo4j Browser" in page

        assert server.start().pid == status.pid  # already running: nothing new is started
    finally:
        assert server.stop()
    assert not server.status().running
    assert not server.stop()  # stopping twice is harmless

    again = server.start()  # the data and the password survive a restart
    try:
        assert again.running and server.password() == password
    finally:
        server.stop()


def test_two_processes_starting_it_at_once_share_one_server(tmp_path: Path) -> None:
    # Two commands started side by side (an ingest and a test run, say) both found no server;
    # both launched one and the loser overwrote the winner's pid, leaving a server nobody knew of.
    bolt, http = free_port(), free_port()
    script = (
        "import sys; from pathlib import Path; from kbgraph.core.settings import Settings; "
        "from kbgraph.store.managed.server import ManagedNeo4j; "
        f"s = ManagedNeo4j(home=Path({str(tmp_path / 'instance')!r}), cache_dir=Settings().cache_dir, "
        f"bolt_port={bolt}, http_port={http}, heap='1g', pagecache='256m', quiet=True, assets_port=0, "
        f"jvm_options={short_lived(DEFAULT_LINE.name)!r}); "
        "print(s.start().pid)"
    )
    starters = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for _ in range(2)]
    server = ManagedNeo4j(home=tmp_path / "instance", cache_dir=Settings().cache_dir, bolt_port=bolt, http_port=http,
                          quiet=True, assets_port=0)
    try:
        answers = [starter.communicate(timeout=300) for starter in starters]
        assert all(starter.returncode == 0 for starter in starters), [err for _, err in answers]
        pids = {int(out.strip()) for out, _ in answers}
        assert len(pids) == 1, f"two servers were started: {pids}"
        assert server.status().pid == pids.pop()
    finally:
        server.stop()


def test_a_busy_port_is_explained(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        server = ManagedNeo4j(home=tmp_path, cache_dir=Settings().cache_dir, bolt_port=port,
                              http_port=free_port(), quiet=True)
        with pytest.raises(ManagedServerError, match=f"port {port} on 127.0.0.1 is already in use"):
            server.start()


def test_reading_the_password_before_any_start_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ManagedServerError, match="kbgraph server start"):
        ManagedNeo4j(home=tmp_path, cache_dir=tmp_path).password()


@pytest.mark.extended  # slowest of its kind (see pyproject's addopts); ./kb test -m extended
@pytest.mark.neo4j  # starts a managed server of its own
def test_a_lost_password_file_is_recovered_by_reset_password_and_the_data_is_kept(tmp_path: Path) -> None:
    # On the line the suite runs (KBGRAPH_NEO4J_VERSION): the system database is recreated by each release.
    server = ManagedNeo4j(home=tmp_path / "instance", cache_dir=Settings().cache_dir, bolt_port=free_port(),
                          http_port=free_port(), heap="1g", pagecache="256m", quiet=True, assets_port=0,
                          line=LINES[Settings().neo4j_version], dies_with_starter=True)
    try:
        server.start()
        with neo4j.GraphDatabase.driver(server.bolt_uri, auth=server.auth()) as driver:
            driver.execute_query("CREATE (:KeepMe {n: 1})")
        old = server.password()
        server.password_file.unlink()
        with pytest.raises(ManagedServerError, match="reset-password"):
            server.password()

        # Authentication is never off: the server is reset while it is stopped (it ran without it,
        # on ports of its own, for ~16 s before), so nothing answers without a password meanwhile.
        answered_without_auth: list[bool] = []
        configured_without_auth: list[bool] = []
        done = threading.Event()

        def watch_conf() -> None:  # apart: a connection attempt below may retry for seconds
            conf = server.home / "conf" / "neo4j.conf"
            while not done.wait(0.05):
                if "auth_enabled=false" in (conf.read_text() if conf.exists() else ""):
                    configured_without_auth.append(True)  # on whatever port it then listened

        def watch() -> None:
            while not done.is_set():
                try:
                    with neo4j.GraphDatabase.driver(server.bolt_uri, auth=None, connection_timeout=1) as driver:
                        driver.execute_query("RETURN 1")
                    answered_without_auth.append(True)
                except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError):
                    done.wait(0.1)

        watchers = [threading.Thread(target=watch, daemon=True), threading.Thread(target=watch_conf, daemon=True)]
        for watcher in watchers:
            watcher.start()
        try:
            server.reset_password()
        finally:
            done.set()
            for watcher in watchers:
                watcher.join(30)
        assert not answered_without_auth and not configured_without_auth
        new = server.password()
        assert new != old and stat.S_IMODE(server.password_file.stat().st_mode) == 0o600
        assert "auth_enabled=true" in (server.home / "conf" / "neo4j.conf").read_text()
        with neo4j.GraphDatabase.driver(server.bolt_uri, auth=("neo4j", new)) as driver:
            records, _, _ = driver.execute_query("MATCH (k:KeepMe) RETURN k.n AS n")
        assert [r["n"] for r in records] == [1]
        with neo4j.GraphDatabase.driver(server.bolt_uri, auth=("neo4j", old)) as driver, \
                pytest.raises(neo4j.exceptions.AuthError):
            driver.execute_query("RETURN 1")
        assert not list((server.home / "run").glob("before-reset-password.*"))  # nothing set aside is left

        # A reset whose start fails (its port taken meanwhile) puts everything back as it was.
        server.stop()
        with socket.socket() as taken:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the stopped server's port is in TIME_WAIT
            taken.bind(("127.0.0.1", server.bolt_port))
            taken.listen()
            with pytest.raises(ManagedServerError, match=f"port {server.bolt_port}"):
                server.reset_password()
        assert server.password() == new and not list((server.home / "run").glob("before-reset-password.*"))
        server.start()
        with neo4j.GraphDatabase.driver(server.bolt_uri, auth=server.auth()) as driver:
            records, _, _ = driver.execute_query("MATCH (k:KeepMe) RETURN k.n AS n")
        assert [r["n"] for r in records] == [1]
        with neo4j.GraphDatabase.driver(server.bolt_uri, auth=None) as driver, pytest.raises(neo4j.exceptions.AuthError):
            driver.execute_query("RETURN 1")
    finally:
        server.stop()


def test_a_refused_password_is_one_sentence_per_reason(tmp_path: Path) -> None:
    from kbgraph.store.managed.server import refused_password

    # Neo4j's reason ends with a full stop; the message must not read "failure.. If".
    message = refused_password("bolt://127.0.0.1:7687", tmp_path / "password",
                               "The client is unauthorized due to authentication failure.")
    assert ".." not in message
    assert message.endswith("due to authentication failure. If you changed it, write the new one into that file.")
    assert "authentication failure. If" in refused_password("bolt://x", tmp_path / "p", None)
