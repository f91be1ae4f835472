"""Settings come from arguments, then the environment, then kbgraph.toml, then defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kbgraph.settings import Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE", "KBGRAPH_CONFIG",
                 "KBGRAPH_NAMESPACE", "KBGRAPH_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_without_neo4j_uri_the_managed_server_is_used() -> None:
    settings = Settings()
    assert settings.uses_managed_server
    assert settings.namespace == "default" and settings.embedding_dimension == 384


def test_neo4j_uses_its_own_environment_variable_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URI", "neo4j+s://example.databases.neo4j.io")
    monkeypatch.setenv("NEO4J_USERNAME", "alice")
    monkeypatch.setenv("NEO4J_PASSWORD", "secret")
    monkeypatch.setenv("NEO4J_DATABASE", "memory")
    settings = Settings()
    assert not settings.uses_managed_server
    assert (settings.neo4j_username, settings.neo4j_database) == ("alice", "memory")
    assert settings.neo4j_password is not None and settings.neo4j_password.get_secret_value() == "secret"
    assert "secret" not in repr(settings)


def test_a_config_file_is_read_and_the_environment_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "kbgraph.toml").write_text('namespace = "from-file"\nwrite_batch_size = 64\n')
    assert Settings().namespace == "from-file" and Settings().write_batch_size == 64
    monkeypatch.setenv("KBGRAPH_NAMESPACE", "from-env")
    assert Settings().namespace == "from-env"
    assert Settings(namespace="from-code").namespace == "from-code"


def test_kbgraph_config_points_at_any_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.toml"
    path.write_text('embedder = "openai"\nembedding_dimension = 1536\n')
    monkeypatch.setenv("KBGRAPH_CONFIG", str(path))
    settings = Settings()
    assert (settings.embedder, settings.embedding_dimension) == ("openai", 1536)


@pytest.mark.parametrize(("field", "value"), [("namespace", "has space"), ("managed_heap", "lots"),
                                              ("embedder", "word2vec"), ("write_batch_size", 0)])
def test_invalid_settings_are_named(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        Settings(**{field: value})
