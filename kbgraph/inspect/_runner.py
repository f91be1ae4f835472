"""Running inspection queries read-only, and their answers as plain JSON-ready values.

A query that would write is refused twice: first by its plan (``EXPLAIN`` classifies every
statement as read, write, read-write or schema), then by Neo4j itself, which rejects writes in a
READ transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import neo4j
from neo4j.graph import Entity, Node, Relationship
from neo4j.graph import Path as GraphPath
from neo4j.spatial import Point
from neo4j.time import Date, DateTime, Duration, Time

from kbgraph.inspect._query import InspectionError, InspectionQuery, InspectionResult, WriteRefusedError
from kbgraph.store.retry import guarded

# Node properties the runner leaves out of its answers: 384 (or more) numbers each, noise to a reader.
VECTOR_PROPERTY_SUFFIX = "embedding"


def _properties(entity: Entity) -> dict[str, Any]:
    return {key: plain(value) for key, value in sorted(entity.items())
            if not key.endswith(VECTOR_PROPERTY_SUFFIX)}


def plain(value: Any) -> Any:
    """A Neo4j value as JSON-ready Python: nodes ``{"_kind": "node", "labels", "element_id",
    "properties"}`` (vectors left out), relationships ``{"_kind": "relationship", "type", "start",
    "end", …}`` (start and end are element ids), paths ``{"_kind": "path", "nodes",
    "relationships"}``, temporal values as ISO 8601 text."""
    if isinstance(value, Node):
        return {"_kind": "node", "labels": sorted(value.labels), "element_id": value.element_id,
                "properties": _properties(value)}
    if isinstance(value, Relationship):
        return {"_kind": "relationship", "type": value.type, "element_id": value.element_id,
                "start": value.start_node.element_id if value.start_node is not None else None,
                "end": value.end_node.element_id if value.end_node is not None else None,
                "properties": _properties(value)}
    if isinstance(value, GraphPath):
        return {"_kind": "path", "nodes": [plain(n) for n in value.nodes],
                "relationships": [plain(r) for r in value.relationships]}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, Date | Time | DateTime | Duration):
        return value.iso_format()
    if isinstance(value, Point):
        return {"srid": value.srid, "coordinates": list(value)}
    return value


READ_QUERY_TYPE = "r"
_QUERY_TYPES = {"r": "read", "rw": "read-write", "w": "write", "s": "schema"}
_ACCESS_MODE_ERROR = "Neo.ClientError.Statement.AccessMode"


class InspectionRunner:
    """Runs inspection queries read-only against one database."""

    def __init__(self, driver: neo4j.Driver, database: str = "neo4j"):
        self.driver = driver
        self.database = database

    def query_type(self, query: InspectionQuery, parameters: Mapping[str, Any]) -> str:
        """Neo4j's classification of the statement from its plan (``EXPLAIN``, nothing runs):
        r (read), rw, w (writes) or s (schema). Also checks syntax and parameters."""
        result = self._read(query, f"EXPLAIN {query.cypher}", parameters)
        return result.summary.query_type or ""

    def run(self, query: InspectionQuery, given: Mapping[str, Any] | None = None,
            namespace: str | None = None) -> InspectionResult:
        """Binds the parameters (:meth:`InspectionQuery.bind`), refuses a statement that would write,
        and runs it in READ access mode."""
        parameters = query.bind(given or {}, namespace)
        kind = self.query_type(query, parameters)
        if kind != READ_QUERY_TYPE:
            raise WriteRefusedError(
                f"inspection query {query.name!r} is a {_QUERY_TYPES.get(kind, kind)} statement: inspection "
                "only reads, so it was not run and nothing was written")
        return self.execute_read(query, parameters)

    def execute_read(self, query: InspectionQuery, parameters: Mapping[str, Any]) -> InspectionResult:
        """Runs the statement in a READ transaction, without :meth:`run`'s plan check: Neo4j itself
        refuses any write there (raised as WriteRefusedError; the transaction is rolled back)."""
        result = self._read(query, query.cypher, parameters)
        return InspectionResult(
            query=query.name, parameters=dict(parameters), columns=list(result.keys),
            rows=[{key: plain(record[key]) for key in result.keys} for record in result.records],
        )

    def _read(self, query: InspectionQuery, cypher: str, parameters: Mapping[str, Any]) -> neo4j.EagerResult:
        """The statement's answer; a Neo4j lost on the way is kbgraph's Neo4jUnavailableError, in one
        line, as from every other call (:func:`kbgraph.store.retry.guarded`)."""
        try:
            result: neo4j.EagerResult = guarded(f"inspection query {query.name}", lambda: self.driver.execute_query(
                cypher, dict(parameters), database_=self.database, routing_=neo4j.RoutingControl.READ))
        except neo4j.exceptions.ClientError as error:
            if error.code == _ACCESS_MODE_ERROR:
                raise WriteRefusedError(
                    f"inspection query {query.name!r} tried to write and Neo4j refused it (READ access mode): "
                    "inspection only reads, nothing was written") from None
            raise InspectionError(f"Neo4j refused inspection query {query.name!r} ({query.source}): "
                                  f"{error.code}: {error.message}") from None
        return result
