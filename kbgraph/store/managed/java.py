"""The Java side of the managed Neo4j: which java runs it, and with which JVM options.

Each release line (:mod:`kbgraph.store.managed.lines`) names the Java versions it supports and those
on which its Lucene can run vector math on the JDK's vector API (SIMD); on those the server is
started with the incubator module that enables it. The java is chosen among ``$JAVA_HOME``, the
one on PATH and the JDKs installed in the usual folders, so that 5.26 (Java 17) and 2026.09
(Java 21+) can both run on one machine without anyone switching JDKs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from glob import glob

from kbgraph.core.errors import ManagedServerError
from kbgraph.store.managed.lines import DEFAULT_LINE, Neo4jLine

#: The default line's entry point (each line names its own).
ENTRY_POINT = DEFAULT_LINE.entry_point
ADMIN_TOOL = "org.neo4j.cli.AdminTool"

# What Neo4j's own launcher passes to the JVM (neo4j.conf defaults of 5.26 and 2026.09), minus what
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

#: The default line's vector-API Java versions (each line names its own).
LUCENE_VECTOR_API_JAVA = DEFAULT_LINE.vector_api_java
VECTOR_API_OPTION = "--add-modules=jdk.incubator.vector"

#: Where JDKs are installed besides $JAVA_HOME and PATH: Debian/Ubuntu/Fedora packages and Adoptium's
#: (/usr/lib/jvm), SDKMAN, and macOS.
JDK_GLOBS = ("/usr/lib/jvm/*/bin/java", os.path.expanduser("~/.sdkman/candidates/java/*/bin/java"),
             "/Library/Java/JavaVirtualMachines/*/Contents/Home/bin/java")


def java_feature_version(version_output: str) -> int | None:
    """The feature version (17, 21, …) in what ``java -version`` prints, or None."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        return None
    major = int(match.group(1))
    # Java 8 and older print "1.8.0_…".
    return int(match.group(2) or 0) if major == 1 else major


def vector_api_options(feature_version: int | None, line: Neo4jLine = DEFAULT_LINE) -> list[str]:
    """JVM options that let Lucene use the vector API on this Java, as its own startup log asks."""
    return [VECTOR_API_OPTION] if feature_version in line.vector_api_java else []


def probe_java_version(java: str) -> int | None:
    """Runs ``java -version``; None when it cannot be read (the server then starts without extras)."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return java_feature_version(done.stderr + done.stdout)


def java_candidates() -> list[str]:
    """The javas to consider, in order of preference when they serve a line equally well:
    $JAVA_HOME's, PATH's, then the installed JDKs (each once, by its real path)."""
    found: list[str] = []
    home = os.environ.get("JAVA_HOME")
    on_path = shutil.which("java")
    installed = sorted(path for pattern in JDK_GLOBS for path in glob(pattern))
    for java in [os.path.join(home, "bin", "java") if home else None, on_path, *installed]:
        if java and os.access(java, os.X_OK) and os.path.realpath(java) not in map(os.path.realpath, found):
            found.append(java)
    return found


def choose_java(probed: Iterable[tuple[str, int | None]], line: Neo4jLine) -> tuple[str, int | None] | None:
    """The best (java, feature version) for ``line`` among ``probed`` (in order of preference): one on
    which Lucene vectorises first, then one the release supports, then any new enough. A java whose
    version cannot be read is used only when nothing else is known to fit. None: no java fits."""
    fitting = [(java, version) for java, version in probed if version is None or version >= line.min_java]
    # min() keeps the first of equals, so the order of preference decides between them.
    return min(fitting, key=lambda jv: (jv[1] is None, jv[1] not in line.vector_api_java, jv[1] not in line.java),
               default=None)


def find_java(line: Neo4jLine = DEFAULT_LINE) -> tuple[str, int | None]:
    """The java to run ``line`` with and its feature version (None: unknown); ManagedServerError
    when none is installed, or all are older than the release needs."""
    probed = [(java, probe_java_version(java)) for java in java_candidates()]
    chosen = choose_java(probed, line)
    if chosen is not None:
        return chosen
    needs = f"the managed Neo4j {line.version} needs Java {line.min_java} or newer"
    if not probed:
        raise ManagedServerError(f"java not found: {needs} (on PATH, in JAVA_HOME or under /usr/lib/jvm).")
    seen = ", ".join(f"{java} (Java {version})" for java, version in probed)
    raise ManagedServerError(f"{needs}; found only {seen}. Install a JDK {line.java.start}–{line.java.stop - 1} "
                             "or set JAVA_HOME to one.")
