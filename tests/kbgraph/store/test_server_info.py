"""Which Neo4j kbgraph is connected to, asked of the session's real server (either line)."""

from __future__ import annotations

import json
from pathlib import Path

import neo4j
import pytest

from kbgraph.core.settings import Settings
from kbgraph.embedders import CachedEmbedder
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.managed.java import java_feature_version
from kbgraph.store.managed.lines import LINES
from kbgraph.store.server_info import server_info, server_status
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget


def test_the_server_reports_its_release_edition_java_and_cypher_versions(
    driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    info = server_info(Neo4jGateway(driver, neo4j_target.database))
    line = Settings().neo4j_version
    if neo4j_target.how == "managed":  # the tests started it: the configured line's pinned release
        assert info.neo4j_version == LINES[line].version
    elif neo4j_target.how == "testcontainers":
        assert info.neo4j_version.startswith(line + ".")
    assert info.edition in ("community", "enterprise")
    java = java_feature_version(f'version "{info.java}"')
    assert java is not None and java >= 17
    assert "5" in info.cypher_versions  # kbgraph's queries are Cypher 5
    if info.neo4j_version.startswith("2026."):
        assert java >= 21 and "25" in info.cypher_versions


def test_server_status_and_stats_name_the_server_kbgraph_uses(neo4j_target: Neo4jTarget, namespace: str,
                                                               driver: neo4j.Driver, embedder: CachedEmbedder) -> None:
    expected = server_info(Neo4jGateway(driver, neo4j_target.database))

    def kbgraph(*args: str) -> dict[str, object]:
        done = run_kbgraph(neo4j_target.env(namespace), *args, "--json", embedder=embedder)  # in this process
        assert done.returncode == 0, done.stderr
        answer: dict[str, object] = json.loads(done.stdout)
        return answer

    status = kbgraph("server", "status")
    assert status["uses"] == "NEO4J_URI" and status["neo4j_uri"] == neo4j_target.uri
    assert (status["neo4j_version"], status["java"], status["edition"]) == (
        expected.neo4j_version, expected.java, expected.edition)
    assert kbgraph("stats")["server"] == expected.as_dict()


def test_a_stopped_managed_server_reports_the_release_and_java_it_would_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("NEO4J_URI", raising=False)
    for line in LINES.values():
        status = server_status(Settings(cache_dir=tmp_path, neo4j_version=line.name))
        assert not status["running"] and status["uses"] == "managed"
        assert status["home"] == str(tmp_path / "neo4j" / ("instance" if line.name == "5.26" else "instance-2026.09"))
        assert status["line"] == line.name and status["neo4j_version"] == line.version
        if status["java"] is not None:  # None only where no Java that can run this line is installed
            assert int(str(status["java"])) >= line.min_java
            assert status["vector_api"] == (int(str(status["java"])) in line.vector_api_java)
