"""Shared fixtures: one real Neo4j server for the session (5.26, or 2026.09 with
KBGRAPH_NEO4J_VERSION=2026.09), the real MiniLM embedder, and a fresh namespace per test (deleted
afterwards).

A test that uses a Neo4j server — through any fixture that leads to ``neo4j_target`` or to
``throwaway_neo4j`` (tests/reliability) — is marked ``neo4j`` at collection, so that
``./kb test -m "not neo4j"`` runs the others without starting one. A test that starts a managed
server by itself must carry ``@pytest.mark.neo4j``; one that does not fails, saying so.

The server is, in order of preference:
1. the one at NEO4J_URI (with NEO4J_USERNAME / NEO4J_PASSWORD / NEO4J_DATABASE), when set;
2. a neo4j:<line>-community container through testcontainers, when a Docker engine answers;
3. kbgraph's managed server of that line, started on free ports with a throw-away data directory
   (its JVM maps the class-data archive of tests/class_data.py). Like every throw-away server of the
   suite it dies with the process that started it, even one killed with kill -9
   (kbgraph/store/managed/watchdog.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import neo4j
import pytest

from kbgraph.store.connection import open_driver
from kbgraph.embedders import CachedEmbedder, embedder_from_settings
from kbgraph.kb import KnowledgeBase
from kbgraph.store.managed.lines import LINES
from kbgraph.store.managed.server import ManagedNeo4j, free_port
from kbgraph.core.settings import Settings
from tests.class_data import ClassDataArchive
from tests.unclosed import neo4j_sessions_closed  # noqa: F401  (autouse: a test fails on a session it left open)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
REAL_RUNS = SHARED_DATA / "real_runs"


#: The files that take longest, longest first: the suite runs them first. pytest-xdist hands each
#: worker whole files in the order collected (``--dist loadfile --no-loadscope-reorder`` in
#: pyproject's addopts; its default order, most tests first, left a 2-minute file for the end).
#: Measured on 5.26 with two workers, 2026-11-28 (``-p tests.file_durations`` measures it again); a file
#: missing from here only starts later.
LONGEST_FILES = (
    "tests/kbgraph/cli/test_cli.py", "tests/test_docs.py", "tests/reliability/test_timeouts.py",
    "tests/reliability/test_kill9.py", "tests/kbgraph/http_api/test_http_api.py",
    "tests/kbgraph/inspect/test_inspect.py", "tests/kbgraph/transfer/test_transfer.py", "tests/test_typing.py",
    "tests/kbgraph/bench/test_bench_learning.py", "tests/kbgraph/cli/test_cli_learning.py",
    "tests/kbgraph/store/managed/test_managed_server.py", "tests/search/eval/test_evaluate.py",
    "tests/kbgraph/test_knowledge_base.py", "tests/search/test_student.py",
    "tests/kbgraph/store/managed/test_browser.py", "tests/kbgraph/learning/test_feedback.py",
    "tests/ingest/test_consolidate.py", "tests/kbgraph/skills/test_skills_export.py",
    "tests/ingest/test_add_trajectories.py", "tests/kbgraph/report/test_report.py", "tests/test_core_dependencies.py",
    "tests/test_markers.py", "tests/kbgraph/integrations/test_langchain.py",
    "tests/kbgraph/integrations/test_langgraph_store.py", "tests/kbgraph/cli/test_demo.py",
)

#: The fixtures that start or reach a Neo4j server: a test whose fixtures lead to one is marked neo4j.
NEO4J_FIXTURES = frozenset({"neo4j_target", "throwaway_neo4j"})


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by -m
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if NEO4J_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.neo4j)
    # `extended` tests run only when -m names them (see pyproject's addopts).
    if "extended" not in (config.getoption("markexpr") or ""):
        extended = [item for item in items if item.get_closest_marker("extended")]
        if extended:
            config.hook.pytest_deselected(items=extended)
            items[:] = [item for item in items if not item.get_closest_marker("extended")]
    # The longest files first (a stable sort: the others keep their order), so that neither worker
    # is left running a long file alone at the end.
    first = {path: rank for rank, path in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: first.get(item.nodeid.split("::", 1)[0], len(first)))


@pytest.fixture(autouse=True)
def neo4j_only_when_marked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked neo4j that starts a managed server fails before the server starts: unmarked,
    it would start one under ``-m "not neo4j"``."""
    if request.node.get_closest_marker("neo4j") is not None:
        return

    def refuse(*_args: object, **_kwargs: object) -> None:
        pytest.fail(f"{request.node.nodeid} starts a Neo4j server but is not marked neo4j: add @pytest.mark.neo4j",
                    pytrace=False)

    monkeypatch.setattr("kbgraph.store.managed.server.ensure_runtime", refuse)


@dataclass(frozen=True)
class Neo4jTarget:
    uri: str
    username: str
    password: str
    database: str
    how: str  # "NEO4J_URI", "testcontainers" or "managed"
    http_port: int | None = None

    def env(self, namespace: str) -> dict[str, str]:
        """Environment for a kbgraph subprocess that should use this server and namespace."""
        return {
            **os.environ, "NEO4J_URI": self.uri, "NEO4J_USERNAME": self.username,
            "NEO4J_PASSWORD": self.password, "NEO4J_DATABASE": self.database, "KBGRAPH_NAMESPACE": namespace,
        }


def docker_engine_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def neo4j_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Neo4jTarget]:
    if os.environ.get("NEO4J_URI"):
        yield Neo4jTarget(
            os.environ["NEO4J_URI"], os.environ.get("NEO4J_USERNAME", "neo4j"),
            os.environ.get("NEO4J_PASSWORD", ""), os.environ.get("NEO4J_DATABASE", "neo4j"), "NEO4J_URI",
        )
        return
    if docker_engine_answers():
        from testcontainers.neo4j import Neo4jContainer

        image = f"neo4j:{Settings().neo4j_version}-community"
        with Neo4jContainer(image, password="kbgraph-test-password") as container:
            yield Neo4jTarget(container.get_connection_url(), "neo4j", "kbgraph-test-password", "neo4j",
                              "testcontainers")
        return
    line = LINES[Settings().neo4j_version]
    # This server has run tests by the time it stops: it writes the class-data archive when there is none.
    archive = ClassDataArchive(Settings().cache_dir, line)
    server = ManagedNeo4j(
        home=tmp_path_factory.mktemp("neo4j-home"), cache_dir=Settings().cache_dir,
        bolt_port=free_port(), http_port=free_port(), heap="3g", pagecache="1g", quiet=True,
        line=line, jvm_options=archive.jvm_options(write=True), dies_with_starter=True,
    )
    server.start()
    try:
        yield Neo4jTarget(server.bolt_uri, "neo4j", server.password(), "neo4j", "managed", server.http_port)
    finally:
        server.stop()
        archive.keep()


@pytest.fixture(scope="session")
def driver(neo4j_target: Neo4jTarget) -> Iterator[neo4j.Driver]:
    drv = open_driver(neo4j_target.uri, (neo4j_target.username, neo4j_target.password), neo4j_target.database)
    yield drv
    drv.close()


@pytest.fixture(scope="session")
def embedder() -> CachedEmbedder:
    """The real all-MiniLM-L6-v2 on the default runtime (ONNX Runtime), with kbgraph's on-disk cache
    (outside the repository)."""
    built = embedder_from_settings(Settings())
    assert isinstance(built, CachedEmbedder)
    return built


@pytest.fixture
def namespace() -> str:
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def kb(driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str, neo4j_target: Neo4jTarget) -> Iterator[KnowledgeBase]:
    knowledge_base = KnowledgeBase(driver, embedder, namespace=namespace, database=neo4j_target.database)
    yield knowledge_base
    knowledge_base.clear()


def ingest_shared(kb: KnowledgeBase, folder: Path) -> KnowledgeBase:
    """``kb`` with every file of a shared data folder ingested (a missing folder fails the test)."""
    if not folder.is_dir():
        pytest.fail(f"the shared data is missing: {folder}")
    kb.ingest(sorted(folder.glob("*.jsonl")))
    return kb


@pytest.fixture
def real_kb(kb: KnowledgeBase) -> KnowledgeBase:
    """The test's namespace holding the real agent runs of ``../shared/data/real_runs``."""
    return ingest_shared(kb, REAL_RUNS)


@pytest.fixture(scope="module")
def real_runs_read_only(driver: neo4j.Driver, embedder: CachedEmbedder,
                        neo4j_target: Neo4jTarget) -> Iterator[KnowledgeBase]:
    """The real agent runs ingested once per module, for tests that only read them (search, the
    teacher, reflection's documents): each of them ingested the 100 runs again. A test that writes
    anything takes ``real_kb``, a namespace of its own. Not once per session: on 5.26 every
    namespace's vectors share one index, and a namespace left there for the rest of the session
    changed what other modules' index queries over-fetched (test_teacher.py asked twice)."""
    knowledge_base = KnowledgeBase(driver, embedder, namespace=f"test-real-runs-{uuid.uuid4().hex[:8]}",
                                   database=neo4j_target.database)
    try:
        yield ingest_shared(knowledge_base, REAL_RUNS)
    finally:
        knowledge_base.clear()
