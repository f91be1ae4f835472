"""`pip install kbgraph` with no extras is enough to import kbgraph, ingest and search a running
Neo4j, and use the CLI; whatever needs an extra says which, in one line.

Installing into a fresh virtualenv would download PyTorch and the rest again (gigabytes, online).
The same question is asked here offline: every module of this environment that the core
dependencies of pyproject.toml (and theirs, recursively) do not provide is made unimportable in a
subprocess, which then does what a new user's first script does."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

from packaging.requirements import Requirement

from kbgraph.kb import KnowledgeBase
from tests.conftest import Neo4jTarget

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "kbgraph" / "samples" / "trajectories.jsonl"

#: Runs a module as `python -m` would, with the modules named in argv[1] (comma-separated) unimportable.
WITHOUT_EXTRAS = """
import runpy, sys
blocked = set(sys.argv[1].split(","))
class Hidden:  # every finder in turn, blind to the blocked modules: they read as not installed
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked or not hasattr(self.finder, "find_spec"):
            return None
        return self.finder.find_spec(name, path, target)
    def __getattr__(self, attribute):
        return getattr(self.finder, attribute)
sys.meta_path[:] = [Hidden(finder) for finder in sys.meta_path]
sys.argv = sys.argv[2:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True) if sys.argv[0] != "-c" else exec(sys.argv[1])
"""

FIRST_SCRIPT = """
import json, sys
from kbgraph import KnowledgeBase
runs = [json.loads(line) for line in open(sys.argv[2]).read().splitlines()[:3]]
with KnowledgeBase.from_settings() as kb:
    kb.add_trajectories(runs)
    results = kb.search(runs[0]["task"], k=3)
    stored = kb.count()
print(json.dumps({"new": stored, "hits": len(results.hits), "modules": sorted(sys.modules)}))
"""


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def core_distributions() -> set[str]:
    """The distributions `pip install kbgraph` installs: the core dependencies, and theirs."""
    requirements = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    found: set[str] = set()
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an extra's requirement, or another platform's
        name = normalised(requirement.name)
        if name in found:
            continue
        found.add(name)
        try:
            pending += [Requirement(text) for text in importlib.metadata.distribution(requirement.name).requires or []]
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def modules_outside_the_core() -> list[str]:
    core = core_distributions()
    return sorted(module for module, distributions in importlib.metadata.packages_distributions().items()
                  if module != "kbgraph" and not any(normalised(d) in core for d in distributions))


def without_extras(target: Neo4jTarget, namespace: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, ",".join(modules_outside_the_core()), *arguments],
                          env=target.env(namespace), capture_output=True, text=True, timeout=600, cwd=REPO)


def test_what_only_a_benchmark_the_report_or_a_way_in_needs_is_not_a_core_dependency() -> None:
    outside = set(modules_outside_the_core())
    for module in ("openai", "mcp", "psutil", "matplotlib", "fastapi", "uvicorn", "langchain_core", "langgraph",
                   "skills_ref", "py2neo", "testcontainers", "pytest"):
        assert module in outside, f"{module} would be installed by `pip install kbgraph` without extras"
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"llm", "mcp", "bench", "report", "http", "langgraph", "langchain", "skills", "all"} <= set(extras)


def test_without_extras_kbgraph_imports_ingests_and_searches_a_running_neo4j(
    neo4j_target: Neo4jTarget, kb: KnowledgeBase
) -> None:
    done = without_extras(neo4j_target, kb.namespace, "-c", FIRST_SCRIPT, str(SAMPLES))
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["new"] >= 1 and answer["hits"] >= 1
    assert not set(answer["modules"]) & set(modules_outside_the_core())

    search = without_extras(neo4j_target, kb.namespace, "kbgraph.cli", "search", "cancel a pending order", "-k", "2")
    assert search.returncode == 0, search.stderr[-3000:]
    assert "results from" in search.stdout


def test_a_command_that_needs_an_extra_names_it_in_one_line(neo4j_target: Neo4jTarget) -> None:
    namespace = f"test-{uuid.uuid4().hex[:10]}"
    for command, extra in ((["report"], "report"), (["mcp"], "mcp"), (["bench", "online"], "bench")):
        done = without_extras(neo4j_target, namespace, "kbgraph.cli", *command)
        assert done.returncode == 1, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"kbgraph: error: kbgraph {' '.join(command)} needs the {extra!r} extra "
            f"({'psutil' if extra == 'bench' else 'matplotlib' if extra == 'report' else 'mcp'} is not installed): "
            f"pip install 'kbgraph[{extra}]'"]
    llm = subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, ",".join(modules_outside_the_core()), "kbgraph.cli",
                          "ingest", str(SAMPLES), "-n", namespace],
                         env={**neo4j_target.env(namespace), "KBGRAPH_ABSTRACTOR": "llm"},
                         capture_output=True, text=True, timeout=600, cwd=REPO)
    assert llm.returncode != 0 and "Traceback" not in llm.stderr
    assert "needs the 'llm' extra (openai is not installed): pip install 'kbgraph[llm]'" in llm.stderr
