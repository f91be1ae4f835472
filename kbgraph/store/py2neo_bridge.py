"""A py2neo ``Graph`` on kbgraph's database, for code that still uses py2neo.

py2neo is end-of-life (its last release, 2021.2.4, predates Neo4j 5), so it is an optional extra
(``pip install 'kbgraph[py2neo]'``) imported only when asked for. Checked against Neo4j 5.26
(tests/kbgraph/store/test_py2neo.py): it connects over Bolt 4.3, the newest protocol it knows, and
Cypher through ``graph.run`` / ``graph.query``, ``graph.nodes.match`` and its OGM work; its
schema API does not (``graph.schema.get_indexes`` and ``get_uniqueness_constraints`` call the
``db.indexes`` procedure Neo4j 5 removed; ``create_index``, ``create_uniqueness_constraint`` and
``drop_index`` send ``CREATE INDEX ON`` / ``CONSTRAINT ON … ASSERT`` / ``DROP INDEX ON``, syntax
Neo4j 5 removed). Use kbgraph, ``SHOW INDEXES`` or the official ``neo4j`` driver for those.

Nothing py2neo does is scoped to a namespace: filter on ``kb`` in every query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from kbgraph.core.errors import InvalidInputError, KbgraphError, Neo4jUnavailableError, validation_problems
from kbgraph.store.managed import ManagedNeo4j
from kbgraph.core.settings import Settings

if TYPE_CHECKING:
    import py2neo

INSTALL_HINT = "pip install 'kbgraph[py2neo]'"


class Py2neoMissingError(KbgraphError):
    """py2neo is not installed (it is an optional extra)."""


class ConnectionDetails(BaseModel):
    """Where py2neo connects: a Bolt URI (bolt://, neo4j://, with +s / +ssc), user, password, database."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    uri: str = Field(pattern=r"^(bolt|neo4j)(\+s|\+ssc)?://.+")
    username: str = Field(default="neo4j", min_length=1)
    password: SecretStr
    database: str = Field(default="neo4j", min_length=1)


def connection_details(settings: Settings) -> ConnectionDetails:
    """The server kbgraph is configured for: NEO4J_URI and its credentials, or the managed server
    (started when it is not running, as every kbgraph connection does)."""
    if settings.uses_managed_server:
        server = ManagedNeo4j.from_settings(settings, quiet=True)
        server.start()
        username, password = server.auth()
        return ConnectionDetails(uri=server.bolt_uri, username=username, password=SecretStr(password),
                                 database=settings.neo4j_database)
    assert settings.neo4j_uri is not None
    password = settings.neo4j_password.get_secret_value() if settings.neo4j_password else ""
    return ConnectionDetails(uri=settings.neo4j_uri, username=settings.neo4j_username,
                             password=SecretStr(password), database=settings.neo4j_database)


def _details(source: Settings | ConnectionDetails | Mapping[str, Any]) -> ConnectionDetails:
    if isinstance(source, ConnectionDetails):
        return source
    if isinstance(source, Settings):
        return connection_details(source)
    try:
        return ConnectionDetails.model_validate(dict(source))
    except ValidationError as error:
        raise InvalidInputError(validation_problems("py2neo connection", error),
                                headline="invalid py2neo connection details") from None


def _import_py2neo() -> Any:
    try:
        import py2neo as module
    except ImportError:
        raise Py2neoMissingError(
            f"py2neo is not installed: it is an optional extra, {INSTALL_HINT} (py2neo is end-of-life; "
            "kbgraph's own API and the neo4j driver need nothing more)") from None
    return module


def py2neo_graph(source: Settings | ConnectionDetails | Mapping[str, Any]) -> py2neo.Graph:
    """A connected ``py2neo.Graph`` on the database ``source`` names: kbgraph ``Settings`` (the
    server kbgraph uses), :class:`ConnectionDetails` or a mapping of their fields.

    Raises Py2neoMissingError without the extra, Neo4jUnavailableError when the server cannot be
    reached or refuses the credentials (py2neo checks them on connecting)."""
    details = _details(source)
    module = _import_py2neo()
    try:
        graph = module.Graph(details.uri, auth=(details.username, details.password.get_secret_value()),
                             name=details.database)
        graph.run("RETURN 1").evaluate()  # the database exists and answers
    except module.errors.ConnectionUnavailable as error:
        raise Neo4jUnavailableError(
            f"py2neo cannot use Neo4j at {details.uri} as {details.username!r} ({error}): check that the server "
            "runs and the user and password (py2neo reports a refused password as a closed connection)") from None
    except module.errors.ClientError as error:
        raise Neo4jUnavailableError(
            f"py2neo reached Neo4j at {details.uri} but database {details.database!r} is not usable: {error}") from None
    return graph
