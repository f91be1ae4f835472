"""A class-data archive (the JVM's AppCDS) for the test suite's Neo4j servers, kept in kbgraph's cache.

The suite starts a dozen servers a run, and each start spent most of its ~20 s of CPU loading and
verifying Neo4j's classes; mapped from an archive, they load in about half that. The archive is
written by the JVM as it exits (``-XX:ArchiveClassesAtExit``), from a server that ran tests: the
session's servers (tests/conftest.py) write one when none exists; the servers that follow read it.

The name is keyed by the java (its path and ``java -version``) and the runtime's jars, which the
archive must match. A JVM writes the file in place, and one cut short (a server killed, a full
disk) crashes the next JVM that maps it; so each server writes a file of its own, and it is moved
to the shared name only once a JVM has mapped it with ``-Xshare:on`` (which refuses a bad one).

Only tests use it: the managed server of ``kbgraph server start`` runs as it always did.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import uuid
from pathlib import Path

from kbgraph.store.managed.java import find_java
from kbgraph.store.managed.lines import Neo4jLine
from kbgraph.store.managed.runtime import runtime_dir


class ClassDataArchive:
    def __init__(self, cache_dir: Path, line: Neo4jLine):
        self.java, _ = find_java(line)
        self.lib = runtime_dir(cache_dir, line) / "lib"
        version = subprocess.run([self.java, "-version"], capture_output=True, text=True).stderr
        key = hashlib.sha256(f"{os.path.realpath(self.java)}\n{version}\n{self.lib}".encode()).hexdigest()[:12]
        self.path = runtime_dir(cache_dir, line).parent / f"class-data-{line.version}-{key}.jsa"
        self.written: Path | None = None

    def jvm_options(self, write: bool = False) -> tuple[str, ...]:
        """Read the archive when there is one; else, with ``write``, write one of this server's own."""
        if self.path.exists():
            return (f"-XX:SharedArchiveFile={self.path}",)
        if not write:
            return ()
        self.written = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}")
        return (f"-XX:ArchiveClassesAtExit={self.written}",)

    def keep(self) -> None:
        """After the server that wrote it stopped: the archive it wrote becomes the shared one if a
        JVM maps it; a broken one is deleted."""
        written, self.written = self.written, None
        if written is None or not written.exists():
            return
        try:
            mapped = subprocess.run([self.java, "-Xshare:on", f"-XX:SharedArchiveFile={written}", "-cp",
                                     f"{self.lib}/*", "-version"], capture_output=True, timeout=60)
            if mapped.returncode == 0:
                os.replace(written, self.path)
        finally:
            written.unlink(missing_ok=True)
