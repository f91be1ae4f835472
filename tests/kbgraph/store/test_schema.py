"""The schema applies idempotently, also from two processes at once, and every index ends ONLINE."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import neo4j
import pytest

from kbgraph.core.errors import SchemaError
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.schema import (
    VECTOR_INDEXES, apply_schema, check_vector_dimensions, filtering_indexes, index_filters_by_namespace, index_status,
    schema_index_names, schema_statements,
)
from tests.conftest import Neo4jTarget

APPLY_IN_A_PROCESS = """
import sys
from kbgraph.store.connection import open_driver
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.schema import apply_schema
uri, user, password, database = sys.argv[1:5]
with open_driver(uri, (user, password), database) as driver:
    apply_schema(Neo4jGateway(driver, database), 384)
print("applied")
"""


def test_schema_files_name_the_design_indexes() -> None:
    names = set(schema_index_names())
    assert set(VECTOR_INDEXES) <= names
    assert {"experience_text", "step_text", "meta_concept_document", "experience_key", "step_key"} <= names


def test_applying_twice_changes_nothing(driver: neo4j.Driver, neo4j_target: Neo4jTarget) -> None:
    gateway = Neo4jGateway(driver, neo4j_target.database)
    apply_schema(gateway, 384)
    before = [(s.name, s.type, s.properties) for s in index_status(gateway)]
    apply_schema(gateway, 384)
    assert [(s.name, s.type, s.properties) for s in index_status(gateway)] == before


def test_two_processes_applying_at_once_both_succeed_and_all_indexes_end_online(
    driver: neo4j.Driver, neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    gateway = Neo4jGateway(driver, neo4j_target.database)
    # Start from nothing so the two really race to create the same constraints and indexes.
    ours = set(schema_index_names())
    for row in gateway.read("schema_constraints"):
        if row["name"] in ours:
            driver.execute_query(f"DROP CONSTRAINT {row['name']} IF EXISTS", database_=neo4j_target.database)
    for status in index_status(gateway):
        if status.name in ours:
            driver.execute_query(f"DROP INDEX {status.name} IF EXISTS", database_=neo4j_target.database)
    args = [neo4j_target.uri, neo4j_target.username, neo4j_target.password, neo4j_target.database]
    procs = [subprocess.Popen([sys.executable, "-c", APPLY_IN_A_PROCESS, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "applied"
    states = {s.name: s.state for s in index_status(gateway)}
    assert ours <= set(states)
    assert all(states[name] == "ONLINE" for name in ours), states


def test_an_embedder_of_another_size_is_refused_with_a_clear_message(
    driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    gateway = Neo4jGateway(driver, neo4j_target.database)
    apply_schema(gateway, 384)
    with pytest.raises(SchemaError, match="384 dimensions but the embedder gives 1536"):
        check_vector_dimensions(gateway, 1536)


def test_each_line_gets_its_vector_indexes_and_an_outdated_2026_one_is_made_again(
    driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    gateway = Neo4jGateway(driver, neo4j_target.database)
    apply_schema(gateway, 384)
    covers = {s.name: s.properties for s in index_status(gateway) if s.name in VECTOR_INDEXES}
    if not index_filters_by_namespace(gateway):
        # 5.26: the vector alone, as ever; nothing filters inside.
        assert all(len(properties) == 1 for properties in covers.values()), covers
        assert filtering_indexes(gateway) == frozenset()
        return
    assert covers["experience_pg_embedding"] == ["pg_embedding", "kb", "status"]
    assert covers["step_text_embedding"] == ["embedding", "kb"]
    assert filtering_indexes(gateway) == frozenset(VECTOR_INDEXES)
    # A 2026 store whose step index was made before it declared the namespace (5.26's statement)...
    driver.execute_query("DROP INDEX step_text_embedding", database_=neo4j_target.database)
    old = next(s for name, s in schema_statements(filters_in_index=False) if "INDEX step_text_embedding " in s)
    driver.execute_query(old, {"dimension": 384}, database_=neo4j_target.database)
    assert [s.properties for s in index_status(gateway) if s.name == "step_text_embedding"] == [["embedding"]]
    # ...gets it back declaring the namespace when the schema is applied, and the search asks it so.
    apply_schema(gateway, 384)
    assert [s.properties for s in index_status(gateway) if s.name == "step_text_embedding"] == [["embedding", "kb"]]
    assert "step_text_embedding" in filtering_indexes(gateway)
