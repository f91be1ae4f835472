"""The local LLM server (kbgraph.llm.local_server, `kbgraph llm local`): where its cached environment
lives and how it is found — and, when selected (``-m extended``), the real llama-cpp-python server
with Gemma 3 270M ingesting real runs through the LLM path. (docs/llm.md's example runs in
tests/test_docs.py, in the same extended group.)

The extended tests build what they need into the kbgraph cache the first time (llama-cpp-python
compiles on install: about 12 minutes on 2 cores), then reuse it; a server they started they stop.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbgraph.bench.llm_local import first_runs, llm_shares, run_llm_benchmark
from kbgraph.ingest.report import IngestReport
from kbgraph.kb import KnowledgeBase
from kbgraph.llm.local_server import (
    BUILD_CMAKE_ARGS,
    CLIENT_SETTINGS,
    LLAMA_CPP_PYTHON,
    MODEL_ALIAS,
    LocalLlamaServer,
    LocalLLMError,
    environment_key,
    environment_variables,
    follow_build,
)
from kbgraph.core.settings import Settings
from tests.cli_in_process import run_kbgraph
from tests.conftest import REAL_RUNS

REPO = Path(__file__).resolve().parents[3]
RUNS_FILE = REAL_RUNS / "airline_gpt4o.jsonl"


# Where things are, and how a running server is recognised (no server needed) ---------------------


def test_the_environment_is_keyed_by_the_interpreter_the_machine_the_build_flags_and_the_pins() -> None:
    key = environment_key("3.11.7", "x86_64")
    assert re.fullmatch(r"[0-9a-f]{16}", key)
    assert key == environment_key("3.11.7", "x86_64")
    # An environment compiled with other flags (the earlier ones, which let AMX in) is not reused.
    assert len({key, environment_key("3.12.1", "x86_64"), environment_key("3.11.7", "aarch64"),
                environment_key("3.11.7", "x86_64", cmake_args="")}) == 4
    assert LLAMA_CPP_PYTHON.startswith("llama-cpp-python[server]==")


def test_llama_cpp_is_compiled_without_amx_which_many_vms_do_not_enable() -> None:
    args = shlex.split(BUILD_CMAKE_ARGS)  # as scikit-build-core splits CMAKE_ARGS
    for variable in ("CMAKE_C_FLAGS", "CMAKE_CXX_FLAGS"):
        [flags] = [a.removeprefix(f"-D{variable}=") for a in args if a.startswith(f"-D{variable}=")]
        assert {"-mno-amx-tile", "-mno-amx-int8", "-mno-amx-bf16"} <= set(flags.split()), variable
    assert {"-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"} <= set(args)
    assert not any("march" in a or "GGML_NATIVE" in a for a in args)  # otherwise native: AVX2 etc. stay


def test_the_build_is_logged_whole_and_told_in_milestones() -> None:
    pip = ["Collecting llama-cpp-python[server]==0.3.36\n", "  Building wheel for llama-cpp-python\n",
           *[f"  [{i}/193] /usr/bin/g++ -march=native -c ggml-{i}.c\n" for i in range(1, 194)],
           "  warning: something\n", "Successfully installed llama-cpp-python-0.3.36\n"]
    ticks = iter(range(0, 10_000, 5))  # each line read 5 s after the one before
    log, said = io.StringIO(), []
    tail = follow_build(pip, log, said.append, clock=lambda: next(ticks))
    assert log.getvalue() == "".join(pip)
    assert tail == [line.rstrip() for line in pip[-30:]]
    steps = [int(s.split("step ")[1].split("/")[0]) for s in said if "compiling llama.cpp" in s]
    assert steps == list(range(4, 194, 6))  # step 4 is read 30 s in, then one every 30 s (6 steps)
    assert not any("g++" in s for s in said)
    assert said[0].endswith("] Collecting llama-cpp-python[server]==0.3.36")
    assert said[-1].endswith("] Successfully installed llama-cpp-python-0.3.36")


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
    # In this process (tests/cli_in_process.py): what the commands print, not their process, is checked.
    shown = run_kbgraph(env, "llm", "local", "status", cwd=REPO)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("local LLM: stopped; environment ") and "not built yet" in shown.stdout
    as_json = run_kbgraph(env, "llm", "local", "status", "--json", cwd=REPO)
    assert json.loads(as_json.stdout)["running"] is False
    stopped = run_kbgraph(env, "llm", "local", "stop", cwd=REPO)
    assert stopped.stdout.strip() == "local LLM was not running"


def test_the_benchmark_shares_are_per_stage_and_over_all() -> None:
    from kbgraph.ingest.report import LLMCounts

    shares = llm_shares({"abstract": LLMCounts(calls=4, valid_first_try=1, repaired=1, fell_back=2),
                         "reflect": LLMCounts(calls=4, retried=1, fell_back=3)})
    assert shares["abstract"] == {"calls": 4, "valid_first_try": 0.25, "repaired_or_retried": 0.25, "fell_back": 0.5}
    assert shares["all"] == {"calls": 8, "valid_first_try": 0.125, "repaired_or_retried": 0.25, "fell_back": 0.625}


# The real server (-m extended) ------------------------------------------------------------------


def assert_still_serving(server: LocalLlamaServer, during: str) -> None:
    """A server that died answered nothing: every question fell back to the rules, and counts that
    add up would not show it. So whatever used the server checks it is still there afterwards."""
    assert server.status().running, (
        f"the local LLM server died while {during}, so the model answered nothing (its log: "
        f"{server.log_file}; a crash such as SIGILL leaves no line there, the kernel's log has it)")


@pytest.fixture(scope="module")
def started_local_server() -> Iterator[LocalLlamaServer]:
    """The real server of kbgraph's cache: built if needed, started if needed, stopped if we started it."""
    server = LocalLlamaServer.from_settings(Settings())
    started_here = not server.status().running
    server.start()
    try:
        yield server
    finally:
        if started_here:
            server.stop()


@pytest.fixture
def local_server(started_local_server: LocalLlamaServer) -> Iterator[LocalLlamaServer]:
    """The running server, and a failure if it is not running any more after the test."""
    yield started_local_server
    assert_still_serving(started_local_server, "the test ran")


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


@pytest.mark.extended
@pytest.mark.timeout(3600)
def test_the_built_llama_cpp_is_native_but_for_amx() -> None:
    server = LocalLlamaServer.from_settings(Settings())
    server.ensure_environment()
    info = subprocess.run([str(server.venv_python), "-c",
                           "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"],
                          capture_output=True, text=True, timeout=120, check=True).stdout
    assert "AMX" not in info, info
    cpu_flags = set(re.findall(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)[0].split())
    if "avx2" in cpu_flags:  # -march=native still applies: the SIMD the CPU has is used
        assert "AVX2 = 1" in info, info
