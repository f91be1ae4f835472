"""The Java side of the managed Neo4j: which java runs it, and with which JVM options.

Neo4j 5.26 needs Java 17 or newer. On the Java versions where its Lucene can run vector math on
the JDK's vector API (SIMD), the server is started with the incubator module that enables it.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from kbgraph.core.errors import ManagedServerError
from kbgraph.store.managed.runtime import NEO4J_VERSION

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"

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


def find_java() -> tuple[str, int | None]:
    """The java on PATH and its feature version (None: unknown); ManagedServerError when there is
    none, or it is older than Neo4j needs."""
    java = shutil.which("java")
    if java is None:
        raise ManagedServerError("java not found: the managed Neo4j needs Java 17 or newer on PATH.")
    java_version = probe_java_version(java)
    if java_version is not None and java_version < 17:
        raise ManagedServerError(
            f"{java} is Java {java_version}: the managed Neo4j {NEO4J_VERSION} needs Java 17 or 21 first on PATH.")
    return java, java_version
