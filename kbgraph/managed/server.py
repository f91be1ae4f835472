"""Start, stop and inspect a Neo4j Community server that kbgraph runs itself.

An instance is a folder (``conf/``, ``data/``, ``logs/``, ``run/``) plus a ``password`` file that
only the user can read. The first start sets that generated password with ``neo4j-admin dbms
set-initial-password`` before the database exists, so the server never runs with the default
credentials. The server listens on 127.0.0.1 only, with Bolt and HTTP (the Browser).

Next to it runs a small HTTP server with kbgraph's Browser style and guide
(:mod:`kbgraph.browser`); the generated neo4j.conf makes the Browser load both on every connect.
It starts and stops with the server, and never keeps the server from starting.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import neo4j

from kbgraph.browser.asset_process import DEFAULT_PORT as DEFAULT_ASSETS_PORT
from kbgraph.browser.asset_process import BrowserAssetServer
from kbgraph.browser.assets import BrowserAssets
from kbgraph.cypher_files import query
from kbgraph.deadline import Neo4jTimeoutError, within
from kbgraph.errors import ManagedServerError
from kbgraph.managed.runtime import NEO4J_VERSION, ensure_runtime
# free_port is re-exported: tests and tools start throw-away servers on it.
from kbgraph.processes import free_port as free_port
from kbgraph.processes import port_in_use, terminate
from kbgraph.settings import Settings

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
# How long a managed server that has been running for a while may take to answer before it is
# reported as not answering (a fresh start gets the whole managed_start_timeout_s).
RUNNING_ANSWER_TIMEOUT_S = 30.0
USERNAME = "neo4j"
#: Segments of one size a vector index gathers before Lucene merges them (Neo4j's default: 50).
VECTOR_MERGE_FACTOR = 4

# What Neo4j's own launcher passes to the JVM (neo4j.conf defaults of 5.26), minus what
# would pre-touch the whole heap at start.
JVM_OPTIONS = [
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
]

#: Java feature versions on which Neo4j 5.26's Lucene (9.11) runs its vector math on the JDK's
#: vector API (SIMD), given the incubator module. On other versions it falls back to plain loops:
#: on Java 17, half of a scaled build's server CPU is Lucene's scalar float dot product.
LUCENE_VECTOR_API_JAVA = range(20, 23)
VECTOR_API_OPTION = "--add-modules=jdk.incubator.vector"


def java_feature_version(version_output: str) -> int | None:
    """The feature version (17, 21, …) in what ``java -version`` prints, or None."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        return None
    major = int(match.group(1))
    # Java 8 and older print "1.8.0_…".
    return int(match.group(2) or 0) if major == 1 else major


def vector_api_options(feature_version: int | None) -> list[str]:
    """JVM options that let Lucene use the vector API on this Java, as its own startup log asks."""
    return [VECTOR_API_OPTION] if feature_version in LUCENE_VECTOR_API_JAVA else []


def probe_java_version(java: str) -> int | None:
    """Runs ``java -version``; None when it cannot be read (the server then starts without extras)."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return java_feature_version(done.stderr + done.stdout)



def generated_password() -> str:
    """A random password for user neo4j: [A-Za-z0-9_-], so it needs no quoting in neo4j-admin's
    argument file, and never starting with '-', which neo4j-admin would read as an option (one
    fresh start in 64 failed with its usage text before this)."""
    return "k" + secrets.token_urlsafe(18)

@dataclass(frozen=True)
class ServerStatus:
    running: bool
    pid: int | None
    bolt_uri: str
    browser_url: str
    home: Path
    version: str = NEO4J_VERSION
    # Where kbgraph's Browser guide is served (None: the asset server is not running).
    browser_guide_url: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "running": self.running,
            "pid": self.pid,
            "bolt_uri": self.bolt_uri,
            "browser_url": self.browser_url,
            "browser_guide_url": self.browser_guide_url,
            "home": str(self.home),
            "version": self.version,
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
    # False only while reset_password runs (loopback only, for the seconds it takes).
    auth_enabled: bool = True

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
        return ServerStatus(pid is not None, pid, self.bolt_uri, self.browser_url, self.home,
                            browser_guide_url=assets.guide_url if assets else None)

    def start(self) -> ServerStatus:
        """Starts the server unless it already runs; returns once Bolt answers with our password."""
        if (pid := self._live_pid()) is not None:
            if _is_stopped(pid):
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
        java = shutil.which("java")
        if java is None:
            raise ManagedServerError("java not found: the managed Neo4j needs Java 17 or newer on PATH.")
        java_version = probe_java_version(java)
        if java_version is not None and java_version < 17:
            raise ManagedServerError(
                f"{java} is Java {java_version}: the managed Neo4j {NEO4J_VERSION} needs Java 17 or 21 first on PATH.")
        for port in (self.bolt_port, self.http_port):
            if port_in_use(port):
                raise ManagedServerError(
                    f"port {port} on 127.0.0.1 is already in use by another program, so the managed "
                    "Neo4j cannot listen there. Stop that program, or choose other ports with "
                    "KBGRAPH_MANAGED_BOLT_PORT / KBGRAPH_MANAGED_HTTP_PORT."
                )
        lib = ensure_runtime(self.cache_dir, quiet=self.quiet)
        self._prepare_directories()
        # Started first so that neo4j.conf can name the port it really got.
        assets = (self.browser_assets.start(self.assets_port, reserved=(self.bolt_port, self.http_port))
                  if self.assets_port else None)
        try:
            self._prepare_home(java, lib, assets)
        except BaseException:
            self.browser_assets.stop()
            raise
        vector_api = vector_api_options(java_version)
        on_java = "" if java_version is None else f" on Java {java_version}{', vector API on' if vector_api else ''}"
        self._say(f"kbgraph: starting Neo4j {NEO4J_VERSION} ({self.home}){on_java} …")
        log = open(self.home / "logs" / "console.log", "ab")
        try:
            proc = subprocess.Popen(
                [java, f"-Xms{self.heap}", f"-Xmx{self.heap}", *JVM_OPTIONS, *vector_api, "-cp", f"{lib}/*",
                 ENTRY_POINT, f"--home-dir={self.home}", f"--config-dir={self.home / 'conf'}"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.home,
            )
        except BaseException:
            self.browser_assets.stop()
            raise
        finally:
            log.close()
        self.pid_file.write_text(str(proc.pid))
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
        out when that file was lost (Neo4j's documented recovery: restart with authentication off,
        bound to loopback as always, ALTER USER, restart with it on). The data is kept."""
        if not (self.home / "data").is_dir():
            raise ManagedServerError(f"no managed Neo4j at {self.home} yet: `kbgraph server start` creates one")
        self.stop()
        unlocked = replace(self, auth_enabled=False, assets_port=0)
        unlocked.start()
        password = generated_password()
        try:
            with neo4j.GraphDatabase.driver(self.bolt_uri, auth=None) as driver:
                with driver.session(database="system") as session:
                    session.run(query("managed_reset_password"), password=password).consume()
        finally:
            unlocked.stop()
        self._write_password(password)
        return self.start()

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stops the server cleanly (SIGTERM, then SIGKILL after ``timeout_s``). False if not running."""
        pid = self._live_pid()
        if pid is not None:
            terminate(pid, timeout_s, poll_s=0.2)
        self.pid_file.unlink(missing_ok=True)
        self.browser_assets.stop()  # also one left behind by a Neo4j that died on its own
        return pid is not None

    # -- internals ------------------------------------------------------------------------------

    def _say(self, message: str) -> None:
        if not self.quiet:
            print(message, file=sys.stderr, flush=True)

    def _prepare_directories(self) -> None:
        for sub in ("conf", "data", "logs", "run", "import", "plugins"):
            (self.home / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.home, 0o700)

    def _prepare_home(self, java: str, lib: Path, assets: BrowserAssets | None) -> None:
        (self.home / "conf" / "neo4j.conf").write_text(self.config_text(assets))
        if not (self.home / "data" / "dbms" / "auth.ini").exists():
            password = generated_password()
            # Given as an @argument file (neo4j-admin reads arguments from it), never on the command
            # line, where `ps` would show it to every user of the machine.
            arguments = self.home / "run" / f"set-initial-password.{secrets.token_hex(4)}.args"
            descriptor = os.open(arguments, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(descriptor, "w") as handle:
                    handle.write(password + "\n")
                proc = subprocess.run(
                    [java, "-cp", f"{lib}/*", ADMIN_TOOL, "dbms", "set-initial-password", f"@{arguments}"],
                    env={**os.environ, "NEO4J_HOME": str(self.home), "NEO4J_CONF": str(self.home / "conf")},
                    capture_output=True, text=True, stdin=subprocess.DEVNULL,
                )
            finally:
                arguments.unlink(missing_ok=True)
            if proc.returncode != 0:
                raise ManagedServerError(f"setting the initial Neo4j password failed: {proc.stderr.strip()}")
            self._write_password(password)

    def _write_password(self, password: str) -> None:
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(password + "\n")

    def config_text(self, browser_assets: BrowserAssets | None = None) -> str:
        """neo4j.conf; with ``browser_assets``, the Browser applies kbgraph's style and opens its
        guide on every connect."""
        home = self.home
        browser = [f"{key}={value}" for key, value in browser_assets.neo4j_settings().items()] if browser_assets else []
        return "\n".join([
            "# Written by kbgraph at every start; edit kbgraph's settings instead.",
            "server.default_listen_address=127.0.0.1",
            "server.default_advertised_address=127.0.0.1",
            "server.bolt.enabled=true",
            f"server.bolt.listen_address=127.0.0.1:{self.bolt_port}",
            f"server.bolt.advertised_address=127.0.0.1:{self.bolt_port}",
            "server.http.enabled=true",
            f"server.http.listen_address=127.0.0.1:{self.http_port}",
            f"server.http.advertised_address=127.0.0.1:{self.http_port}",
            "server.https.enabled=false",
            f"dbms.security.auth_enabled={'true' if self.auth_enabled else 'false'}",
            f"server.memory.heap.initial_size={self.heap}",
            f"server.memory.heap.max_size={self.heap}",
            f"server.memory.pagecache.size={self.pagecache}",
            f"server.directories.data={home / 'data'}",
            f"server.directories.logs={home / 'logs'}",
            f"server.directories.run={home / 'run'}",
            f"server.directories.import={home / 'import'}",
            f"server.directories.plugins={home / 'plugins'}",
            "db.tx_log.rotation.retention_policy=2 files",
            # Every transaction that writes vectors adds a Lucene segment to the shared vector
            # indexes, and a query searches every segment's HNSW graph: with Neo4j's default (merge
            # when 50 segments of one size have piled up), an agent memory written run by run
            # reached 20-40 segments and its step search slowed sixfold. Merging at 4 keeps them few.
            f"internal.dbms.index.vector.standard_merge_factor={VECTOR_MERGE_FACTOR}",
            "dbms.usage_report.enabled=false",
            # Neo4j Browser: no usage tracking (and no banner asking about it).
            "client.allow_telemetry=false",
            *browser,
            "",
        ])

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
                auth = self.auth() if self.auth_enabled else None
                with neo4j.GraphDatabase.driver(self.bolt_uri, auth=auth, connection_timeout=10.0) as driver:
                    def ping() -> None:
                        with driver.session(database="neo4j") as session:
                            session.run(query("ping")).consume()

                    within(min(15.0, max(1.0, deadline - time.monotonic())), "waiting for the managed Neo4j", ping)
                return
            except neo4j.exceptions.AuthError as exc:
                raise ManagedServerError(
                    f"the managed Neo4j at {self.bolt_uri} refused the password in {self.password_file}: "
                    f"{exc.message}. If you changed it, write the new one into that file."
                ) from None
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
        # A recycled pid belongs to someone else: only our entry point with our home counts.
        if ENTRY_POINT in cmdline and f"--home-dir={self.home}" in cmdline:
            return pid
        return None



def configured_assets_port(settings: Settings) -> int:
    """The preferred port of the Browser asset server: ``settings.managed_assets_port`` (env
    ``KBGRAPH_MANAGED_ASSETS_PORT``), 0 to serve no style or guide; 7475 by default."""
    return settings.managed_assets_port


def _is_stopped(pid: int) -> bool:
    """Whether the process is stopped by a signal (state T in /proc): it cannot answer until resumed."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] in ("T", "t")
