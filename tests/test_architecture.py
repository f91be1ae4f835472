"""The shape of the package: imports point only down the layers, and modules stay small.

The layers, lowest first (docs/architecture.md explains each):

    core < providers < store < ingest < search < learning < exchange < façade < tools < ways in

A module may import its own layer and the layers below it, never above. The ways in (CLI, MCP
server, HTTP API, report, inspection, integrations, benchmarks) do not import one another, except
that the CLI launches all of them. Search does not import ingest either, although it sits above it:
the two share only what lies below them (the text rules are in core). Imports inside functions and
under TYPE_CHECKING count too.

The scoring formulas (``kbgraph.search.scoring``) are the reference of how kbgraph ranks, so each
function the package exports must be used by the code outside it: a formula only its tests call is a
second version of one the searches write elsewhere.
"""

from __future__ import annotations

import ast
import inspect
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Folders as installed: ingest/ and search/ are the packages kbgraph.ingest and kbgraph.search.
SOURCE_FOLDERS = {"kbgraph": "kbgraph", "ingest": "kbgraph.ingest", "search": "kbgraph.search"}

# (layer rank, layer name) by module prefix; the longest prefix that matches wins.
LAYERS: dict[str, tuple[int, str]] = {
    "kbgraph.core": (0, "core"),
    "kbgraph.embedders": (1, "providers"),
    "kbgraph.minilm_onnx_export": (1, "providers"),  # the ONNX export the embedders load
    "kbgraph.llm": (1, "providers"),
    "kbgraph.store": (2, "store"),
    "kbgraph.cypher": (2, "store"),
    "kbgraph.ingest": (3, "ingest"),
    "kbgraph.search": (4, "search"),
    "kbgraph.learning": (5, "learning"),
    "kbgraph.transfer": (6, "exchange"),
    "kbgraph.skills": (6, "exchange"),
    "kbgraph.audit": (6, "exchange"),
    "kbgraph": (7, "façade"),  # kbgraph/__init__, kb.py, async_kb.py
    "kbgraph.tools": (8, "tools"),
    "kbgraph.cli": (9, "ways in"),
    "kbgraph.mcp_server": (9, "ways in"),
    "kbgraph.http_api": (9, "ways in"),
    "kbgraph.report": (9, "ways in"),
    "kbgraph.inspect": (9, "ways in"),
    "kbgraph.integrations": (9, "ways in"),
    "kbgraph.bench": (9, "ways in"),
}
WAYS_IN_THAT_LAUNCH_OTHERS = {"kbgraph.cli"}
# Layers that sit side by side although ranked: the first never imports the second.
APART: set[tuple[str, str]] = {("kbgraph.search", "kbgraph.ingest")}

# Arrows that still point the wrong way, as "importer -> imported". The list may only shrink:
# a new wrong arrow fails, and so does an entry here that no longer occurs.
KNOWN_WRONG_ARROWS: set[str] = set()

MAX_LINES = 400
# Modules still over MAX_LINES, with the size they may not outgrow. Also a list that only shrinks.
KNOWN_LONG_MODULES: dict[str, int] = {}


@cache
def source_files() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for folder, package in SOURCE_FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if folder == "kbgraph" and parts and parts[0] in ("ingest", "search"):
                continue  # not there in a checkout; only in an installed copy
            modules[".".join((package, *parts))] = path
    return modules


def layer_key(module: str) -> str:
    best = ""
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return best


def imported_modules(module: str, path: Path) -> set[str]:
    """Every kbgraph module `path` imports, at any depth of the file (functions and TYPE_CHECKING too)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from kbgraph import http_api`
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return {name for name in found if name == "kbgraph" or name.startswith("kbgraph.")}


def wrong_arrows() -> set[str]:
    modules = source_files()
    wrong: set[str] = set()
    for module, path in modules.items():
        own = layer_key(module)
        own_rank = LAYERS[own][0]
        for imported in imported_modules(module, path):
            # `from kbgraph.x import name` also records kbgraph.x.name; keep only real modules or packages
            target = imported if imported in modules or imported == "kbgraph" else imported.rpartition(".")[0]
            if target not in modules:
                continue
            other = layer_key(target)
            other_rank = LAYERS[other][0]
            upward = other_rank > own_rank
            between_ways_in = (own_rank == other_rank == LAYERS["kbgraph.cli"][0] and own != other
                               and own not in WAYS_IN_THAT_LAUNCH_OTHERS)
            apart = (own, other) in APART
            if upward or between_ways_in or apart:
                wrong.add(f"{module} -> {target}")
    return wrong


def with_layers(arrow: str) -> str:
    """``a -> b`` as ``a -> b  (ingest -> façade)``, so a failure says which rule it breaks."""
    importer, imported = arrow.split(" -> ")
    return f"{arrow}  ({LAYERS[layer_key(importer)][1]} -> {LAYERS[layer_key(imported)][1]})"


def test_every_module_belongs_to_a_layer() -> None:
    assert all(layer_key(module) for module in source_files())


def test_imports_point_down_the_layers() -> None:
    wrong = wrong_arrows()
    new = sorted(wrong - KNOWN_WRONG_ARROWS)
    assert not new, ("imports that point up the layers (or between ways in, or from search to ingest):\n"
                     + "\n".join(map(with_layers, new)))


def test_the_list_of_known_wrong_arrows_only_shrinks() -> None:
    gone = sorted(KNOWN_WRONG_ARROWS - wrong_arrows())
    assert not gone, "fixed, so remove from KNOWN_WRONG_ARROWS:\n" + "\n".join(gone)


def test_modules_stay_small() -> None:
    too_long = []
    for module, path in sorted(source_files().items()):
        lines = len(path.read_text().splitlines())
        if lines > KNOWN_LONG_MODULES.get(module, MAX_LINES):
            too_long.append(f"{module}: {lines} lines")
    assert not too_long, f"split these (the limit is {MAX_LINES} lines):\n" + "\n".join(too_long)


def test_the_list_of_long_modules_only_shrinks() -> None:
    modules = source_files()
    short_now = sorted(name for name in KNOWN_LONG_MODULES
                       if name not in modules or len(modules[name].read_text().splitlines()) <= MAX_LINES)
    assert not short_now, "no longer over the limit, so remove from KNOWN_LONG_MODULES: " + ", ".join(short_now)


SCORING = "kbgraph.search.scoring"


def scoring_names_used(module: str, path: Path) -> set[str]:
    """The names of kbgraph.search.scoring that ``path`` imports (``from kbgraph.search.scoring[._x]
    import name``, or ``scoring.name`` after importing the package) and then uses."""
    tree = ast.parse(path.read_text(), str(path))
    imported: dict[str, str] = {}  # local name -> scoring name
    packages: set[str] = set()  # local names of the package itself
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(SCORING):
            imported.update({alias.asname or alias.name: alias.name for alias in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module == "kbgraph.search":
            packages.update(alias.asname or alias.name for alias in node.names if alias.name == "scoring")
        elif isinstance(node, ast.Import):
            packages.update(alias.asname for alias in node.names if alias.name == SCORING and alias.asname)
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in imported:
            used.add(imported[node.id])
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in packages:
            used.add(node.attr)
    return used


def test_every_exported_scoring_formula_is_used_outside_scoring_and_tests() -> None:
    import kbgraph.search.scoring as scoring

    used: set[str] = set()
    for module, path in source_files().items():
        if module != SCORING and not module.startswith(SCORING + "."):
            used |= scoring_names_used(module, path)
    formulas = {name for name in scoring.__all__ if inspect.isfunction(getattr(scoring, name))}
    assert len(formulas) > 10, "the check would pass vacuously: kbgraph.search.scoring exports formulas"
    unused = sorted(formulas - used)
    assert not unused, (
        "exported by kbgraph.search.scoring but used by no code outside it (tests do not count): "
        + ", ".join(unused) + ". Call it where the search computes the same thing, or delete it with its tests.")
