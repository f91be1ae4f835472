"""Which Neo4j kbgraph is connected to: its release, edition, Cypher versions and Java.

Asked of the server itself (``dbms.components()`` and the JVM's runtime bean), so it is true for
kbgraph's managed server of either line and for a user's own server at NEO4J_URI alike. Shown by
``kbgraph server status --json`` and ``kbgraph stats``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import neo4j

from kbgraph.core.errors import KbgraphError
from kbgraph.core.redact import redact_uri
from kbgraph.core.settings import Settings
from kbgraph.store.connection import open_driver, users_server
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.managed import ManagedNeo4j
from kbgraph.store.managed.java import find_java, java_feature_version, vector_api_options

__all__ = ["ServerInfo", "server_info", "server_status"]


@dataclass(frozen=True)
class ServerInfo:
    #: The release, as the kernel reports it: "5.26.30", "2026.09.0".
    neo4j_version: str
    edition: str
    #: The JVM's version ("25.0.3+9-LTS"); None when the server does not say (JMX refused).
    java: str | None
    #: Cypher versions the server accepts: ["5"] up to 5.26 (which lists none), ["5", "25"] on 2026.x.
    cypher_versions: list[str]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def server_info(gateway: Neo4jGateway) -> ServerInfo:
    """What the server behind ``gateway`` is (two small reads)."""
    rows = gateway.read("server_components")
    kernel = next((row for row in rows if row["name"] == "Neo4j Kernel"), rows[0])
    cypher = next((row["versions"] for row in rows if row["name"] == "Cypher"), ["5"])
    try:
        java_rows = gateway.read("server_java")
    except neo4j.exceptions.ClientError:  # the procedure is not allowed for this user, or missing
        java_rows = []
    java = (java_rows[0]["vm_version"] or java_rows[0]["spec_version"]) if java_rows else None
    return ServerInfo(kernel["versions"][0], kernel["edition"], java, list(cypher))


def server_status(settings: Settings) -> dict[str, object]:
    """``kbgraph server status --json``: the managed server's state, plus ``neo4j_version`` and
    ``java`` of the server kbgraph uses — asked of it when it runs (the managed one, or the one at
    NEO4J_URI); for a stopped managed server, the release its line pins and the Java ``start``
    would choose. ``vector_api``: whether the managed server's Lucene gets the vector API."""
    server = ManagedNeo4j.from_settings(settings, quiet=True)
    status = server.status()
    out = status.as_dict() | {"uses": "managed" if settings.uses_managed_server else "NEO4J_URI"}
    if not settings.uses_managed_server:
        out["neo4j_uri"] = redact_uri(settings.neo4j_uri or "")
    if settings.uses_managed_server and not status.running:
        try:
            _, version = find_java(server.line)
        except KbgraphError as exc:
            return out | {"neo4j_version": server.line.version, "java": None, "vector_api": False, "error": str(exc)}
        return out | {"neo4j_version": server.line.version, "java": None if version is None else str(version),
                      "vector_api": bool(vector_api_options(version, server.line))}
    try:
        info = _ask(settings, server)
    except KbgraphError as exc:  # a server at NEO4J_URI that is down, a managed one that hangs
        return out | {"neo4j_version": None, "java": None, "error": str(exc)}
    out |= info.as_dict()
    if settings.uses_managed_server:
        out["vector_api"] = bool(vector_api_options(java_feature_version(f'version "{info.java}"'), server.line))
    return out


def _ask(settings: Settings, server: ManagedNeo4j) -> ServerInfo:
    """Asks the running server; never starts one (a status must not change what it reports)."""
    uri, auth = (server.bolt_uri, server.auth()) if settings.uses_managed_server else users_server(settings)
    driver = open_driver(uri, auth, settings.neo4j_database, settings.connect_timeout_s, settings.retry_time_s)
    try:
        return server_info(Neo4jGateway(driver, settings.neo4j_database, timeout_s=settings.query_timeout_s))
    finally:
        driver.close()
