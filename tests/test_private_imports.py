"""kbgraph imports only the public modules of the packages it depends on: a private module
(``mcp.shared._context_streams``) may change or vanish in any release of its package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = ("kbgraph", "ingest", "search")
OWN = ("kbgraph", "ingest", "search")


def private_imports(source: str) -> list[str]:
    """The private modules of other packages that ``source`` imports (a dotted part with a
    leading underscore, ``__future__`` aside)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] in OWN or parts[0] == "__future__":
                continue
            if any(part.startswith("_") for part in parts):
                found.append(module)
    return found


def test_the_check_finds_a_private_module() -> None:
    assert private_imports("from mcp.shared._context_streams import create_context_streams") == [
        "mcp.shared._context_streams", "mcp.shared._context_streams.create_context_streams"]
    assert private_imports("import mcp.shared.message\nfrom kbgraph.mcp_server._server import x\n"
                           "from __future__ import annotations") == []


def test_kbgraph_imports_no_private_module_of_another_package() -> None:
    found = {f"{path.relative_to(ROOT)}: {module}"
             for folder in SOURCE_FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))
             for module in private_imports(path.read_text(encoding="utf-8"))}
    assert not found, sorted(found)
