"""An experience's problem+goal and shape vectors are also stored as the bytes of their float32
values (kbgraph.store.vector_cache.VECTOR_BYTES), which the bulk reads take: every write of such a
vector writes its bytes, the bytes read back as exactly the vector, and an experience stored without
them is read from its list. Real Neo4j, real MiniLM."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.kb import KnowledgeBase
from kbgraph.store.connection import open_driver
from kbgraph.store.experiences import embedding_row
from kbgraph.store.queries import query, query_names
from kbgraph.store.vector_bytes_backfill import fill_vector_bytes
from kbgraph.store.vector_cache import VECTOR_BYTES, PgVectorCache, stored_unit_vector, unit_vector, vector_bytes

from kbgraph.search.student.vector_model import ExperienceVectors, experience_vectors
from kbgraph.search.student.versioned import KeptByVersion

from tests.conftest import Neo4jTarget
from tests.search.test_vector_model import experience

_SETS_VECTOR = re.compile(r"setNodeVectorProperty\(\s*\w+\s*,\s*'(\w+)'")


def stored(kb: KnowledgeBase) -> list[dict[str, object]]:
    return [dict(r) for r in kb.driver.execute_query(
        "MATCH (e:Experience {kb: $kb}) RETURN e.id AS id, e.pg_embedding AS pg_embedding, "
        "e.structure_embedding AS structure_embedding, e.pg_embedding_bytes AS pg_embedding_bytes, "
        "e.structure_embedding_bytes AS structure_embedding_bytes", kb=kb.namespace, database_=kb.gateway.database).records]


def read_afresh(kb: KnowledgeBase) -> ExperienceVectors:
    """The search's model of the namespace's vectors, every vector read (nothing kept before)."""
    return experience_vectors(kb.gateway, kb.namespace, KeptByVersion(4))


def maintenance_vectors(kb: KnowledgeBase) -> dict[str, np.ndarray]:
    """The problem+goal vectors maintenance compares (``maintenance_candidates``), by id."""
    return {str(row["id"]): ExperienceFacts.from_row(row).pg
            for row in kb.gateway.read("maintenance_candidates", kb=kb.namespace)}


def assert_bytes_are_the_vectors(rows: list[dict[str, object]]) -> None:
    assert rows
    for row in rows:
        for vector, packed in VECTOR_BYTES.items():
            values = row[vector]
            if values is None:
                assert row[packed] is None, (row["id"], packed)
                continue
            assert isinstance(row[packed], bytes), (row["id"], packed)
            assert np.frombuffer(row[packed], dtype="<f4").tolist() == values, (row["id"], packed)


def test_the_bytes_are_the_float32_values_and_read_as_the_same_unit_vector() -> None:
    values = [0.1, -2.5, 3.0e-8, 1.0 / 3.0]
    packed = vector_bytes(values)
    assert packed is not None and len(packed) == 16 and vector_bytes(None) is None
    assert np.array_equal(stored_unit_vector(packed, None), unit_vector(values))  # type: ignore[arg-type]
    assert np.array_equal(stored_unit_vector(None, values), unit_vector(values))  # type: ignore[arg-type]
    assert stored_unit_vector(None, None) is None


def test_every_query_that_sets_a_vector_with_bytes_sets_its_bytes_too() -> None:
    setters = {name: text for name in query_names() if (text := query(name)) and "setNodeVectorProperty" in text}
    checked = 0
    for name, text in setters.items():
        for vector in set(_SETS_VECTOR.findall(text)) & set(VECTOR_BYTES):
            assert re.search(rf"\.{VECTOR_BYTES[vector]}\s*=", text), f"{name} sets {vector} without its bytes"
            checked += 1
    assert checked >= 4, "experience_upsert and abstract_experiences_rewrite set both vectors"
    # The one query that sets vectors by a key it is given (an import) gets the bytes from the importer.
    generic = [name for name, text in setters.items() if "vector.key" in text]
    assert generic == ["import_node_values"]
    importer = (Path(__file__).parents[3] / "kbgraph/transfer/_importer.py").read_text()
    assert "vector_bytes(item.vectors[vector])" in importer


def test_an_added_experience_and_a_rewritten_one_store_bytes_equal_to_their_vectors(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(6)])
    assert_bytes_are_the_vectors(stored(kb))
    # What a workflow's rewrite sets (abstract_experiences_rewrite): new vectors and their bytes.
    target = kb.get(stored(kb)[0]["id"])  # type: ignore[arg-type]
    assert target is not None and target.pg_embedding is not None and target.structure_embedding is not None
    target.pg_embedding = list(reversed(target.pg_embedding))
    target.structure_embedding = [-v for v in target.structure_embedding]
    kb.gateway.write("abstract_experiences_rewrite", kb=kb.namespace, rows=[embedding_row(target)], keep=[])
    rows = stored(kb)
    assert_bytes_are_the_vectors(rows)
    again = next(r for r in rows if r["id"] == target.key)
    assert np.frombuffer(again["pg_embedding_bytes"], dtype="<f4").tolist() == np.asarray(  # type: ignore[arg-type]
        target.pg_embedding, dtype=np.float32).tolist()


def test_experiences_stored_without_bytes_are_read_from_their_lists_as_the_same_vectors(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(12)])
    ids = [str(r["id"]) for r in stored(kb)]
    with_bytes = read_afresh(kb)
    by_bytes = PgVectorCache().read_through(
        ids, lambda wanted: kb.gateway.read("experience_pg_vectors", kb=kb.namespace, ids=wanted))
    candidates_by_bytes = maintenance_vectors(kb)
    # As a namespace written before the bytes were kept: half its experiences without them.
    kb.driver.execute_query("MATCH (e:Experience {kb: $kb}) WHERE e.id IN $ids "
                            "REMOVE e.pg_embedding_bytes, e.structure_embedding_bytes",
                            kb=kb.namespace, ids=ids[::2], database_=kb.gateway.database)
    assert sum(r["pg_embedding_bytes"] is None for r in stored(kb)) == len(ids[::2])
    without = read_afresh(kb)
    by_lists = PgVectorCache().read_through(
        ids, lambda wanted: kb.gateway.read("experience_pg_vectors", kb=kb.namespace, ids=wanted))
    assert by_lists.keys() == by_bytes.keys() == set(ids)
    assert all(np.array_equal(by_lists[i], by_bytes[i]) for i in ids)
    by_lists_candidates = maintenance_vectors(kb)
    assert by_lists_candidates.keys() == candidates_by_bytes.keys() == set(ids)
    assert all(np.array_equal(by_lists_candidates[i], candidates_by_bytes[i]) for i in ids)
    assert without.filters.ids == with_bytes.filters.ids
    for kind in ("pg", "structure"):
        assert np.array_equal(without.vectors[kind], with_bytes.vectors[kind])  # type: ignore[index]
        assert np.array_equal(without.row_of[kind], with_bytes.row_of[kind])  # type: ignore[index]


def test_filling_gives_experiences_written_without_bytes_theirs_and_leaves_a_changed_one_alone(
        kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(7)])
    ids = sorted(str(r["id"]) for r in stored(kb))
    kb.driver.execute_query("MATCH (e:Experience {kb: $kb}) REMOVE e.pg_embedding_bytes, e.structure_embedding_bytes",
                            kb=kb.namespace, database_=kb.gateway.database)
    assert fill_vector_bytes(kb.gateway, kb.namespace, page=3) == len(ids)  # three pages and a part
    assert_bytes_are_the_vectors(stored(kb))
    assert fill_vector_bytes(kb.gateway, kb.namespace) == 0, "nothing left to fill"
    # An experience whose vectors changed between the read and the write keeps no bytes of the old ones.
    row = kb.gateway.read("experience_vector_bytes_missing", kb=kb.namespace, limit=10)
    assert row == []
    kb.driver.execute_query("MATCH (e:Experience {kb: $kb, id: $id}) REMOVE e.pg_embedding_bytes",
                            kb=kb.namespace, id=ids[0], database_=kb.gateway.database)
    [read] = kb.gateway.read("experience_vector_bytes_missing", kb=kb.namespace, limit=10)
    old = {**read, "pg_embedding": [-v for v in read["pg_embedding"]]}  # as if read before a rewrite
    filled = kb.gateway.write("experience_vector_bytes_fill", kb=kb.namespace, rows=[
        {**old, "pg_embedding_bytes": vector_bytes(old["pg_embedding"]),
         "structure_embedding_bytes": vector_bytes(old["structure_embedding"])}])
    assert filled == [{"filled": 0}]
    assert fill_vector_bytes(kb.gateway, kb.namespace) == 1
    assert_bytes_are_the_vectors(stored(kb))


def test_opening_a_namespace_fills_its_bytes(kb: KnowledgeBase, neo4j_target: Neo4jTarget) -> None:
    kb.add_experiences([experience(n) for n in range(3)])
    kb.driver.execute_query("MATCH (e:Experience {kb: $kb}) REMOVE e.pg_embedding_bytes, e.structure_embedding_bytes",
                            kb=kb.namespace, database_=kb.gateway.database)
    # Another process's open: a driver of its own (a namespace is looked at once per driver).
    driver = open_driver(neo4j_target.uri, (neo4j_target.username, neo4j_target.password), neo4j_target.database)
    try:
        assert KnowledgeBase(driver, kb.embedder, namespace=kb.namespace, database=kb.gateway.database).count() == 3
    finally:
        driver.close()
    assert_bytes_are_the_vectors(stored(kb))
