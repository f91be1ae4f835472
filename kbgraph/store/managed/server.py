"""Start, stop and inspect a Neo4j Community server that kbgraph runs itself.

An instance is a folder (``conf/``, ``data/``, ``logs/``, ``run/``) plus a ``password`` file that
only the user can read. The first start sets that generated password with ``neo4j-admin dbms
set-initial-password`` before the database exists, so the server never runs with the default
credentials. The server listens on 127.0.0.1 only, with Bolt and HTTP (the Browser).

Next to it runs a small HTTP server with kbgraph's Browser style and guide
(:mod:`kbgraph.store.managed.browser`); the generated neo4j.conf makes the Browser load both on every connect.
It starts and stops with the server, and never keeps the server from starting.

Which java runs it and with which options is :mod:`kbgraph.store.managed.java`; the instance folder, its
neo4j.conf and password file are :mod:`kbgraph.store.managed.conf`. This module runs the lifecycle.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import neo4j

from kbgraph.store.managed.browser.asset_process import DEFAULT_PORT as DEFAULT_ASSETS_PORT
from kbgraph.store.managed.browser.asset_process import BrowserAssetServer
from kbgraph.store.managed.browser.assets import BrowserAssets
from kbgraph.store.queries import query
from kbgraph.store.deadline import Neo4jTimeoutError, within
from kbgraph.core.errors import ManagedServerError
from kbgraph.store.managed.conf import (
    VECTOR_MERGE_FACTOR,
    config_text,
    generated_password,
    prepare_directories,
    prepare_home,
)
from kbgraph.store.managed.java import (
    ADMIN_TOOL,
    ENTRY_POINT,
    JVM_OPTIONS,
    LUCENE_VECTOR_API_JAVA,
    VECTOR_API_OPTION,
    find_java,
    java_feature_version,
    probe_java_version,
    vector_api_options,
)
from kbgraph.store.managed.lines import DEFAULT_LINE, LINES, Neo4jLine
from kbgraph.store.managed.reset import RESET_ASIDE_PREFIX, finish_interrupted_resets, put_back, reset_parts
from kbgraph.store.managed.runtime import ensure_runtime
from kbgraph.store.managed.watchdog import reap, watch
from kbgraph.core.processes import free_port, is_stopped, port_in_use, terminate
from kbgraph.core.settings import Settings

# Re-exported: the Java and neo4j.conf names were defined here before java.py and conf.py, and
# tests and tools start throw-away servers on free_port.
__all__ = [
    "ADMIN_TOOL", "ENTRY_POINT", "JVM_OPTIONS", "LUCENE_VECTOR_API_JAVA", "RUNNING_ANSWER_TIMEOUT_S", "USERNAME",
    "VECTOR_API_OPTION", "VECTOR_MERGE_FACTOR", "ManagedNeo4j", "ServerStatus", "configured_assets_port", "free_port",
    "generated_password", "java_feature_version", "probe_java_version", "vector_api_options",
]

# How long a managed server that has been running for a while may take to answer before it is
# reported as not answering (a fresh start gets the whole managed_start_timeout_s).
RUNNING_ANSWER_TIMEOUT_S = 30.0
USERNAME = "neo4j"


@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    home: Path
    version: str = DEFAULT_LINE.version
    # Where kbgraph's Browser guide is served (None: the asset server is not running).
    browser_guide_url: str | None = None
    line: str = DEFAULT_LINE.name

    def as_dict(self) -> dict[str, object]:
        return {
            "running": self.running,
            "pid": self.pid,
            "bolt_uri": self.bolt_uri,
            "browser_url": self.browser_url,
            "browser_guide_url": self.browser_guide_url,
            "home": str(self.home),
            "version": self.version,
            "line": self.line,
        }


@dataclass
class ManagedNeo4j:
    home: Path
    cache_dir: Path
    bolt_port: int = 7687
    http_port: int = 7474
    heap: str = "4g"
    pagecache: str = "2g"
    start_timeout_s: float = 180.0
    quiet: bool = False
    # Preferred port of the Browser style/guide server (another one if busy); 0 = serve none.
    assets_port: int = DEFAULT_ASSETS_PORT
    # Which Neo4j release it runs (settings.neo4j_version).
    line: Neo4jLine = DEFAULT_LINE
    # JVM options added after kbgraph's own (the test suite's servers use a class-data archive).
    jvm_options: tuple[str, ...] = ()
    # A throw-away server (tests): killed when the process that started it dies (store/managed/watchdog.py).
    # The managed default server outlives the command that started it.
    dies_with_starter: bool = False
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def from_settings(cls, settings: Settings, quiet: bool = False) -> ManagedNeo4j:
        return cls(
            home=settings.managed_instance_dir,
            cache_dir=settings.cache_dir,
            bolt_port=settings.managed_bolt_port,
            http_port=settings.managed_http_port,
            heap=settings.managed_heap,
            pagecache=settings.managed_pagecache,
            start_timeout_s=settings.managed_start_timeout_s,
            quiet=quiet,
            assets_port=configured_assets_port(settings),
            line=LINES[settings.neo4j_version],
        )

    # -- addresses and credentials -------------------------------------------------------------

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def browser_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}/browser/"

    @property
    def password_file(self) -> Path:
        return self.home / "password"

    @property
    def pid_file(self) -> Path:
        return self.home / "run" / "kbgraph-neo4j.pid"

    def password(self) -> str:
        try:
            return self.password_file.read_text().strip()
        except FileNotFoundError:
            raise ManagedServerError(
                f"no password file at {self.password_file}. If the managed Neo4j was never started here, run "
                "`kbgraph server start`; if the file was lost, `kbgraph server reset-password` sets a new password "
                "(the data is kept)."
            ) from None

    def auth(self) -> tuple[str, str]:
        return (USERNAME, self.password())

    @property
    def browser_assets(self) -> BrowserAssetServer:
        return BrowserAssetServer(self.home, say=self._say)

    # -- lifecycle ------------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        pid = self._live_pid()
        assets = self.browser_assets.running() if pid is not None else None
        return ServerStatus(pid is not None, pid, self.bolt_uri, self.browser_url, self.home, self.line.version,
                            browser_guide_url=assets.guide_url if assets else None, line=self.line.name)

    def start(self) -> ServerStatus:
        """Starts the server unless it already runs; returns once Bolt answers with our password.

        Processes starting it at the same time (two commands, a test run beside an ingest) take
        turns: the first starts it, the others find it running. Without the lock both saw no
        server, both launched one, and the loser's pid replaced the winner's in the pid file."""
        with self._start_lock():
            return self._start_or_join()

    @contextmanager
    def _start_lock(self) -> Iterator[None]:
        """The lock processes starting (or resetting) this server take turns with."""
        self.home.parent.mkdir(parents=True, exist_ok=True)
        with open(self.home.parent / f".{self.home.name}.start.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _start_or_join(self, resetting: Path | None = None) -> ServerStatus:
        self._finish_interrupted_resets(running=self._live_pid() is not None, but=resetting)
        if (pid := self._live_pid()) is not None:
            if is_stopped(pid):
                raise ManagedServerError(
                    f"the managed Neo4j (pid {pid}) is stopped (SIGSTOP or Ctrl-Z) and cannot answer: resume it "
                    f"with `kill -CONT {pid}`, or restart it with `kbgraph server stop` then `kbgraph server start`.")
            # Started long ago, it should answer at once: a server that stopped answering (hung,
            # not stopped) is reported after a short wait, not the whole start timeout.
            started_s = time.time() - self.pid_file.stat().st_mtime
            self._wait_until_ready(None, self.start_timeout_s if started_s < self.start_timeout_s else
                                   min(self.start_timeout_s, RUNNING_ANSWER_TIMEOUT_S))
            if self.assets_port:
                self.browser_assets.ensure_running()
            return self.status()
        java, java_version = find_java(self.line)
        for port in (self.bolt_port, self.http_port):
            if port_in_use(port):
                raise ManagedServerError(
                    f"port {port} on 127.0.0.1 is already in use by another program, so the managed "
                    "Neo4j cannot listen there. Stop that program (the managed Neo4j of the other line? "
                    "`kbgraph server stop` with that KBGRAPH_NEO4J_VERSION), or choose other ports with "
                    "KBGRAPH_MANAGED_BOLT_PORT / KBGRAPH_MANAGED_HTTP_PORT."
                )
        lib = ensure_runtime(self.cache_dir, quiet=self.quiet, line=self.line)
        prepare_directories(self.home)
        # Started first so that neo4j.conf can name the port it really got.
        assets = (self.browser_assets.start(self.assets_port, reserved=(self.bolt_port, self.http_port))
                  if self.assets_port else None)
        try:
            prepare_home(self.home, self.config_text(assets), java, lib, self.password_file)
        except BaseException:
            self.browser_assets.stop()
            raise
        vector_api = vector_api_options(java_version, self.line)
        on_java = "" if java_version is None else f" on Java {java_version}{', vector API on' if vector_api else ''}"
        self._say(f"kbgraph: starting Neo4j {self.line.version} ({self.home}){on_java} …")
        log = open(self.home / "logs" / "console.log", "ab")
        try:
            proc = subprocess.Popen(
                [java, f"-Xms{self.heap}", f"-Xmx{self.heap}", *JVM_OPTIONS, *vector_api, *self.jvm_options,
                 "-cp", f"{lib}/*", self.line.entry_point, f"--home-dir={self.home}",
                 f"--config-dir={self.home / 'conf'}"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.home,
            )
        except BaseException:
            self.browser_assets.stop()
            raise
        finally:
            log.close()
        self.pid_file.write_text(str(proc.pid))
        if self.dies_with_starter:
            reap(self._watchdog)  # the one of a server killed since it started (it left when the server died)
            self._watchdog = watch([proc.pid, *filter(None, [self.browser_assets.running_pid()])])
        try:
            self._wait_until_ready(proc, self.start_timeout_s)
        except BaseException:
            terminate(proc.pid, 60.0, poll_s=0.2)
            self.browser_assets.stop()
            raise
        self._say(f"kbgraph: Neo4j is up — Bolt {self.bolt_uri}, Browser {self.browser_url}")
        return self.status()

    def reset_password(self) -> ServerStatus:
        """Sets a new generated password for user neo4j and writes it to the password file: the way
        out when that file was lost. The data is kept, and the server never serves without
        authentication: while it is stopped, its system database (users and roles; kbgraph's data
        and schema live in the neo4j database) is set aside with the initial-password file, and the
        start that follows creates them afresh with a new generated password, as a first start does
        (``neo4j-admin dbms set-initial-password``). If that start fails, what was set aside is put
        back, the old password file with it."""
        if not (self.home / "data").is_dir():
            raise ManagedServerError(f"no managed Neo4j at {self.home} yet: `kbgraph server start` creates one")
        with self._start_lock():  # no start of another process in the middle
            self.stop()
            self._finish_interrupted_resets(running=False)
            aside = self.home / "run" / f"{RESET_ASIDE_PREFIX}{secrets.token_hex(4)}"
            os.mkdir(aside, 0o700)
            try:
                for part in reset_parts(self.home, self.password_file):
                    if part.exists():
                        kept = aside / part.relative_to(self.home)
                        kept.parent.mkdir(parents=True, exist_ok=True)
                        os.rename(part, kept)
                status = self._start_or_join(resetting=aside)
            except BaseException:
                self.stop()
                self._put_back(aside)
                raise
            shutil.rmtree(aside, ignore_errors=True)
            return status

    def _put_back(self, aside: Path) -> None:
        put_back(self.home, self.password_file, aside)

    def _finish_interrupted_resets(self, running: bool, but: Path | None = None) -> None:
        # Said even when quiet: the password in use may have changed back.
        finish_interrupted_resets(self.home, self.password_file, running,
                                  lambda message: print(message, file=sys.stderr, flush=True), but)

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stops the server cleanly (SIGTERM, then SIGKILL after ``timeout_s``). False if not running."""
        pid = self._live_pid()
        if pid is not None:
            terminate(pid, timeout_s, poll_s=0.2)
        self.pid_file.unlink(missing_ok=True)
        self.browser_assets.stop()  # also one left behind by a Neo4j that died on its own
        reap(self._watchdog)  # it leaves once both are gone
        self._watchdog = None
        return pid is not None

    # -- internals ------------------------------------------------------------------------------

    def _say(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr, flush=True)

    def config_text(self, browser_assets: BrowserAssets | None = None) -> str:
        """neo4j.conf; with ``browser_assets``, the Browser applies kbgraph's style and opens its
        guide on every connect."""
        return config_text(self.home, bolt_port=self.bolt_port, http_port=self.http_port, heap=self.heap,
                           pagecache=self.pagecache, browser_assets=browser_assets,
                           line_settings=self.line.own_settings)

    def _wait_until_ready(self, proc: subprocess.Popen[bytes] | None, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last_error = ""
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise ManagedServerError(
                    f"Neo4j exited with code {proc.returncode} while starting. Last log lines:\n"
                    + self._log_tail()
                )
            if not port_in_use(self.bolt_port):
                time.sleep(0.5)
                continue
            try:
                # An auto-commit query: unlike execute_query it does not retry (and log) on its own;
                # each attempt is bounded, so a server that stops answering is tried again, not awaited.
                with neo4j.GraphDatabase.driver(self.bolt_uri, auth=self.auth(), connection_timeout=10.0) as driver:
                    def ping() -> None:
                        with driver.session(database="neo4j") as session:
                            session.run(query("ping")).consume()

                    within(min(15.0, max(1.0, deadline - time.monotonic())), "waiting for the managed Neo4j", ping)
                return
            except neo4j.exceptions.AuthError as exc:
                raise ManagedServerError(refused_password(self.bolt_uri, self.password_file, exc.message)) from None
            except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired, OSError,
                    Neo4jTimeoutError) as exc:
                last_error = str(exc)
            except neo4j.exceptions.Neo4jError as exc:  # database still starting
                last_error = exc.message or str(exc)
            time.sleep(0.5)
        raise ManagedServerError(
            f"Neo4j did not answer on {self.bolt_uri} within {timeout_s:.0f} s "
            f"({last_error}). Last log lines:\n" + self._log_tail()
        )

    def _log_tail(self, lines: int = 15) -> str:
        out: list[str] = []
        for name in ("console.log", "neo4j.log"):
            path = self.home / "logs" / name
            if path.exists():
                out += path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(out[-lines:])

    def _live_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        # A recycled pid belongs to someone else: only a Neo4j entry point with our home counts (of
        # either line, so that a server started before neo4j_version changed can still be stopped).
        if any(line.entry_point in cmdline for line in LINES.values()) and f"--home-dir={self.home}" in cmdline:
            return pid
        return None


def configured_assets_port(settings: Settings) -> int:
    """The preferred port of the Browser asset server: ``settings.managed_assets_port`` (env
    ``KBGRAPH_MANAGED_ASSETS_PORT``), 0 to serve no style or guide; 7475 by default."""
    return settings.managed_assets_port


def refused_password(uri: str, password_file: Path, reason: str | None) -> str:
    """What to do when the managed Neo4j refuses the password kbgraph keeps for it (Neo4j's own
    reason ends with a full stop: not doubled)."""
    reason = (reason or "authentication failure").strip().rstrip(".")
    return (f"the managed Neo4j at {uri} refused the password in {password_file}: {reason}. "
            "If you changed it, write the new one into that file.")
