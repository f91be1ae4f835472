"""``kbgraph cypher list | show | run``: the inspection queries of ``cypher/inspect/`` for people.

``run`` takes a query's name (or the path of a ``.cypher`` file written the same way), its
parameters as ``--param name=value``, fills ``$kb`` from ``--namespace`` or the settings, and runs it
read-only: a statement that would write is refused with one line, nothing is run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kbgraph.cli._common import JsonOption, NamespaceOption, _print_json, _settings, err, out
from kbgraph.store.connection import connect
from kbgraph.core.errors import InvalidInputError
from kbgraph.inspect import (
    InspectionLibrary,
    InspectionQuery,
    InspectionResult,
    InspectionRunner,
    coerce_assignments,
    describe_parameters,
    load_query_file,
    parse_assignments,
)
from kbgraph.core.settings import checked_namespace
from kbgraph.core.terminal import plain

# Longer texts are cut in row listings and tables; --json always carries every value in full.
CELL_CHARS = 160
TABLE_CELL_CHARS = 80
SHORT_CELL_CHARS = 40
_ISO_DATETIME = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?(\[[^\]]+\])?")

cypher_app = typer.Typer(
    help="Inspection queries for people (cypher/inspect/): list them, show one, run one read-only. "
         "Each also runs unchanged in cypher-shell and Neo4j Browser.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(cypher_app, name="cypher")


def _load(name: str, library: InspectionLibrary) -> InspectionQuery:
    """A shipped query by name, or a file of your own by path (anything ending in .cypher or with a /)."""
    if name.endswith(".cypher") or "/" in name:
        return load_query_file(Path(name))
    return library.get(name)


def _cut(text: str, limit: int = CELL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _timestamp(text: str) -> str | None:
    """``2026-11-22 12:46:51`` for an ISO 8601 date-time (the seconds are enough to read), else None."""
    match = _ISO_DATETIME.fullmatch(text)
    return f"{match.group(1)} {match.group(2)}" if match else None


def _is_entity(value: Any, kind: str) -> bool:
    return isinstance(value, dict) and value.get("_kind") == kind


def _node_caption(node: dict[str, Any], with_text: bool = True) -> str:
    """``(:Experience exp_12 "A customer …")``: labels, key and the text a person recognises it by."""
    properties = node["properties"]
    key = properties.get("id") or properties.get("name") or node["element_id"]
    text = next((properties[p] for p in ("name", "label", "text", "problem", "action") if properties.get(p)), None)
    shown = f' "{_cut(str(text), 60)}"' if with_text and text is not None and text != key else ""
    return f"(:{':'.join(node['labels'])} {key}{shown})"


def _path_caption(path: dict[str, Any]) -> str:
    """``(:Experience a)-[:ADAPTATION]->(:Experience b)``: a path by its nodes' keys."""
    nodes, relationships = path["nodes"], path["relationships"]
    parts = [_node_caption(nodes[0], with_text=False)] if nodes else []
    for index, rel in enumerate(relationships):
        forward = rel["start"] == nodes[index]["element_id"]
        arrow = f"-[:{rel['type']}]->" if forward else f"<-[:{rel['type']}]-"
        parts.append(arrow + _node_caption(nodes[index + 1], with_text=False))
    return "".join(parts)


# Keys a map is read by, shown first; the rest follow alphabetically (Neo4j keeps no key order).
LEAD_KEYS = ("order", "step_order", "type", "direction", "action", "concept", "meta_concept", "name", "id",
             "other_id", "issue_type")


def _ordered(mapping: dict[str, Any]) -> list[tuple[str, Any]]:
    lead = [(key, mapping[key]) for key in LEAD_KEYS if key in mapping]
    return lead + sorted((k, v) for k, v in mapping.items() if k not in LEAD_KEYS)


def _caption(value: Any, limit: int = CELL_CHARS, separator: str = ", ") -> str:
    """One value as text: on one line, or a list's items on lines of their own (``separator="\\n"``)."""
    if value is None:
        return "—"
    if _is_entity(value, "node"):
        return _node_caption(value)
    if _is_entity(value, "relationship"):
        weight = value["properties"].get("weight")
        return f"[:{value['type']}{f' {weight:.3g}' if isinstance(weight, float) else ''}]"
    if _is_entity(value, "path"):
        return _path_caption(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and separator == "\n":
        return "\n".join(_caption(item, limit) for item in value) or "[]"
    if isinstance(value, list):
        return _cut(separator.join(_caption(item) for item in value), limit) or "[]"
    if isinstance(value, dict):
        # A map in a list (a step, a relation): its non-empty entries, lead keys first.
        return _cut(" · ".join(f"{k}: {_caption(v)}" for k, v in _ordered(value) if v not in (None, "", [])), limit)
    if isinstance(value, str):
        return _timestamp(value) or _cut(value, limit)
    return _cut(str(value), limit)


def _is_nested(value: Any) -> bool:
    if isinstance(value, dict):
        return "_kind" not in value
    return isinstance(value, list) and any(isinstance(item, dict | list) for item in value)


def _rows(count: int) -> str:
    return f"{count} row" + ("" if count == 1 else "s")


def _print_result(result: InspectionResult) -> None:
    if not result.rows:
        out.print("(no rows)")
        return
    if not any(_is_nested(row[c]) for row in result.rows for c in result.columns):
        table = Table(show_lines=True)
        cells = {c: [_caption(row[c], TABLE_CELL_CHARS, separator="\n") for row in result.rows] for c in result.columns}
        for column in result.columns:
            # Short values (ids, numbers, names) stay whole on one line; long texts wrap.
            widest = max(len(line) for cell in cells[column] for line in cell.splitlines() or [""])
            table.add_column(plain(column), no_wrap=widest <= SHORT_CELL_CHARS)  # a query file's alias: text, not markup
        for index in range(len(result.rows)):
            table.add_row(*(plain(cells[c][index]) for c in result.columns))
        out.print(table)
        return
    # Rows holding maps or lists of maps and nodes (an experience with its steps, a neighbourhood):
    # one block per row, one line per item, rather than a table nobody can read.
    for number, row in enumerate(result.rows, start=1):
        out.print(f"── row {number} ──", markup=False)
        for column in result.columns:
            value = row[column]
            if isinstance(value, dict) and "_kind" not in value:
                out.print(f"{column}:", markup=False, highlight=False)
                for key, item in _ordered(value):
                    out.print(f"  {key}: {_caption(item)}", markup=False, highlight=False)
            elif isinstance(value, list) and _is_nested(value):
                out.print(f"{column}: ({len(value)})", markup=False, highlight=False)
                for item in value:
                    out.print(f"  - {_caption(item)}", markup=False, highlight=False)
            else:
                out.print(f"{column}: {_caption(value)}", markup=False, highlight=False)


@cypher_app.command("list")
def list_queries(as_json: JsonOption = False) -> None:
    """The inspection queries: name, what each answers, parameters with their defaults."""
    queries = InspectionLibrary().all()
    if as_json:
        _print_json([{"name": q.name, "summary": q.summary,
                      "parameters": [p.model_dump(exclude={"browser_value"}) for p in q.parameters]}
                     for q in queries])
        return
    table = Table("query", "answers", "parameters")
    for query in queries:
        table.add_row(query.name, query.summary, describe_parameters(query.parameters))
    out.print(table)
    out.print("kbgraph cypher show NAME prints one; kbgraph cypher run NAME --param name=value runs it.",
              markup=False, highlight=False)


@cypher_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="A query's name (see `kbgraph cypher list`) or a .cypher file")],
    as_json: JsonOption = False,
) -> None:
    """Print a query as shipped: header, parameters, statement — ready to paste into cypher-shell or Browser."""
    query = _load(name, InspectionLibrary())
    if as_json:
        _print_json(query.model_dump(exclude={"text"}))
        return
    out.print(query.text.rstrip(), markup=False, highlight=False)


@cypher_app.command("run")
def run(
    name: Annotated[str, typer.Argument(help="A query's name (see `kbgraph cypher list`) or a .cypher file")],
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p",
        help='A parameter: NAME=VALUE (repeatable). Values are read as the parameter\'s type: numbers, '
             'true/false, null, JSON lists/objects, text ("…" to force text)')] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run an inspection query read-only ($kb is the namespace unless given with --param kb=…).
    It is not confined to the namespace: any read of the database runs, so -p kb=other or a
    query of your own reads other namespaces too. Give it to people who may read them all."""
    query = _load(name, InspectionLibrary())
    given = coerce_assignments(query, parse_assignments(param or []))
    if isinstance(given.get("kb"), str):  # -p kb="" is an error, as -n "" is, never "no namespace"
        try:
            checked_namespace(given["kb"])
        except InvalidInputError as invalid:
            raise InvalidInputError([f"--param kb: {problem}" for problem in invalid.problems],
                                    headline="cannot run the query, nothing was run") from None
    settings = _settings(namespace)
    if namespace is not None and given.get("kb", namespace) != namespace:
        raise InvalidInputError([f"--namespace {namespace} and --param kb={given['kb']} disagree: give one"],
                                headline="cannot run the query, nothing was run")
    query.bind(given, settings.namespace)  # a missing or unknown parameter fails before connecting
    connection = connect(settings, quiet=True)
    try:
        result = InspectionRunner(connection.driver, connection.database).run(query, given, settings.namespace)
    finally:
        connection.driver.close()
    if as_json:
        _print_json(result.model_dump())
        return
    _print_result(result)
    shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in result.parameters.items())
    err.print(f"{_rows(len(result.rows))} — {query.name}({shown})", markup=False, highlight=False)
