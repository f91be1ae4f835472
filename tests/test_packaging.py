"""kbgraph installs as one top-level package: kbgraph, kbgraph.ingest, kbgraph.search, with its Cypher."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import Neo4jTarget

ROOT = Path(__file__).resolve().parents[1]
CHECK = """
import importlib.util, kbgraph, kbgraph.ingest, kbgraph.search
from kbgraph.store.queries import query, statements
assert importlib.util.find_spec("ingest") is None, "a top-level ingest module is installed"
assert importlib.util.find_spec("search") is None, "a top-level search module is installed"
assert "RETURN 1" in query("ping") and statements("schema")
print(kbgraph.__file__)
print(kbgraph.ingest.__file__)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True, capture_output=True, timeout=300)
    return next(out.glob("kbgraph-*.whl"))


def test_the_wheel_holds_only_the_kbgraph_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"kbgraph", next(t for t in tops if t.endswith(".dist-info"))}
    for expected in ("kbgraph/ingest/__init__.py", "kbgraph/search/__init__.py", "kbgraph/cypher/schema/03_vector_indexes.cypher",
                     "kbgraph/cypher/queries/experience_get.cypher", "kbgraph/store/managed/pom.xml",
                     "kbgraph/store/managed/pom-2026.09.xml",
                     "kbgraph/samples/experiences.jsonl", "kbgraph/py.typed"):
        assert expected in names


def test_the_integrations_ship_with_their_extras_declared(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    for module in ("kbgraph/integrations/langgraph.py", "kbgraph/integrations/langchain/__init__.py", "kbgraph/http_api/__init__.py",
                   "kbgraph/async_kb.py", "kbgraph/skills/export.py"):
        assert module in names
    metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for extra in ("langgraph", "langchain", "http", "skills"):
        assert f"Provides-Extra: {extra}" in metadata
    assert 'Requires-Dist: langgraph>=1.0; extra == "langgraph"' in metadata
    assert 'Requires-Dist: fastapi>=0.110; extra == "http"' in metadata


def test_a_normal_install_imports_from_anywhere(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    result = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": ""},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(str(site))
    assert result.stdout.splitlines()[1] == str(site / "kbgraph" / "ingest" / "__init__.py")


def test_an_editable_install_maps_the_top_level_folders(tmp_path: Path) -> None:
    # A throw-away environment that borrows this one's dependencies, with kbgraph installed
    # editable into it, the way a contributor would (pip install -e .).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "dependencies.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    # --ignore-installed: without it pip would first remove the kbgraph of the environment running it.
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--ignore-installed",
                    "-q", "-e", str(ROOT), "--prefix", str(venv)], check=True, capture_output=True, timeout=300)
    result = subprocess.run([str(venv / "bin" / "python"), "-c", CHECK], cwd=tmp_path, env={"PATH": ""},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == str(ROOT / "ingest" / "__init__.py")


def test_the_tests_run_this_checkout() -> None:
    """./kb gives every checkout its own editable install on top of the shared environment."""
    import kbgraph.ingest

    assert Path(kbgraph.ingest.__file__).resolve() == ROOT / "ingest" / "__init__.py"


FRESH_SEARCH = """
from kbgraph import KnowledgeBase, Settings

kb = KnowledgeBase.from_settings(Settings())
kb.add_trajectories([
    {"id": "r1", "domain": "retail", "task": "Return the headphones from order #W1 for a refund",
     "steps": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}},
               {"action": "return_delivered_order_items", "arguments": {"order_id": "#W1"}}]},
    {"id": "r2", "domain": "retail", "task": "Cancel order #W2, ordered by mistake",
     "steps": [{"action": "cancel_pending_order", "arguments": {"order_id": "#W2"}}]},
])
hits = kb.search("I want my money back for the headphones", domain="retail", k=2).hits
print(hits[0].experience.problem)
kb.clear()
"""


@pytest.mark.extended  # a fresh virtualenv downloads torch: minutes; ./kb test -m extended
def test_pip_install_without_extras_in_a_fresh_virtualenv_imports_and_searches(
    wheel: Path, tmp_path: Path, neo4j_target: Neo4jTarget,
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True, timeout=1800)
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True,
                            text=True, timeout=120).stdout.lower()
    for extra_only in ("fastapi", "mcp", "langgraph", "matplotlib", "psutil", "openai"):
        assert f"{extra_only}==" not in listed, f"{extra_only} came with a plain install"
    result = subprocess.run([str(python), "-c", FRESH_SEARCH], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                            env={**neo4j_target.env("fresh-venv-check"), "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "Return the headphones from order {id} for a refund"
