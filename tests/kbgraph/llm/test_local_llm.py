"""The local LLM server (kbgraph.llm.local_server, `kbgraph llm local`): where its cached environment
lives and how it is found — and, when selected (``-m extended``), the real llama-cpp-python server
with Gemma 3 270M ingesting real runs through the LLM path. (docs/llm.md's example runs in
tests/test_docs.py, in the same extended group.)

The extended tests build what they need into the kbgraph cache the first time (llama-cpp-python
compiles on install: 6-12 minutes on 2 cores), then reuse it; a server they started they stop.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph.bench.llm_local import first_runs, llm_shares, run_llm_benchmark
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from kbgraph.llm.local_server import (
    CLIENT_SETTINGS,
    LLAMA_CPP_PYTHON,
    MODEL_ALIAS,
    LocalLlamaServer,
    LocalLLMError,
    environment_key,
    environment_variables,
)
from kbgraph.core.settings import Settings
from tests.conftest import REAL_RUNS

REPO = Path(__file__).resolve().parents[3]
RUNS_FILE = REAL_RUNS / "airline_gpt4o.jsonl"


# Where things are, and how a running server is recognised (no server needed) ---------------------


def test_the_environment_is_keyed_by_the_interpreter_the_machine_and_the_pins() -> None:
    key = environment_key("3.11.7", "x86_64")
    assert re.fullmatch(r"[0-9a-f]{16}", key)
    assert key == environment_key("3.11.7", "x86_64")
    assert len({key, environment_key("3.12.1", "x86_64"), environment_key("3.11.7", "aarch64")}) == 3
    assert LLAMA_CPP_PYTHON.startswith("llama-cpp-python[server]==")


def test_the_environment_and_the_model_live_in_the_cache_folder(tmp_path: Path) -> None:
    server = LocalLlamaServer(cache_dir=tmp_path)
    assert server.venv == tmp_path / "llama" / environment_key() / "venv"
    assert server.model_path.parent == server.venv.parent and server.model_path.suffix == ".gguf"
    assert not server.built


def test_a_server_never_started_is_stopped_and_has_no_settings(tmp_path: Path) -> None:
    server = LocalLlamaServer(cache_dir=tmp_path)
    status = server.status()
    assert (status.running, status.pid, status.endpoint, status.model) == (False, None, None, MODEL_ALIAS)
    assert server.stop() is False
    with pytest.raises(LocalLLMError, match="not running: `kbgraph llm local start` starts it"):
        server.client_settings()


def test_a_recorded_pid_that_is_not_our_server_is_not_taken_for_it(tmp_path: Path) -> None:
    server = LocalLlamaServer(cache_dir=tmp_path)
    server.run_dir.mkdir(parents=True)
    # This very process is alive, but it is not llama_cpp.server serving our model: a recycled pid.
    server.state_file.write_text(json.dumps({"pid": os.getpid(), "port": 1, "model": str(server.model_path)}))
    assert server.status().running is False
    assert server.stop() is False and not server.state_file.exists()


def test_the_settings_it_prints_are_valid_kbgraph_settings() -> None:
    variables = environment_variables({"abstractor": "llm", "llm_base_url": "http://127.0.0.1:1/v1", **CLIENT_SETTINGS})
    assert variables["KBGRAPH_LLM_RESPONSE_FORMAT"] == "json_object_schema"
    settings = Settings(**{"abstractor": "llm", "reflector": "llm", **CLIENT_SETTINGS})
    assert (settings.llm_system_role, settings.llm_max_tokens, settings.llm_max_attempts) == (False, 512, 2)


def test_the_status_command_says_stopped_and_not_built_in_an_empty_cache(tmp_path: Path) -> None:
    env = {**os.environ, "KBGRAPH_CACHE_DIR": str(tmp_path)}
    command = [sys.executable, "-m", "kbgraph.cli", "llm", "local", "status"]
    shown = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("local LLM: stopped; environment ") and "not built yet" in shown.stdout
    as_json = subprocess.run([*command, "--json"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert json.loads(as_json.stdout)["running"] is False
    stopped = subprocess.run([*command[:-1], "stop"], env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert stopped.stdout.strip() == "local LLM was not running"


def test_the_benchmark_shares_are_per_stage_and_over_all() -> None:
    from kbgraph.ingest.report import LLMCounts

    shares = llm_shares({"abstract": LLMCounts(calls=4, valid_first_try=1, repaired=1, fell_back=2),
                         "reflect": LLMCounts(calls=4, retried=1, fell_back=3)})
    assert shares["abstract"] == {"calls": 4, "valid_first_try": 0.25, "repaired_or_retried": 0.25, "fell_back": 0.5}
    assert shares["all"] == {"calls": 8, "valid_first_try": 0.125, "repaired_or_retried": 0.25, "fell_back": 0.625}


# The real server (-m extended) ------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_server() -> Iterator[LocalLlamaServer]:
    """The real server of kbgraph's cache: built if needed, started if needed, stopped if we started it."""
    server = LocalLlamaServer.from_settings(Settings())
    started_here = not server.status().running
    server.start()
    try:
        yield server
    finally:
        if started_here:
            server.stop()


def assert_counted_and_whole(kb: KnowledgeBase, report: IngestReport, run_ids: list[str]) -> None:
    assert set(report.llm) == {"abstract", "reflect", "integrate"}
    assert report.llm["abstract"].calls == report.llm["reflect"].calls == len(run_ids)
    for stage, counts in report.llm.items():
        assert counts.calls == counts.valid_first_try + counts.repaired + counts.retried + counts.fell_back, stage
    sources = {s for e in kb.get_many(list(kb.store.iter_ids())) for s in e.source_ids}
    assert sources == set(run_ids)
    assert report.consolidated and report.meta_concepts > 0
    before = kb.stats()
    again = kb.add_trajectories(first_runs(RUNS_FILE, len(run_ids)))
    assert again.records_already_ingested == len(run_ids) and again.experiences_new == 0
    assert (kb.stats().nodes, kb.stats().relationships) == (before.nodes, before.relationships)


@pytest.mark.extended
@pytest.mark.timeout(3600)
def test_the_real_local_model_ingests_two_real_runs_through_the_llm_path(
    kb: KnowledgeBase, local_server: LocalLlamaServer,
) -> None:
    kb.settings = Settings(namespace=kb.namespace, neo4j_database=kb.gateway.database,
                           **local_server.client_settings())
    runs = first_runs(RUNS_FILE, 2)
    report = kb.add_trajectories(runs)
    assert_counted_and_whole(kb, report, [r["id"] for r in runs])


@pytest.mark.extended
@pytest.mark.timeout(3600)
def test_the_benchmark_puts_both_paths_side_by_side(kb: KnowledgeBase, local_server: LocalLlamaServer) -> None:
    report = run_llm_benchmark(kb, first_runs(RUNS_FILE, 1), local_server.client_settings(),
                               prefix=kb.namespace + "-bench")
    rules, llm = report["paths"]["rules"], report["paths"]["llm"]
    assert "llm" not in rules and llm["shares"]["all"]["calls"] >= 2
    for row in (rules, llm):
        assert row["experiences"] == 1 and row["samples"]["experience"] is not None
    assert {i["by"] for i in rules["items"]["abstract"]} == {"rules"}
    assert {i["by"] for i in llm["items"]["abstract"]} <= {"model", "rules (fell back)"}
    for path in ("rules", "llm"):  # the namespaces are dropped afterwards
        assert KnowledgeBase(kb.driver, kb.embedder, namespace=f"{kb.namespace}-bench-{path}",
                             database=kb.gateway.database).stats().experiences == 0
