"""Loads Cypher from the ``cypher/`` folder (installed as ``kbgraph.cypher``).

Code names a query by its file's stem (``queries/experience_get.cypher`` is ``experience_get``);
the text is read once and cached. Nothing is ever formatted into a query: values are parameters.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from functools import cache
from typing import Any
from importlib import resources

_COMMENT = re.compile(r"^[ \t]*//.*$", re.MULTILINE)  # not \s*: it ran over every blank line after
_UNWOUND = re.compile(r"UNWIND \$(\w+) AS \w+\s")


def _folder(name: str) -> resources.abc.Traversable:
    return resources.files("kbgraph.cypher") / name


@cache
def query(name: str) -> str:
    """The text of ``cypher/queries/<name>.cypher``."""
    path = _folder("queries") / f"{name}.cypher"
    if not path.is_file():
        raise KeyError(f"no named query {name!r} in cypher/queries/")
    return path.read_text(encoding="utf-8").strip().rstrip(";")


#: What a named query that begins by unwinding a list (:func:`unwound_list`) returns when the list
#: is empty, when not no row: the one row its aggregates make of nothing. Checked against Neo4j for
#: every such query (tests/kbgraph/store/test_queries.py), which also fails for one left out here.
EMPTY_LIST_ANSWERS: Mapping[str, tuple[Mapping[str, Any], ...]] = {
    **dict.fromkeys(("failure_mode_upsert", "import_node_values", "import_relationship_values", "meta_concept_upsert",
                     "relation_upsert", "store_put"), ({"written": 0},)),
    **dict.fromkeys(("experience_upsert", "concept_insight_upsert"), ({"embedded": 0},)),
    **dict.fromkeys(("experience_delete", "relations_inferred_delete_some", "store_delete"), ({"deleted": 0},)),
    **dict.fromkeys(("meta_concept_link", "step_link_next"), ({"linked": 0},)),
    **dict.fromkeys(("search_candidates_feedback", "search_neighbours"), ({"rows": []},)),
    "abstract_experiences_rewrite": ({"rewritten": 0},),
    "experience_existing_ids": ({"ids": []},),
    "experience_merge": ({"merged": 0},),
    "experience_vector_bytes_fill": ({"filled": 0},),
    "experiences_unlinked_clear": ({"cleared": 0},),
    "ingested_records_mark": ({"marked": 0},),
    "step_texts_known": ({"keys": []},),
    "step_texts_migrate": ({"steps": 0, "disagreeing": 0},),
    "step_upsert": ({"written": 0, "missing": []},),
    "store_refresh_ttl": ({"refreshed": 0},),
}


@cache
def unwound_list(name: str) -> str | None:
    """The list parameter named query ``name`` begins by unwinding (``UNWIND $rows AS row`` as its
    first clause), or None. Such a query has no row to work on when the list is empty: it changes
    nothing and returns :func:`empty_list_answer`, so :func:`kbgraph.store.gateway.run_named` does
    not send it then. An add of one run sent ~10 of them empty (no relation changed, no abstract
    experience to rewrite, no step link, ...): each a statement of its transaction, and the first
    time after the server planned again a plan of its own, as Neo4j plans an empty list apart
    (kbgraph.store.plan_shape)."""
    found = _UNWOUND.match(_COMMENT.sub("", query(name)).lstrip())
    return found.group(1) if found else None


def nothing_to_unwind(name: str, params: Mapping[str, Any]) -> bool:
    """Named query ``name`` begins by unwinding a list ``params`` gives empty: it would change
    nothing (no change-feed note either) and return :func:`empty_list_answer`."""
    unwound = unwound_list(name)
    return unwound is not None and isinstance(value := params.get(unwound), (list, tuple)) and not value


def empty_list_answer(name: str) -> list[dict[str, Any]]:
    """The rows named query ``name`` returns when the list it begins by unwinding is empty (new
    ones each call: callers may change them)."""
    return [copy.deepcopy(dict(row)) for row in EMPTY_LIST_ANSWERS.get(name, ())]


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
