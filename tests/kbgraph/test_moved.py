"""Code written against the old module paths keeps working, and is told where the modules went."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from kbgraph._moved import MOVED, new_path  # importing it runs kbgraph/__init__, which installs the finder


@pytest.fixture
def forget_old_paths() -> Iterator[None]:
    """Each test imports the old names afresh, so each import warns again."""
    def forget() -> None:
        for name in list(sys.modules):
            if new_path(name) is not None:
                del sys.modules[name]
    forget()
    yield
    forget()


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_the_same_module_as_its_new_one_and_warns(old: str, forget_old_paths: None) -> None:
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__ is not None and module.__spec__.name == MOVED[old]


def test_a_module_of_a_moved_package_is_the_one_module_not_a_copy(forget_old_paths: None) -> None:
    with pytest.warns(DeprecationWarning):
        old = importlib.import_module("kbgraph.managed.server")
    assert old is importlib.import_module("kbgraph.store.managed.server")


def test_names_import_from_old_paths(forget_old_paths: None) -> None:
    with pytest.warns(DeprecationWarning):
        from kbgraph.gateway import Neo4jGateway
    from kbgraph.store.gateway import Neo4jGateway as moved
    assert Neo4jGateway is moved


def test_a_path_that_never_existed_is_still_missing() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("kbgraph.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("kbgraph.managed.no_such_module")


def test_every_new_path_exists() -> None:
    for new in MOVED.values():
        importlib.import_module(new)


def test_a_fresh_interpreter_needs_nothing_but_the_old_import() -> None:
    program = "import kbgraph.experience_store as m; print(m.__name__)"
    result = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", program],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "kbgraph.store.experiences"
