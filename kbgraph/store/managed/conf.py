"""An instance folder of the managed Neo4j: its directories, neo4j.conf and password file.

The first start sets a generated password with ``neo4j-admin dbms set-initial-password`` before
the database exists, so the server never runs with the default credentials; the password file is
readable by the user only. neo4j.conf is written at every start from kbgraph's settings.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Sequence
from pathlib import Path

from kbgraph.store.managed.browser.assets import BrowserAssets
from kbgraph.core.errors import ManagedServerError
from kbgraph.store.managed.java import ADMIN_TOOL

#: Segments of one size a vector index gathers before Lucene merges them (Neo4j's default: 50).
VECTOR_MERGE_FACTOR = 4


def generated_password() -> str:
    """A random password for user neo4j: [A-Za-z0-9_-], so it needs no quoting in neo4j-admin's
    argument file, and never starting with '-', which neo4j-admin would read as an option (one
    fresh start in 64 failed with its usage text before this)."""
    return "k" + secrets.token_urlsafe(18)


def write_password(password_file: Path, password: str) -> None:
    """Writes the password file, readable and writable by the user only."""
    fd = os.open(password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(password + "\n")


def prepare_directories(home: Path) -> None:
    """The instance's folders, the home itself closed to other users."""
    for sub in ("conf", "data", "logs", "run", "import", "plugins"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)


def prepare_home(home: Path, config: str, java: str, lib: Path, password_file: Path) -> None:
    """Writes neo4j.conf; before the first start, also sets a generated initial password and
    writes it to ``password_file``."""
    (home / "conf" / "neo4j.conf").write_text(config)
    if (home / "data" / "dbms" / "auth.ini").exists():
        return
    password = generated_password()
    # Given as an @argument file (neo4j-admin reads arguments from it), never on the command
    # line, where `ps` would show it to every user of the machine.
    arguments = home / "run" / f"set-initial-password.{secrets.token_hex(4)}.args"
    descriptor = os.open(arguments, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(password + "\n")
        proc = subprocess.run(
            [java, "-cp", f"{lib}/*", ADMIN_TOOL, "dbms", "set-initial-password", f"@{arguments}"],
            env={**os.environ, "NEO4J_HOME": str(home), "NEO4J_CONF": str(home / "conf")},
            capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )
    finally:
        arguments.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise ManagedServerError(f"setting the initial Neo4j password failed: {proc.stderr.strip()}")
    write_password(password_file, password)


def config_text(
    home: Path, *, bolt_port: int, http_port: int, heap: str, pagecache: str,
    browser_assets: BrowserAssets | None = None, line_settings: Sequence[str] = (),
) -> str:
    """neo4j.conf; with ``browser_assets``, the Browser applies kbgraph's style and opens its
    guide on every connect. ``line_settings``: lines of the release it is for (their names differ
    between releases)."""
    browser = [f"{key}={value}" for key, value in browser_assets.neo4j_settings().items()] if browser_assets else []
    return "\n".join([
        "# Written by kbgraph at every start; edit kbgraph's settings instead.",
        "server.default_listen_address=127.0.0.1",
        "server.default_advertised_address=127.0.0.1",
        "server.bolt.enabled=true",
        f"server.bolt.listen_address=127.0.0.1:{bolt_port}",
        f"server.bolt.advertised_address=127.0.0.1:{bolt_port}",
        "server.http.enabled=true",
        f"server.http.listen_address=127.0.0.1:{http_port}",
        f"server.http.advertised_address=127.0.0.1:{http_port}",
        "server.https.enabled=false",
        "dbms.security.auth_enabled=true",
        f"server.memory.heap.initial_size={heap}",
        f"server.memory.heap.max_size={heap}",
        f"server.memory.pagecache.size={pagecache}",
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
        *line_settings,
        "",
    ])
