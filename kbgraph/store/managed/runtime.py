"""Obtains the Neo4j server and Browser jars from Maven Central and caches them.

Each release line has its own pom (:mod:`kbgraph.store.managed.lines`). The cache entry is keyed by
the pom's content, so changing a version in a pom fetches a new runtime while old checkouts keep
theirs, and the two lines never share one. Installs are atomic (copy into a temporary folder, then
rename) and serialised by a file lock, so parallel processes never see half a runtime.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kbgraph.core.errors import ManagedServerError
from kbgraph.store.managed.lines import DEFAULT_LINE, Neo4jLine

#: The release the default line pins.
NEO4J_VERSION = DEFAULT_LINE.version


def runtime_dir(cache_dir: Path, line: Neo4jLine = DEFAULT_LINE) -> Path:
    key = hashlib.sha256(line.pom_bytes()).hexdigest()[:12]
    return cache_dir / "neo4j" / f"runtime-{line.version}-{key}"


def ensure_runtime(cache_dir: Path, quiet: bool = False, line: Neo4jLine = DEFAULT_LINE) -> Path:
    """Returns the folder of jars to put on the classpath, downloading them on first use."""
    target = runtime_dir(cache_dir, line)
    if (target / ".complete").exists():
        return target / "lib"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return target / "lib"
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ManagedServerError(
                "Maven (mvn) not found: the managed Neo4j is fetched from Maven Central with it. "
                "Install Maven, or set NEO4J_URI to use a Neo4j server you run yourself."
            )
        if not quiet:
            print(
                f"kbgraph: fetching Neo4j {line.version} and the Neo4j Browser from Maven Central "
                f"into {target} (first run only)…",
                file=sys.stderr,
                flush=True,
            )
        work = Path(tempfile.mkdtemp(prefix=".runtime-", dir=target.parent))
        try:
            (work / "pom.xml").write_bytes(line.pom_bytes())
            proc = subprocess.run(
                [mvn, "-B", "-q", "-f", str(work / "pom.xml"), "dependency:copy-dependencies",
                 f"-DoutputDirectory={work / 'lib'}", "-DincludeScope=runtime"],
                capture_output=True, text=True, stdin=subprocess.DEVNULL,
            )
            if proc.returncode != 0:
                tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
                raise ManagedServerError(
                    "Maven could not fetch the Neo4j server from Maven Central:\n  " + "\n  ".join(tail)
                )
            (work / ".complete").touch()
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    return target / "lib"
