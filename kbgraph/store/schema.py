"""Applies the schema of ``cypher/schema/*.cypher`` and reports index states.

Every statement is ``IF NOT EXISTS``, and the race between two processes creating the same
constraint or index at once (the loser gets an "already exists" error) counts as success, so
applying the schema is idempotent and safe to run concurrently.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "step_embedding",
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


def schema_index_names() -> list[str]:
    """Names of the indexes and constraints kbgraph's schema files create."""
    names = []
    for _, statement in statements("schema"):
        words = statement.split()
        # CREATE [VECTOR|FULLTEXT] (INDEX|CONSTRAINT) name IF NOT EXISTS …
        for i, word in enumerate(words):
            if word.upper() in ("INDEX", "CONSTRAINT"):
                names.append(words[i + 1])
                break
    return names


def apply_schema(gateway: Neo4jGateway, dimension: int, timeout_s: float = 300.0) -> None:
    """Creates what is missing, then waits until every index is ONLINE."""
    for file_name, statement in statements("schema"):
        _run_schema_statement(gateway, file_name, statement, dimension)
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
