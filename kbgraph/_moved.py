"""Old module paths, from before the code moved into layer folders (docs/architecture.md).

``import kbgraph.gateway`` still works: it gives the module now at ``kbgraph.store.gateway`` (the
same module object, so its names, and patches made through either path, are shared) and warns
with a DeprecationWarning that names the new path. The idea is pydantic's ``_migration.py``; the
table is here until kbgraph 0.2, and nothing inside kbgraph imports an old path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

# old path -> new path; a package's modules move with it (kbgraph.managed.server -> kbgraph.store.managed.server)
MOVED: dict[str, str] = {
    "kbgraph.ingest.operations": "kbgraph.core.operation_keys",
    "kbgraph.errors": "kbgraph.core.errors",
    "kbgraph.ids": "kbgraph.core.ids",
    "kbgraph.settings": "kbgraph.core.settings",
    "kbgraph.value_bounds": "kbgraph.core.value_bounds",
    "kbgraph.redact": "kbgraph.core.redact",
    "kbgraph.jsonl": "kbgraph.core.jsonl",
    "kbgraph.terminal": "kbgraph.core.terminal",
    "kbgraph.progress": "kbgraph.core.progress",
    "kbgraph.processes": "kbgraph.core.processes",
    "kbgraph.models": "kbgraph.core.models",
    "kbgraph.local_llm": "kbgraph.llm.local_server",
    "kbgraph.truncated_json": "kbgraph.llm.truncated_json",
    "kbgraph.cypher_files": "kbgraph.store.queries",
    "kbgraph.gateway": "kbgraph.store.gateway",
    "kbgraph.aio": "kbgraph.store.aio",
    "kbgraph.deadline": "kbgraph.store.deadline",
    "kbgraph.connection": "kbgraph.store.connection",
    "kbgraph.schema": "kbgraph.store.schema",
    "kbgraph.experience_store": "kbgraph.store.experiences",
    "kbgraph.py2neo_bridge": "kbgraph.store.py2neo_bridge",
    "kbgraph.managed": "kbgraph.store.managed",
    "kbgraph.browser": "kbgraph.store.managed.browser",
    "kbgraph.feedback": "kbgraph.learning.feedback",
    "kbgraph.maintenance": "kbgraph.learning.maintenance",
    "kbgraph.agents": "kbgraph.learning.agents",
    "kbgraph.skills_export": "kbgraph.skills.export",
    "kbgraph.skills_plan": "kbgraph.skills.plan",
    "kbgraph.skills_render": "kbgraph.skills.render",
    "kbgraph.skills_folder": "kbgraph.skills.folder",
    "kbgraph.skills_names": "kbgraph.skills.names",
    "kbgraph.mcp_stdio": "kbgraph.mcp_server.stdio",
    "kbgraph.search.utility": "kbgraph.core.utility",
    "kbgraph.ingest.shapes": "kbgraph.core.shapes",
    "kbgraph.ingest.generalise": "kbgraph.core.generalise",
    "kbgraph.ingest.recovery": "kbgraph.core.recovery",
    "kbgraph.search.eval_data": "kbgraph.search.eval.data",
    "kbgraph.search.metrics": "kbgraph.search.eval.metrics",
    "kbgraph.search.baselines": "kbgraph.search.eval.baselines",
    "kbgraph.search.evaluate": "kbgraph.search.eval.evaluate",
    "kbgraph.search.teacher_eval": "kbgraph.search.eval.teacher",
}


def new_path(old: str) -> str | None:
    """Where the module once at ``old`` lives now, or None when it did not move."""
    package = old
    while package:
        if package in MOVED:
            return MOVED[package] + old[len(package):]
        package = package.rpartition(".")[0]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new path: one module object under two names."""

    def __init__(self, new: str) -> None:
        self.new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; import it from there (the old path goes in kbgraph 0.2)",
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just stamped the old name's spec on the module; give it its own back,
        # so the module keeps reporting where it really lives.
        module.__spec__ = self._spec


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds old module paths. It goes first on sys.meta_path: otherwise, once ``kbgraph.managed`` is
    aliased, the path finder would find ``kbgraph.managed.server`` in the package's folder and load
    a second copy of the module under the old name."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        new = new_path(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
