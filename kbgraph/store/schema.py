"""Applies the schema of ``cypher/schema/*.cypher`` and reports index states.

Every statement is ``IF NOT EXISTS``, and the race between two processes creating the same
constraint or index at once (the loser gets an "already exists" error) counts as success, so
applying the schema is idempotent and safe to run concurrently.

The schema differs by the server's line, read from the server (a user's own server at NEO4J_URI
may be of either): on Neo4j 2026, ``NAME_2026.cypher`` replaces ``NAME.cypher`` — the vector
indexes then declare the namespace as a filter property (``WITH [n.kb]``), which 5.26 cannot
parse. A 2026 index made before without it is dropped and made again with it.
:func:`filtering_indexes` tells the search which indexes filter by namespace (the candidate seam,
:mod:`kbgraph.search.candidates`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from threading import Lock
from weakref import WeakKeyDictionary

import neo4j

from kbgraph.store.queries import statements
from kbgraph.core.errors import SchemaError
from kbgraph.store.gateway import Neo4jGateway

_ALREADY_THERE = {
    "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
    "Neo.ClientError.Schema.IndexAlreadyExists",
    "Neo.ClientError.Schema.ConstraintAlreadyExists",
    "Neo.ClientError.Schema.IndexWithNameAlreadyExists",
    "Neo.ClientError.Schema.ConstraintWithNameAlreadyExists",
}

VECTOR_INDEXES = (
    "experience_pg_embedding",
    "experience_structure_embedding",
    "step_text_embedding",
    "failure_mode_embedding",
    "meta_concept_embedding",
    "store_vector_embedding",
)


@dataclass(frozen=True)
class IndexStatus:
    name: str
    type: str
    entity: str
    labels_or_types: list[str]
    properties: list[str]
    state: str
    population_percent: float

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name, "type": self.type, "entity": self.entity,
            "labels_or_types": self.labels_or_types, "properties": self.properties,
            "state": self.state, "population_percent": self.population_percent,
        }


#: A schema file whose name ends so replaces the file of the same name without it on Neo4j 2026.
LINE_2026 = "_2026"
#: Neo4j's release numbers are years from 2025 on; vector indexes filter (``SEARCH … WHERE``) since 2026.01.
_FILTERING_SINCE = 2026
#: ``ON n.vector WITH [n.kb, n.status]`` in a CREATE VECTOR INDEX: the properties the index covers.
_COVERS = re.compile(r"\bON\s+\w+\.(\w+)\s+WITH\s+\[([^\]]*)\]", re.IGNORECASE)


def schema_statements(filters_in_index: bool) -> list[tuple[str, str]]:
    """The schema's (file name, statement)s for a server whose vector indexes can filter
    (``filters_in_index``, Neo4j 2026) or not (5.26)."""
    out = statements("schema")
    names = {name for name, _ in out}
    if filters_in_index:
        return [(name, s) for name, s in out if name + LINE_2026 not in names]
    return [(name, s) for name, s in out if not name.endswith(LINE_2026)]


def index_filters_by_namespace(gateway: Neo4jGateway) -> bool:
    """Whether the server's vector indexes can filter inside (Neo4j 2026.01 and later): its release,
    as the server reports it."""
    kernel = next(row for row in gateway.read("server_components") if row["name"] == "Neo4j Kernel")
    return int(str(kernel["versions"][0]).split(".")[0]) >= _FILTERING_SINCE


def schema_index_names() -> list[str]:
    """Names of the indexes and constraints kbgraph's schema files create (on either line)."""
    names: list[str] = []
    for _, statement in statements("schema"):
        name = _created_name(statement)
        if name is not None and name not in names:
            names.append(name)
    return names


def _created_name(statement: str) -> str | None:
    """The name a ``CREATE [VECTOR|FULLTEXT] (INDEX|CONSTRAINT) name IF NOT EXISTS …`` gives."""
    words = statement.split()
    for i, word in enumerate(words[:-1]):
        if word.upper() in ("INDEX", "CONSTRAINT"):
            return words[i + 1]
    return None


def apply_schema(gateway: Neo4jGateway, dimension: int, timeout_s: float = 300.0) -> None:
    """Creates what is missing (as the server's line wants it), then waits until every index is ONLINE."""
    filtering = index_filters_by_namespace(gateway)
    planned = schema_statements(filtering)
    if filtering:
        _drop_outdated_vector_indexes(gateway, planned)
    for file_name, statement in planned:
        _run_schema_statement(gateway, file_name, statement, dimension)
    with _FILTERING_LOCK:
        _FILTERING.pop(gateway, None)
    try:
        gateway.write("schema_await_indexes", timeout_s=int(timeout_s))
    except neo4j.exceptions.Neo4jError as exc:
        raise SchemaError(f"indexes did not come ONLINE within {timeout_s:.0f} s: {exc.message}") from None
    check_vector_dimensions(gateway, dimension)


def _run_schema_statement(gateway: Neo4jGateway, file_name: str, statement: str, dimension: int) -> None:
    params = {"dimension": dimension} if "$dimension" in statement else {}
    for attempt in range(8):
        try:
            gateway.run_statement(statement, params)
            return
        except neo4j.exceptions.ClientError as exc:
            if exc.code in _ALREADY_THERE:
                return
            raise SchemaError(f"cypher/schema/{file_name}.cypher: {exc.message}") from None
        except neo4j.exceptions.TransientError:
            gateway.pause(0.2 * (attempt + 1))
    raise SchemaError(f"cypher/schema/{file_name}.cypher: kept failing with transient errors")


def _drop_outdated_vector_indexes(gateway: Neo4jGateway, planned: list[tuple[str, str]]) -> None:
    """Drops each vector index that covers other properties than its statement declares (one made
    before its filter properties were): the statement then makes it again. Rebuilding an index
    takes a while on a large store, once."""
    wanted: dict[str, list[str]] = {}
    for _, statement in planned:
        covers, name = _COVERS.search(statement), _created_name(statement)
        if covers is not None and name is not None and "VECTOR" in statement.upper().split():
            wanted[name] = [covers.group(1)] + [p.strip().split(".")[-1] for p in covers.group(2).split(",")]
    for row in gateway.read("schema_vector_filters", names=list(wanted)):
        if list(row["properties"]) != wanted[row["name"]]:
            gateway.auto_commit("schema_drop_index", index=row["name"])


_FILTERING: WeakKeyDictionary[Neo4jGateway, frozenset[str]] = WeakKeyDictionary()
_FILTERING_LOCK = Lock()


def filtering_indexes(gateway: Neo4jGateway) -> frozenset[str]:
    """The vector indexes that declare the namespace (``kb``) as a filter property, so that a query
    can ask them for one namespace's nearest nodes (Neo4j 2026; none on 5.26, nor on a 2026 store
    whose schema was made before). Read from the server once per gateway (again after
    :func:`apply_schema`)."""
    with _FILTERING_LOCK:
        known = _FILTERING.get(gateway)
    if known is not None:
        return known
    # Read outside the lock: never hold a lock across a gateway call (kbgraph.store.aio).
    rows = gateway.read("schema_vector_filters", names=list(VECTOR_INDEXES))
    found = frozenset(str(row["name"]) for row in rows if "kb" in (row["properties"] or [])[1:])
    with _FILTERING_LOCK:
        _FILTERING[gateway] = found
    return found


def check_vector_dimensions(gateway: Neo4jGateway, dimension: int) -> None:
    for row in gateway.read("schema_vector_dimensions", names=list(VECTOR_INDEXES)):
        existing = row["dimensions"]
        if existing != dimension:
            raise SchemaError(
                f"vector index {row['name']} has {existing} dimensions but the embedder gives {dimension}: "
                "a database holds one embedding size. Use another database (NEO4J_DATABASE) or managed "
                "instance (KBGRAPH_MANAGED_HOME), or the embedder this one was built with."
            )


def index_status(gateway: Neo4jGateway) -> list[IndexStatus]:
    return [
        IndexStatus(
            name=row["name"], type=row["type"], entity=row["entityType"],
            labels_or_types=list(row["labelsOrTypes"] or []), properties=list(row["properties"] or []),
            state=row["state"], population_percent=float(row["populationPercent"]),
        )
        for row in gateway.read("schema_index_status")
    ]
