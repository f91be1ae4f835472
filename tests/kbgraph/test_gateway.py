"""The gateway's rows are what ``record.data()`` gives, for plain values and for graph values alike
(real Neo4j: the driver's own records)."""

from __future__ import annotations

import neo4j
import pytest

from kbgraph.gateway import row_of

QUERIES = [
    "RETURN [x IN range(1, 384) | x / 384.0] AS vector, 'a' AS text, null AS nothing, 3 AS n, true AS flag",
    "RETURN {a: [1, 2.5, 'x'], b: {c: [[1.0, 2.0], []]}} AS nested, [] AS empty",
    "CREATE (a:GatewayProbe {name: 'a', v: [0.5, 0.25]})-[r:PROBES {w: 1}]->(b:GatewayProbe {name: 'b'}) "
    "RETURN a, r, b, [a, b] AS both, {node: a} AS holder",
    "CREATE p = (:GatewayProbe {name: 'a'})-[:PROBES]->(:GatewayProbe {name: 'b'}) RETURN p, [1.5, p] AS mixed",
]


@pytest.fixture
def session(driver: neo4j.Driver, neo4j_target) -> neo4j.Session:  # type: ignore[no-untyped-def]
    with driver.session(database=neo4j_target.database) as opened:
        yield opened
        opened.run("MATCH (n:GatewayProbe) DETACH DELETE n").consume()


@pytest.mark.parametrize("cypher", QUERIES)
def test_a_row_is_what_record_data_gives(session: neo4j.Session, cypher: str) -> None:
    records = list(session.run(cypher))
    assert len(records) == 1
    assert row_of(records[0]) == records[0].data()
