"""Obtains the Neo4j server and Browser jars from Maven Central and caches them.

The cache entry is keyed by the pom's content, so changing a version in ``pom.xml`` fetches a new
runtime while old checkouts keep theirs. Installs are atomic (copy into a temporary folder, then
rename) and serialised by a file lock, so parallel processes never see half a runtime.
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from kbgraph.core.errors import ManagedServerError

_POM = resources.files("kbgraph.store.managed") / "pom.xml"
NEO4J_VERSION = re.search(r"<neo4j.version>([^<]+)<", _POM.read_text()).group(1)  # type: ignore[union-attr]


def runtime_dir(cache_dir: Path) -> Path:
    key = hashlib.sha256(_POM.read_bytes()).hexdigest()[:12]
    return cache_dir / "neo4j" / f"runtime-{NEO4J_VERSION}-{key}"


def ensure_runtime(cache_dir: Path, quiet: bool = False) -> Path:
    """Returns the folder of jars to put on the classpath, downloading them on first use."""
    target = runtime_dir(cache_dir)
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
                f"kbgraph: fetching Neo4j {NEO4J_VERSION} and the Neo4j Browser from Maven Central "
                f"into {target} (first run only)…",
                file=sys.stderr,
                flush=True,
            )
        work = Path(tempfile.mkdtemp(prefix=".runtime-", dir=target.parent))
        try:
            (work / "pom.xml").write_bytes(_POM.read_bytes())
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
