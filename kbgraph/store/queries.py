"""Loads Cypher from the ``cypher/`` folder (installed as ``kbgraph.cypher``).

Code names a query by its file's stem (``queries/experience_get.cypher`` is ``experience_get``);
the text is read once and cached. Nothing is ever formatted into a query: values are parameters.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_COMMENT = re.compile(r"^[ \t]*//.*$", re.MULTILINE)  # not \s*: it ran over every blank line after


def _folder(name: str) -> resources.abc.Traversable:
    return resources.files("kbgraph.cypher") / name


@cache
def query(name: str) -> str:
    """The text of ``cypher/queries/<name>.cypher``."""
    path = _folder("queries") / f"{name}.cypher"
    if not path.is_file():
        raise KeyError(f"no named query {name!r} in cypher/queries/")
    return path.read_text(encoding="utf-8").strip().rstrip(";")


def query_names(folder: str = "queries") -> list[str]:
    return sorted(p.name[: -len(".cypher")] for p in _folder(folder).iterdir() if p.name.endswith(".cypher"))


def statements(folder: str) -> list[tuple[str, str]]:
    """(file name, statement) for every statement of every file in ``cypher/<folder>/``, in
    file-name order. Statements end with ``;`` at the end of a line."""
    out: list[tuple[str, str]] = []
    for name in query_names(folder):
        text = _COMMENT.sub("", (_folder(folder) / f"{name}.cypher").read_text(encoding="utf-8"))
        for statement in re.split(r";\s*$", text, flags=re.MULTILINE):
            if statement.strip():
                out.append((name, statement.strip()))
    return out
