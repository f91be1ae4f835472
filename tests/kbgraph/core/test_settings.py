"""Settings come from arguments, then the environment, then kbgraph.toml, then defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kbgraph.core.settings import Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE", "KBGRAPH_CONFIG",
                 "KBGRAPH_NAMESPACE", "KBGRAPH_EMBEDDER", "KBGRAPH_NEO4J_VERSION", "KBGRAPH_MANAGED_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_without_neo4j_uri_the_managed_server_is_used() -> None:
    settings = Settings()
    assert settings.uses_managed_server
    assert settings.namespace == "default" and settings.embedding_dimension == 384


def test_the_managed_neo4j_line_is_chosen_by_kbgraph_neo4j_version_each_with_its_own_instance(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert Settings().neo4j_version == "5.26"
    assert Settings(cache_dir=tmp_path).managed_instance_dir == tmp_path / "neo4j" / "instance"
    # Neo4j's own images set NEO4J_VERSION to their release: it must not choose kbgraph's line.
    monkeypatch.setenv("NEO4J_VERSION", "2026.09")
    assert Settings().neo4j_version == "5.26"
    monkeypatch.setenv("KBGRAPH_NEO4J_VERSION", "2026.09")
    settings = Settings(cache_dir=tmp_path)
    # A store that 2026 has opened cannot be opened by 5.26 again: the lines never share one.
    assert settings.neo4j_version == "2026.09"
    assert settings.managed_instance_dir == tmp_path / "neo4j" / "instance-2026.09"
    assert Settings(managed_home=tmp_path / "mine").managed_instance_dir == tmp_path / "mine"
    monkeypatch.setenv("KBGRAPH_NEO4J_VERSION", "4.4")
    with pytest.raises(ValidationError, match="neo4j_version"):
        Settings()


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


@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_a_namespace_set_empty_is_an_error_naming_where_it_was_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                   value: str) -> None:
    # Set but empty never means "default": a delete would then empty a namespace nobody named.
    monkeypatch.setenv("KBGRAPH_NAMESPACE", value)
    with pytest.raises(ValidationError, match=r"namespace\n.*is not a namespace.*\(from KBGRAPH_NAMESPACE\)"):
        Settings()
    monkeypatch.delenv("KBGRAPH_NAMESPACE")
    (tmp_path / "kbgraph.toml").write_text(f'namespace = "{value}"\n')
    with pytest.raises(ValidationError, match="is not a namespace") as refused:
        Settings()
    assert "KBGRAPH_NAMESPACE" not in str(refused.value)


@pytest.mark.parametrize("field", ["connect_timeout_s", "query_timeout_s", "bulk_query_timeout_s", "retry_time_s",
                                   "openai_timeout_s", "llm_timeout_s", "managed_start_timeout_s"])
@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "-1"])
def test_timeouts_are_finite_and_bounded(monkeypatch: pytest.MonkeyPatch, field: str, value: str) -> None:
    # KBGRAPH_QUERY_TIMEOUT_S=inf once reached the transaction watchdog and ended in an internal error.
    monkeypatch.setenv(f"KBGRAPH_{field.upper()}", value)
    with pytest.raises(ValidationError, match=field):
        Settings()


@pytest.mark.parametrize(("field", "value"), [("prune_min_retrieved", 10**20), ("maintenance_first_checkpoint", -1),
                                              ("utility_half_life_days", float("inf")), ("quality_rate", float("nan"))])
def test_learning_numbers_stay_in_range(monkeypatch: pytest.MonkeyPatch, field: str, value: object) -> None:
    monkeypatch.setenv(f"KBGRAPH_LEARNING__{field.upper()}", str(value))
    with pytest.raises(ValidationError, match=field):
        Settings()
