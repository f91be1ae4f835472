"""How the command introduces itself: its name in the help, as a user types it, and what its time
goes to."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import kbgraph.cli
from kbgraph.kb import KnowledgeBase
from tests.conftest import Neo4jTarget


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbgraph.cli", *arguments], capture_output=True, text=True,
                          timeout=120)


def test_the_help_names_the_command_kbgraph_whichever_way_it_was_started() -> None:
    # ./kb and the tests start it as `python -m kbgraph.cli`; the help still says `kbgraph`.
    top, search = run_cli("--help"), run_cli("search", "--help")
    assert top.returncode == 0 and search.returncode == 0, top.stderr + search.stderr
    assert "Usage: kbgraph [OPTIONS] COMMAND [ARGS]..." in top.stdout
    assert "Usage: kbgraph search [OPTIONS]" in search.stdout
    assert "python -m" not in top.stdout + search.stdout


def test_a_search_tells_its_start_up_from_the_search_itself(neo4j_target: Neo4jTarget, kb: KnowledgeBase) -> None:
    # A CLI search is mostly start-up (imports, connection, the model); the last line says which part is which.
    kb.add_trajectories([{"id": "entry-1", "task": "Cancel the pending order #W1 of ana@example.com", "domain": "retail",
                          "outcome": {"success": True},
                          "steps": [{"action": "cancel_pending_order", "arguments": {"order_id": "#W1"}}]}])
    done = subprocess.run([sys.executable, "-m", "kbgraph.cli", "search", "cancel an order", "-k", "1"],
                          env=neo4j_target.env(kb.namespace), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    last = done.stdout.rstrip().splitlines()[-1]
    assert re.fullmatch(r"start-up \d+\.\d s \(Python and kbgraph's imports, the Neo4j connection, loading the "
                        r"embedding model\), then the search \d+ ms", last), last


def test_the_command_line_reaches_typers_errors_through_its_public_names_only() -> None:
    # typer carries its own click (typer._click, private, whose errors are not the click package's):
    # the CLI imported its error classes from there; it now finds them from typer.BadParameter.
    imported = {alias.name if isinstance(node, ast.Import) else f"{node.module}"
                for path in Path(kbgraph.cli.__file__).parent.rglob("*.py")
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names}
    assert not [name for name in imported if name.startswith(("typer._", "click._"))], sorted(imported)
    usage = run_cli("search", "-k", "1e308")
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1, usage.stderr
    assert usage.stderr.startswith("kbgraph: error: kbgraph search: Invalid value for '--k'"), usage.stderr
