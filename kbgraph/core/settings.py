"""Settings: keyword arguments, then the environment, then a TOML config file, then defaults.

The config file is ``$KBGRAPH_CONFIG`` when set, otherwise ``./kbgraph.toml`` when present. Keys are
the field names below (``neo4j_uri = "bolt://…"``). Environment variables are ``KBGRAPH_<FIELD>``,
except the connection, which uses Neo4j's own names: ``NEO4J_URI``, ``NEO4J_USERNAME``,
``NEO4J_PASSWORD``, ``NEO4J_DATABASE``. When ``NEO4J_URI`` is unset, kbgraph runs its own
managed Neo4j (see :mod:`kbgraph.store.managed`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, get_args

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.value_bounds import INT64_MAX
from kbgraph.core.weights import SearchWeights
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kbgraph"


def config_file_path() -> Path | None:
    explicit = os.environ.get("KBGRAPH_CONFIG")
    if explicit:
        return Path(explicit)
    local = Path("kbgraph.toml")
    return local if local.is_file() else None


#: The longest any timeout may be: a week is past any real call, and beyond ~1e9 s the platform's
#: timers overflow (KBGRAPH_QUERY_TIMEOUT_S=inf or 1e300 once ended in an OverflowError).
MAX_TIMEOUT_S = 7 * 24 * 3600.0


#: The Neo4j release lines kbgraph's managed server can run (:mod:`kbgraph.store.managed.lines`).
Neo4jLineName = Literal["5.26", "2026.09"]
NEO4J_LINES: tuple[Neo4jLineName, ...] = get_args(Neo4jLineName)
DEFAULT_NEO4J_LINE: Neo4jLineName = "5.26"


def _neo4j_env(name: str) -> AliasChoices:
    return AliasChoices(f"neo4j_{name}", f"NEO4J_{name.upper()}", f"KBGRAPH_NEO4J_{name.upper()}")


class LearningSettings(BaseModel):
    """The learning loop and maintenance (docs/design.md §4–5): ``[learning]`` in kbgraph.toml, or
    ``KBGRAPH_LEARNING__QUALITY_RATE=0.3``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # Agent KB D.1: Q ← (1 − rate)·Q + rate·outcome, for each experience an agent used.
    quality_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    # Agent KB D.3: utility halves every ``utility_half_life_days`` unless reinforced (0 = never).
    utility_half_life_days: float = Field(default=30.0, ge=0.0, le=36_500.0)
    # Each use adds ±usage_impact (success/failure) to utility, decaying like quality.
    usage_impact: float = Field(default=0.05, ge=0.0, le=1.0)
    # AutoRefine maintenance: archive the bottom ``prune_fraction`` of experiences retrieved at
    # least ``prune_min_retrieved`` times (younger ones have no record to judge yet) …
    prune_fraction: float = Field(default=0.2, ge=0.0, le=1.0)
    prune_min_retrieved: int = Field(default=5, ge=0, le=INT64_MAX)
    # … and also archive any whose utility fell below this floor (0 = off).
    prune_utility_below: float = Field(default=0.0, ge=0.0, le=1.0)
    # … and merge same-kind, same-workflow pairs at cosine ≥ merge_threshold, counters summed.
    merge_threshold: float = Field(default=0.85, ge=0.0, le=1.0)
    # Maintenance runs by itself after 10, 20, 40, … experiences were added (0 = only on demand).
    maintenance_first_checkpoint: int = Field(default=10, ge=0, le=INT64_MAX)
    # MAEL step-wise retrieval: α·similarity + (1 − α)·reward.
    step_alpha: float = Field(default=0.5, ge=0.0, le=1.0)


NAMESPACE_PATTERN = r"^[A-Za-z0-9_.\-]{1,64}$"


def namespace_problem(namespace: object) -> str | None:
    """Why ``namespace`` is not one (empty, blank, other characters, too long), or None."""
    if isinstance(namespace, str) and re.fullmatch(NAMESPACE_PATTERN, namespace):
        return None
    return f"{repr(namespace)[:80]} is not a namespace: use 1–64 letters, digits, '_', '.' or '-'"


def checked_namespace(namespace: str) -> str:
    """The namespace itself, or InvalidInputError: an empty or blank one never falls back to the
    configured default (``-n ""`` once deleted the namespace set in KBGRAPH_NAMESPACE)."""
    if problem := namespace_problem(namespace):
        raise InvalidInputError([f"namespace: {problem}"])
    return namespace


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="KBGRAPH_", extra="ignore", populate_by_name=True, env_nested_delimiter="__",
        allow_inf_nan=False,
    )

    # Connection. Unset URI = the managed local server.
    neo4j_uri: str | None = Field(default=None, validation_alias=_neo4j_env("uri"))
    neo4j_username: str = Field(default="neo4j", validation_alias=_neo4j_env("username"))
    neo4j_password: SecretStr | None = Field(default=None, validation_alias=_neo4j_env("password"))
    neo4j_database: str = Field(default="neo4j", validation_alias=_neo4j_env("database"))
    connect_timeout_s: float = Field(default=15.0, gt=0, le=MAX_TIMEOUT_S)
    # Every query_timeout_s a read or write transaction is still running, Neo4j is pinged (10 s
    # at most): a call on a server that answers is awaited (a big write on a loaded machine), one
    # on a frozen or lost server fails in one line instead of hanging. Statements that batch
    # themselves (CALL … IN TRANSACTIONS) are checked every bulk_query_timeout_s. Transient
    # errors are retried for at most retry_time_s.
    query_timeout_s: float = Field(default=20.0, gt=0, le=MAX_TIMEOUT_S)
    bulk_query_timeout_s: float = Field(default=600.0, gt=0, le=MAX_TIMEOUT_S)
    retry_time_s: float = Field(default=10.0, ge=0, le=MAX_TIMEOUT_S)

    namespace: str = "default"
    cache_dir: Path = Field(default_factory=default_cache_dir)

    # Embeddings.
    embedder: Literal["minilm", "openai"] = "minilm"
    # How MiniLM runs: ONNX Runtime (the same weights exported on first use into the cache, faster)
    # or PyTorch through sentence-transformers (the reference). Both give the same vectors.
    minilm_runtime: Literal["onnx", "torch"] = "onnx"
    embedding_dimension: int = Field(default=384, ge=1, le=8192)
    embedding_batch_size: int = Field(default=64, ge=1, le=4096)
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    openai_embedding_model: str = "text-embedding-3-small"
    openai_timeout_s: float = Field(default=30.0, gt=0, le=MAX_TIMEOUT_S)

    # The process: the threads of each BLAS library loaded when a knowledge base opens (0 leaves
    # them as they are). kbgraph's products are small, and OpenBLAS's idle threads spin after each
    # one on cores Neo4j needs (kbgraph.core.blas_threads, docs/performance.md).
    blas_threads: int = Field(default=1, ge=0, le=1024)

    # Search: the largest namespace (experiences) whose vectors, scoring facts and what feedback
    # changes a process keeps in memory for its searches (kbgraph.search.student.vector_model);
    # above it the vector indexes answer. At 100,000 keeping them gave settled searches of ~21 ms
    # against ~33, for ~1 GB more and first searches twice as slow while they are read
    # (docs/performance.md): for a long-lived process with memory to spare.
    in_process_max: int = Field(default=40_000, ge=0, le=10_000_000)

    # Writes.
    write_batch_size: int = Field(default=500, ge=1, le=50_000)
    # A bulk ingest that wrote this many experiences or more ends by running kbgraph's statements
    # once in a namespace of its own (kbgraph.plan_warmup): Neo4j plans them again once its
    # statistics moved, 0.05-1.2 s a statement, which the next adds and searches would pay. 0: never.
    warm_plans_after: int = Field(default=1_000, ge=0, le=INT64_MAX)
    # One ingest per namespace at a time: the lease a running ingest renews; after a crash the
    # next ingest waits at most this long (kbgraph.ingest.lease).
    ingest_lease_s: float = Field(default=60.0, ge=1.0, le=3600.0)

    # Ingestion: rule-based (offline, deterministic) or LLM-based abstraction and reflection.
    abstractor: Literal["rules", "llm"] = "rules"
    reflector: Literal["rules", "llm"] = "rules"
    # Search: how a request without executed steps is split into its asks (kbgraph.search.asks_llm);
    # "llm" asks the LLM below once per distinct request and falls back to the rules.
    ask_splitter: Literal["rules", "llm"] = "rules"
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str = "gpt-4o-mini"
    llm_timeout_s: float = Field(default=60.0, gt=0, le=MAX_TIMEOUT_S)
    llm_max_attempts: int = Field(default=4, ge=1, le=20)
    # Every answer is bounded; how its shape is asked for (kbgraph.llm.ResponseFormat): json_schema
    # for OpenAI / vLLM / Ollama / LM Studio / llama-server, json_object_schema for
    # llama-cpp-python's server, json_object (the schema in the prompt only) for any server.
    llm_max_tokens: int = Field(default=2048, ge=1, le=1_000_000)
    llm_response_format: Literal["json_object", "json_schema", "json_object_schema"] = "json_object"
    # False for models whose chat template has no system role (Gemma): the instructions then
    # open the user message.
    llm_system_role: bool = True
    # Unset: the server's default (reasoning models accept no other). 0 for repeatable answers.
    llm_temperature: float | None = Field(default=None, ge=0.0, le=2.0)

    # Retrieval: every weight and threshold of docs/design.md §3 (``[search]`` in kbgraph.toml, or
    # KBGRAPH_SEARCH__ALPHA=0.3); each search call may override them.
    search: SearchWeights = Field(default_factory=SearchWeights)
    learning: LearningSettings = Field(default_factory=LearningSettings)

    # The managed local Neo4j (ignored when neo4j_uri is set). Memory is sized for a
    # 2-core / 24 GiB machine: the JVM heap holds query state, the page cache the store files;
    # vector indexes live in the OS file cache, so most RAM is deliberately left to the OS.
    managed_home: Path | None = None
    # Which Neo4j the managed server runs: 5.26 LTS on Java 17+, or 2026.09 on Java 21+ (env
    # KBGRAPH_NEO4J_VERSION; never NEO4J_VERSION, which Neo4j's own images set to their release).
    # Each line has its own runtime in the cache and its own instance folder.
    neo4j_version: Neo4jLineName = DEFAULT_NEO4J_LINE
    managed_bolt_port: int = Field(default=7687, ge=1, le=65535)
    managed_http_port: int = Field(default=7474, ge=1, le=65535)
    managed_heap: str = Field(default="4g", pattern=r"^\d+[mg]$")
    managed_pagecache: str = Field(default="2g", pattern=r"^\d+[mg]$")
    # The small HTTP server that hands Neo4j Browser kbgraph's style and guide (another free
    # port if this one is taken; 0 = none).
    managed_assets_port: int = Field(default=7475, ge=0, le=65535)
    managed_start_timeout_s: float = Field(default=180.0, gt=0, le=MAX_TIMEOUT_S)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        # Set but empty is an error, never the default: KBGRAPH_NAMESPACE="" must not quietly mean
        # "default" (a delete would then empty the wrong namespace). Name the variable when it is
        # where the value came from, since the message is all a user sees.
        if problem := namespace_problem(value):
            from_env = os.environ.get("KBGRAPH_NAMESPACE") == value
            raise ValueError(f"{problem} (from KBGRAPH_NAMESPACE)" if from_env else problem)
        return value

    @property
    def uses_managed_server(self) -> bool:
        return not self.neo4j_uri

    @property
    def managed_instance_dir(self) -> Path:
        """``managed_home``, else one folder per line: a store that Neo4j 2026 has opened is upgraded
        and 5.26 cannot read it again (5.26 keeps the folder it always had)."""
        if self.managed_home:
            return self.managed_home
        suffix = "" if self.neo4j_version == "5.26" else f"-{self.neo4j_version}"
        return self.cache_dir / "neo4j" / f"instance{suffix}"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = config_file_path()
        if path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)
