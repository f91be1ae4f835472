"""The Neo4j release lines the managed server can run, and what each needs from Java.

A line is chosen by the setting ``neo4j_version`` (``KBGRAPH_NEO4J_VERSION``). Each has its own pom
(so its own cached runtime), entry point, Java versions and instance folder (a store that 2026
has opened cannot be opened by 5.26 again).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from kbgraph.core.settings import DEFAULT_NEO4J_LINE, NEO4J_LINES, Neo4jLineName


@dataclass(frozen=True)
class Neo4jLine:
    name: Neo4jLineName
    #: The pom (beside this module) that Maven resolves into the runtime's jars.
    pom: str
    #: The class with ``main`` that starts a Community server.
    entry_point: str
    #: Java feature versions this release supports; older than the first one cannot run it.
    java: range
    #: Java feature versions on which its Lucene runs vector math on the JDK's vector API (SIMD),
    #: given the incubator module. Elsewhere it falls back to plain loops: on Java 17, half of a
    #: scaled build's server CPU was Lucene 9.11's scalar float dot product.
    vector_api_java: range
    #: neo4j.conf lines of this release only (a setting's name differs between releases): each is
    #: written into every start's configuration.
    own_settings: tuple[str, ...] = ()

    def pom_bytes(self) -> bytes:
        return (resources.files("kbgraph.store.managed") / self.pom).read_bytes()

    @property
    def version(self) -> str:
        """The exact release the pom pins (5.26.30, 2026.09.0)."""
        match = re.search(rb"<neo4j.version>([^<]+)<", self.pom_bytes())
        assert match is not None, f"{self.pom} pins no <neo4j.version>"
        return match.group(1).decode()

    @property
    def min_java(self) -> int:
        return self.java.start


# The Bolt server's event loops wait for 5 s without a task before they close, one loop after the
# other: every stop took 10 s more than its checkpoint needed. Both databases are stopped and
# checkpointed before the loops close, so nothing is left for the wait to protect.
# (The setting is an integer of seconds in 5.26 and a duration under another name in 2026.)
LINES: dict[Neo4jLineName, Neo4jLine] = {
    # Neo4j 5.26 LTS supports Java 17 and 21; its Lucene 9.11 vectorises on Java 20-22 only (on
    # 23+ it asks for a newer Lucene).
    "5.26": Neo4jLine("5.26", "pom.xml", "org.neo4j.server.CommunityEntryPoint", range(17, 22), range(20, 23),
                      ("internal.dbms.bolt.netty_server_shutdown_quiet_period=0",)),
    # Neo4j 2026.x supports Java 21 and 25; its Lucene 10.5 vectorises on Java 21-26 (its
    # VectorizationProvider's default upperJavaFeatureVersion is 26).
    "2026.09": Neo4jLine("2026.09", "pom-2026.09.xml", "org.neo4j.server.Neo4jCommunity", range(21, 26),
                         range(21, 27), ("internal.dbms.bolt.netty_server_shutdown_quiet_period_duration=0s",)),
}
assert set(LINES) == set(NEO4J_LINES)

DEFAULT_LINE = LINES[DEFAULT_NEO4J_LINE]
