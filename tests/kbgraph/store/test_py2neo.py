"""py2neo (end-of-life, the optional extra ``kbgraph[py2neo]``) against the test Neo4j (5.26 or 2026.09).

What works — reads through ``graph.run``/``graph.query``, the node matcher, the OGM, and the
read-only guard of ``graph.query`` — is checked against the official driver's answers. What does
not — py2neo's schema API, built on procedures and syntax Neo4j 5 removed — is pinned here too, so
the README's evidence fails loudly the day it stops being true.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import neo4j
import pytest

from kbgraph.core.errors import InvalidInputError, Neo4jUnavailableError
from kbgraph.kb import KnowledgeBase
from kbgraph.store.managed.server import free_port
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.py2neo_bridge import ConnectionDetails, Py2neoMissingError, py2neo_graph
from kbgraph.store.server_info import server_info
from kbgraph.core.settings import Settings
from tests.conftest import Neo4jTarget
from tests.kbgraph.cli.test_cli import SAMPLES

py2neo = pytest.importorskip("py2neo", reason="the kbgraph[py2neo] extra is not installed")


def _details(target: Neo4jTarget) -> ConnectionDetails:
    return ConnectionDetails.model_validate(
        {"uri": target.uri, "username": target.username, "password": target.password, "database": target.database})


@pytest.fixture
def graph(neo4j_target: Neo4jTarget) -> Iterator[Any]:
    connected = py2neo_graph(_details(neo4j_target))
    yield connected
    connected.service.connector.close()


@pytest.fixture
def samples(kb: KnowledgeBase) -> KnowledgeBase:
    """The 30 sample experiences, written by kbgraph."""
    kb.add_experiences([json.loads(line) for line in SAMPLES.read_text().splitlines() if line.strip()])
    return kb


def _driver_rows(driver: neo4j.Driver, cypher: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(cypher, params, routing_=neo4j.RoutingControl.READ)
    return [r.data() for r in records]


def test_a_read_query_through_py2neo_matches_the_driver(graph: Any, samples: KnowledgeBase, driver: neo4j.Driver) -> None:
    count = "MATCH (e:Experience {kb: $kb}) RETURN count(e) AS n"
    by_domain = ("MATCH (e:Experience {kb: $kb}) RETURN e.domain AS domain, count(e) AS n, collect(e.id) AS ids "
                 "ORDER BY domain")
    assert graph.run(count, kb=samples.namespace).evaluate() == _driver_rows(driver, count, kb=samples.namespace)[0]["n"] == 30
    through_py2neo = graph.query(by_domain, {"kb": samples.namespace}).data()  # query(): a read-only transaction
    through_driver = _driver_rows(driver, by_domain, kb=samples.namespace)
    assert [{**r, "ids": sorted(r["ids"])} for r in through_py2neo] == [{**r, "ids": sorted(r["ids"])} for r in through_driver]
    assert len(through_py2neo) == 6


def test_nodes_values_and_the_node_matcher_work(graph: Any, samples: KnowledgeBase) -> None:
    matched = graph.nodes.match("Experience", kb=samples.namespace, domain="retail")
    first = matched.first()
    assert matched.count() == samples.stats().experiences_by_domain["retail"]
    assert first.has_label("Experience") and first["kb"] == samples.namespace
    assert len(first["pg_embedding"]) == 384  # vectors stored with setNodeVectorProperty read back as lists
    assert graph.run("MATCH (e:Experience {kb: $kb}) RETURN e.created_at LIMIT 1", kb=samples.namespace).evaluate().year >= 2024


def test_the_ogm_reads_kbgraph_nodes(graph: Any, samples: KnowledgeBase) -> None:
    from py2neo.ogm import Model, Property

    class Experience(Model):  # type: ignore[misc]
        __primarykey__ = "id"
        id = Property()
        kb = Property()
        domain = Property()
        problem = Property()

    found = Experience.match(graph).where(kb=samples.namespace, domain="banking").all()
    assert len(found) == samples.stats().experiences_by_domain["banking"]
    assert {(e.id, e.problem) for e in found} == {(e.key, e.problem) for e in samples.get_many([e.id for e in found])}


def test_graph_query_is_read_only_and_neo4j_refuses_its_writes(graph: Any, kb: KnowledgeBase) -> None:
    with pytest.raises(py2neo.errors.ClientError, match="Writing in read access mode not allowed"):
        graph.query("CREATE (e:Experience {kb: $kb, id: 'via-py2neo'})", {"kb": kb.namespace})
    assert kb.count() == 0


def test_it_speaks_bolt_4_3_the_newest_protocol_it_knows(graph: Any, driver: neo4j.Driver,
                                                          neo4j_target: Neo4jTarget) -> None:
    graph.run("RETURN 1").evaluate()
    connections = [cx for pool in graph.service.connector._pools.values() for cx in pool._free_list]
    assert {cx.protocol_version for cx in connections} == {(4, 3)}
    # It reads the release the server reports (5.26.x, 2026.09.x) as the driver does.
    release = server_info(Neo4jGateway(driver, neo4j_target.database)).neo4j_version
    kernel = graph.service.kernel_version
    assert (kernel.major, kernel.minor) == tuple(int(part) for part in release.split(".")[:2])


def test_labels_and_relationship_types_work(graph: Any, samples: KnowledgeBase) -> None:
    assert {"Experience", "Step", "Domain"} <= set(graph.schema.node_labels)
    assert {"HAS_STEP", "IN_DOMAIN"} <= set(graph.schema.relationship_types)


def test_the_schema_api_does_not_work_on_neo4j_5(graph: Any) -> None:
    """Index and constraint listing call db.indexes (removed in Neo4j 5)."""
    for listing in (lambda: graph.schema.get_indexes("Experience"),
                    lambda: graph.schema.get_uniqueness_constraints("Experience")):
        with pytest.raises(py2neo.errors.ClientError, match="There is no procedure with the name `db.indexes`"):
            listing()


def test_creating_indexes_and_constraints_through_py2neo_fails_on_neo4j_5(graph: Any, driver: neo4j.Driver) -> None:
    """create_index sends `CREATE INDEX ON :Label(property)`, create_uniqueness_constraint
    `CREATE CONSTRAINT ON … ASSERT …`, drop_index `DROP INDEX ON …`: syntax Neo4j 5 removed."""
    label = "KbgraphPy2neoProbe"
    try:
        with pytest.raises(py2neo.errors.ClientError, match="Invalid create index syntax"):
            graph.schema.create_index(label, "x")
        with pytest.raises(py2neo.errors.ClientError, match="ON and ASSERT should not be used"):
            graph.schema.create_uniqueness_constraint(label, "x")
        with pytest.raises(py2neo.errors.ClientError, match="Indexes cannot be dropped by schema"):
            graph.schema.drop_index(label, "x")
    finally:  # had any of them worked, leave the shared server as it was
        for kind, listing in (("CONSTRAINT", "CONSTRAINTS"), ("INDEX", "INDEXES")):
            for row in _driver_rows(driver, f"SHOW {listing} YIELD name, labelsOrTypes WHERE $label IN labelsOrTypes "
                                            "RETURN name", label=label):
                driver.execute_query(f"DROP {kind} $name IF EXISTS", {"name": row["name"]})
    assert not _driver_rows(driver, "SHOW INDEXES YIELD labelsOrTypes WHERE $label IN labelsOrTypes RETURN 1",
                            label=label)


def test_settings_lead_to_the_same_server(neo4j_target: Neo4jTarget, samples: KnowledgeBase) -> None:
    settings = Settings(neo4j_uri=neo4j_target.uri, neo4j_username=neo4j_target.username,
                        neo4j_password=neo4j_target.password, neo4j_database=neo4j_target.database)
    graph = py2neo_graph(settings)
    try:
        assert graph.run("MATCH (e:Experience {kb: $kb}) RETURN count(e)", kb=samples.namespace).evaluate() == 30
    finally:
        graph.service.connector.close()


def test_the_knowledge_base_offers_a_py2neo_graph_on_its_database(samples: KnowledgeBase, neo4j_target: Neo4jTarget) -> None:
    # The knowledge base connects py2neo where its settings point: here, the session's server.
    settings = Settings(namespace=samples.namespace, neo4j_uri=neo4j_target.uri, neo4j_username=neo4j_target.username,
                        neo4j_password=neo4j_target.password, neo4j_database=neo4j_target.database)
    kb = KnowledgeBase(samples.driver, samples.embedder, namespace=samples.namespace, database=neo4j_target.database,
                       settings=settings, ensure_schema=False)
    graph = kb.py2neo_graph()
    try:
        assert graph.run("MATCH (e:Experience {kb: $kb}) RETURN count(e)", kb=samples.namespace).evaluate() == 30
    finally:
        graph.service.connector.close()


def test_an_unreachable_server_is_one_clear_error() -> None:
    port = free_port()
    with pytest.raises(Neo4jUnavailableError, match=f"py2neo cannot use Neo4j at bolt://127.0.0.1:{port}"):
        py2neo_graph({"uri": f"bolt://127.0.0.1:{port}", "password": "unused"})


def test_a_missing_database_is_named(neo4j_target: Neo4jTarget) -> None:
    details = _details(neo4j_target).model_copy(update={"database": "no-such-database"})
    with pytest.raises(Neo4jUnavailableError, match="database 'no-such-database' is not usable"):
        py2neo_graph(details)


def test_bad_connection_details_are_refused_before_connecting() -> None:
    with pytest.raises(InvalidInputError) as bad:
        py2neo_graph({"uri": "http://localhost:7474", "passwd": "x"})
    assert any("uri:" in p for p in bad.value.problems) and any("password: Field required" in p for p in bad.value.problems)


def test_without_the_extra_the_error_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "py2neo", None)  # what an environment without py2neo looks like
    with pytest.raises(Py2neoMissingError, match=r"pip install 'kbgraph\[py2neo\]'"):
        py2neo_graph({"uri": "bolt://127.0.0.1:7687", "password": "unused"})
