"""The `neo4j` marker is set by tests/conftest.py from the fixtures a test uses, so that
``./kb test -m "not neo4j"`` runs every other test without starting a server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def pytest_in_subprocess(*arguments: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *arguments], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_tests_reaching_the_database_through_a_fixture_are_marked_and_left_out_by_not_neo4j() -> None:
    stats = "tests/kbgraph/store/test_namespace_stats.py"
    managed = "tests/kbgraph/store/managed/test_managed_server.py"
    collected = pytest_in_subprocess("--collect-only", "-q", "-m", "not neo4j", stats, managed)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    kept = {line.split("::")[1] for line in collected.stdout.splitlines() if "::" in line}
    # Pure tests stay; one using `kb` (→ driver → neo4j_target) and one starting its own server go.
    assert "test_every_label_with_a_key_constraint_is_counted_by_the_stats_query" in kept
    assert "test_a_busy_port_is_explained" in kept
    assert "test_a_namespace_holding_only_langgraph_store_items_shows_them" not in kept
    assert "test_start_status_browser_stop_and_restart" not in kept


def test_an_unmarked_test_that_starts_a_managed_server_fails_saying_so(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_starts_a_server.py").write_text(
        "from pathlib import Path\n"
        "from kbgraph.store.managed.server import ManagedNeo4j, free_port\n\n"
        "def test_it(tmp_path: Path) -> None:\n"
        "    ManagedNeo4j(home=tmp_path, cache_dir=tmp_path, bolt_port=free_port(), http_port=free_port(),\n"
        "                 quiet=True, assets_port=0).start()\n")
    done = pytest_in_subprocess("-p", "tests.conftest", "-c", str(tmp_path / "pytest.ini"),
                                str(tmp_path / "test_starts_a_server.py"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "starts a Neo4j server but is not marked neo4j" in done.stdout


def test_extended_tests_run_only_when_the_marker_expression_names_them() -> None:
    managed = "tests/kbgraph/store/managed/test_managed_server.py"
    extended = "test_a_lost_password_file_is_recovered_by_reset_password_and_the_data_is_kept"

    def kept(*marker: str) -> set[str]:
        collected = pytest_in_subprocess("--collect-only", "-q", *marker, managed)
        assert collected.returncode == 0, collected.stdout + collected.stderr
        return {line.split("::")[1] for line in collected.stdout.splitlines() if "::" in line}

    assert extended not in kept() and "test_a_busy_port_is_explained" in kept()
    assert extended not in kept("-m", "not slow")  # another expression does not bring them back
    assert kept("-m", "extended") == {extended}
