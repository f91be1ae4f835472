"""Inspection queries for people: the parameterised Cypher files in ``cypher/inspect/``.

Each file is one read-only statement that also runs unchanged in cypher-shell and Neo4j Browser.
It starts with ``//`` comments saying what it answers, then declares its parameters, one per line::

    // @param limit 10 — how many rows            (a JSON literal: the default)
    // @param id required — the experience's id   (no default: it must be given)

and repeats them as the ``:param`` lines to paste into cypher-shell or the Browser::

    // :param limit => 10

This module lists the queries with their headers, turns ``name=value`` pairs into typed
parameters, checks that every ``$parameter`` a statement uses is given or has a documented default,
and runs the statement in READ access mode. A query that would write is refused twice: first by
its plan (``EXPLAIN`` classifies every statement as read, write, read-write or schema), then by
Neo4j itself, which rejects writes in a READ transaction.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import neo4j
from neo4j.graph import Entity, Node, Relationship
from neo4j.graph import Path as GraphPath
from neo4j.spatial import Point
from neo4j.time import Date, DateTime, Duration, Time
from pydantic import BaseModel, ConfigDict, Field

from kbgraph.errors import InvalidInputError, KbgraphError
from kbgraph.value_bounds import MAX_NESTING_DEPTH, value_problem

INSPECT_FOLDER = "inspect"
NAMESPACE_PARAMETER = "kb"
#: A query file of your own is read up to this size (the shipped ones are a few kB).
MAX_QUERY_FILE_BYTES = 1_000_000
# Node properties the runner leaves out of its answers: 384 (or more) numbers each, noise to a reader.
VECTOR_PROPERTY_SUFFIX = "embedding"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM_DECLARATION = re.compile(r"^@param\s+(?P<name>\S+)\s*(?P<rest>.*)$")
_BROWSER_PARAM = re.compile(r"^:param\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=>\s*(?P<value>.+?)\s*;?$")
_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_DESCRIPTION_DASHES = ("—", "--", "-", "–")


class InspectionError(KbgraphError):
    """An inspection query that cannot be loaded or run: unknown name, malformed file, or a
    statement Neo4j refused."""


class WriteRefusedError(InspectionError):
    """The statement would write: inspection runs read-only, so it was not run."""


class QueryParameter(BaseModel):
    """One ``@param`` line of a query's header."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    required: bool = Field(default=False)
    # The documented default (a JSON value); unused when ``required``.
    default: Any = Field(default=None)
    # The Cypher expression of the header's ``:param`` line, as pasted into cypher-shell/Browser.
    browser_value: str | None = Field(default=None)

    @property
    def type_hint(self) -> Any:
        """A value whose type ``name=value`` text is read as: the default, else the ``:param`` example."""
        if self.default is not None:
            return self.default
        return _json_literal(self.browser_value) if self.browser_value is not None else None

    def as_text(self) -> str:
        if self.required:
            return f"{self.name} (required)"
        return f"{self.name}={json.dumps(self.default, ensure_ascii=False)}"


class InspectionQuery(BaseModel):
    """One inspection query: its header, its statement and its parameters."""

    model_config = ConfigDict(frozen=True)

    name: str
    source: str
    summary: str
    header: str
    cypher: str
    text: str
    parameters: tuple[QueryParameter, ...]
    # ``$names`` the statement uses, in order of first use.
    used_parameters: tuple[str, ...]
    # ``:param`` lines of the header: name → Cypher expression.
    browser_parameters: dict[str, str]

    def parameter(self, name: str) -> QueryParameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    @property
    def accepted_parameters(self) -> list[str]:
        """Documented parameters first (header order), then any the statement uses undocumented."""
        declared = [p.name for p in self.parameters]
        return declared + [name for name in self.used_parameters if name not in declared]

    def bind(self, given: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        """The parameters to run the statement with: ``given`` values, then documented defaults.

        ``namespace`` fills ``$kb`` when it is used and not given. Raises InvalidInputError naming
        every unknown, and every missing, parameter."""
        problems = [
            f"{self.name}: no parameter {name!r}; it takes " + (", ".join(self.accepted_parameters) or "none")
            for name in given if name not in self.accepted_parameters
        ]
        bound: dict[str, Any] = {}
        for name in self.used_parameters:
            declared = self.parameter(name)
            if name in given:
                bound[name] = given[name]
            elif name == NAMESPACE_PARAMETER and namespace is not None:
                bound[name] = namespace
            elif declared is not None and not declared.required:
                bound[name] = declared.default
            elif declared is not None:
                problems.append(f"{self.name}: missing parameter {name!r} ({declared.description}): "
                                f"give --param {name}=VALUE")
            else:
                problems.append(f"{self.name}: missing parameter {name!r} (the statement uses ${name} and its "
                                f"header documents no default): give --param {name}=VALUE")
        if problems:
            raise InvalidInputError(problems, headline="cannot run the query, nothing was run")
        return bound


class InspectionResult(BaseModel):
    """The answer of one inspection query, in plain JSON-ready values (see :func:`plain`)."""

    query: str
    parameters: dict[str, Any]
    columns: list[str]
    rows: list[dict[str, Any]]


# -- reading files -----------------------------------------------------------------------------------


def _json_literal(text: str) -> Any:
    """The JSON value of ``text``, or None when it is not JSON (a Cypher-only expression)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a query can use")


def _scan(cypher: str) -> tuple[list[str], list[int]]:
    """``$parameter`` names (in order of first use) and the offsets of ``;`` in ``cypher``, outside
    string literals, quoted names and comments."""
    names: list[str] = []
    semicolons: list[int] = []
    i, n = 0, len(cypher)
    while i < n:
        ch = cypher[i]
        if ch in "'\"":
            i += 1
            while i < n and cypher[i] != ch:
                i += 2 if cypher[i] == "\\" else 1
            i += 1
        elif ch == "`":
            end = cypher.find("`", i + 1)
            i = n if end < 0 else end + 1
        elif cypher.startswith("//", i):
            end = cypher.find("\n", i)
            i = n if end < 0 else end
        elif cypher.startswith("/*", i):
            end = cypher.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch == "$":
            match = _IDENTIFIER.match(cypher, i + 1)
            if match and match.group(0) not in names:
                names.append(match.group(0))
            i = match.end() if match else i + 1
        else:
            if ch == ";":
                semicolons.append(i)
            i += 1
    return names, semicolons


def statement_parameters(cypher: str) -> list[str]:
    """The ``$parameter`` names a Cypher statement uses, in order of first use (string literals,
    quoted names and comments are skipped)."""
    return _scan(cypher)[0]


def _parse_declaration(where: str, line: str) -> tuple[QueryParameter | None, str | None]:
    match = _PARAM_DECLARATION.match(line)
    if match is None:
        return None, None
    name, rest = match.group("name"), match.group("rest").strip()
    if not _IDENTIFIER.fullmatch(name):
        return None, f"{where}: @param {name!r}: not a parameter name"
    required = rest.startswith("required")
    default: Any = None
    if required:
        rest = rest[len("required"):].strip()
    else:
        try:
            default, end = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode(rest)
        except ValueError:
            return None, (f"{where}: @param {name}: expected `required` or a default written as JSON "
                          f"(10, 0.5, true, null, \"text\", [\"a\"]) before the description, got {rest!r}")
        rest = rest[end:].strip()
    dash = next((d for d in _DESCRIPTION_DASHES if rest.startswith(d)), None)
    description = rest[len(dash):].strip() if dash else ""
    if not description:
        return None, f"{where}: @param {name}: add a description after ' — '"
    return QueryParameter(name=name, description=description, required=required, default=default), None


def parse_inspection_query(name: str, text: str, source: str = "") -> InspectionQuery:
    """Reads one inspection file. Raises InspectionError naming each problem of its header."""
    where = source or f"{name}.cypher"
    lines = text.splitlines()
    header_lines: list[str] = []
    position = 0
    for position, line in enumerate(lines):  # the body starts where the header ends
        stripped = line.strip()
        if stripped.startswith("//"):
            header_lines.append(stripped[2:].removeprefix(" ").rstrip())
        elif stripped:
            break
    else:
        position = len(lines)
    cypher = "\n".join(lines[position:]).strip()
    problems: list[str] = []
    summary = next((line.strip() for line in header_lines if line.strip()), "")
    if not summary:
        problems.append(f"{where}: start with // comments saying what the query answers and its parameters")
    if not cypher:
        problems.append(f"{where}: no statement after the header")
    used, semicolons = _scan(cypher)
    if semicolons and semicolons[-1] == len(cypher) - 1:
        cypher = cypher[:-1].rstrip()
        semicolons.pop()
    if semicolons:
        problems.append(f"{where}: holds more than one statement (a ';' before the end); one query per file")
    declared: list[QueryParameter] = []
    browser: dict[str, str] = {}
    for number, line in enumerate(header_lines, start=1):
        parameter, problem = _parse_declaration(f"{where}:{number}", line.strip())
        if problem:
            problems.append(problem)
        elif parameter is not None:
            if any(p.name == parameter.name for p in declared):
                problems.append(f"{where}:{number}: @param {parameter.name} is declared twice")
            declared.append(parameter)
        browser_line = _BROWSER_PARAM.match(line.strip())
        if browser_line:
            browser[browser_line.group("name")] = browser_line.group("value")
    if problems:
        raise InspectionError("cannot read inspection query:\n  " + "\n  ".join(problems))
    parameters = tuple(p.model_copy(update={"browser_value": browser.get(p.name)}) for p in declared)
    return InspectionQuery(
        name=name, source=where, summary=summary, header="\n".join(header_lines).strip(), cypher=cypher,
        text=text, parameters=parameters, used_parameters=tuple(used), browser_parameters=browser,
    )


def load_query_file(path: Path) -> InspectionQuery:
    """An inspection query of your own, from a ``.cypher`` file written like the shipped ones."""
    if not path.is_file():
        raise InspectionError(f"no such file: {path}" if not path.exists() else f"not a file: {path}")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_QUERY_FILE_BYTES + 1)
    except OSError as error:
        raise InspectionError(f"cannot read {path}: {error.strerror or error}") from None
    if len(raw) > MAX_QUERY_FILE_BYTES:  # read no further: a query is a page of text, not a data file
        raise InspectionError(f"{path}: over {MAX_QUERY_FILE_BYTES:,} bytes, not an inspection query")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InspectionError(f"{path}: not UTF-8 text (byte {error.start + 1} is 0x{raw[error.start]:02x})") from None
    return parse_inspection_query(path.stem, text, str(path))


class InspectionLibrary:
    """The inspection queries of one folder: ``cypher/inspect/`` as shipped, unless told otherwise."""

    def __init__(self, folder: Traversable | Path | None = None):
        self.folder: Traversable | Path = folder if folder is not None else resources.files("kbgraph.cypher") / INSPECT_FOLDER

    def names(self) -> list[str]:
        return sorted(p.name[: -len(".cypher")] for p in self.folder.iterdir() if p.name.endswith(".cypher"))

    def get(self, name: str) -> InspectionQuery:
        path = self.folder / f"{name}.cypher"
        if not _IDENTIFIER.fullmatch(name) or not path.is_file():
            raise InspectionError(f"no inspection query {name!r}; there are: {', '.join(self.names())} "
                                  "(or give the path of a .cypher file)")
        return parse_inspection_query(name, path.read_text(encoding="utf-8"), f"cypher/{INSPECT_FOLDER}/{name}.cypher")

    def all(self) -> list[InspectionQuery]:
        return [self.get(name) for name in self.names()]


# -- parameters from the command line ----------------------------------------------------------------


def parse_assignments(items: Iterable[str], option: str = "--param") -> dict[str, str]:
    """``name=value`` texts → {name: value text}. Raises InvalidInputError for malformed or repeated names."""
    found: dict[str, str] = {}
    problems: list[str] = []
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not _IDENTIFIER.fullmatch(name):
            problems.append(f"{option} {item!r}: expected name=value, the name made of letters, digits and _")
        elif name in found:
            problems.append(f"{option} {name}: given twice")
        else:
            found[name] = raw
    if problems:
        raise InvalidInputError(problems, headline="cannot run the query, nothing was run")
    return found


def coerce_value(raw: str) -> Any:
    """The value a ``name=value`` text stands for: true/false, null, an integer, a decimal, a JSON
    list, object or "quoted string"; anything else is the text itself. Raises ValueError when the
    text looks like JSON ([, { or ") but is not."""
    text = raw.strip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "null":
        return None
    if _INTEGER.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    if text[:1] in ('[', '{', '"'):
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except ValueError as error:
            raise ValueError(f"looks like JSON but is not valid JSON ({error})") from None
        except RecursionError:  # the decoder recurses once per level; value_problem bounds the rest
            raise ValueError(f"nested deeper than {MAX_NESTING_DEPTH} levels") from None
    return raw


def _coerce_like(raw: str, like: Any) -> Any:
    """``raw`` read as the type of ``like`` (a parameter's default or example); None: no guidance."""
    if isinstance(like, str):
        # Text parameters take the text as given (domain=2024 is the domain "2024"); "…" unquotes.
        stripped = raw.strip()
        return coerce_value(stripped) if stripped.startswith('"') else raw
    value = coerce_value(raw)
    if like is None or value is None:
        return value
    if isinstance(like, bool):
        if not isinstance(value, bool):
            raise ValueError("expected true or false")
    elif isinstance(like, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError("expected a whole number")
    elif isinstance(like, float):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError("expected a number")
        value = float(value)
    elif isinstance(like, list) and not isinstance(value, list):
        raise ValueError('expected a JSON list, e.g. ["ADAPTATION", "ALTERNATIVE"]')
    elif isinstance(like, dict) and not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


def coerce_assignments(query: InspectionQuery, raw: Mapping[str, str], option: str = "--param") -> dict[str, Any]:
    """Typed values for ``name=value`` texts, each read as its parameter's documented type (a text
    parameter keeps 2024 as text; a number parameter refuses ten). Unknown names are left for
    :meth:`InspectionQuery.bind` to report."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    for name, text in raw.items():
        declared = query.parameter(name)
        try:
            values[name] = _coerce_like(text, declared.type_hint if declared else None)
        except ValueError as error:
            problems.append(f"{option} {name}={text:.80}: {error}")
            continue
        if problem := value_problem(values[name]):  # an integer Neo4j cannot hold, deep JSON, …
            problems.append(f"{option} {name}={text:.80}: {problem.removeprefix('(value): ')}")
    if problems:
        raise InvalidInputError(problems, headline="cannot run the query, nothing was run")
    return values


# -- answers as plain values ---------------------------------------------------------------------------


def _properties(entity: Entity) -> dict[str, Any]:
    return {key: plain(value) for key, value in sorted(entity.items())
            if not key.endswith(VECTOR_PROPERTY_SUFFIX)}


def plain(value: Any) -> Any:
    """A Neo4j value as JSON-ready Python: nodes ``{"_kind": "node", "labels", "element_id",
    "properties"}`` (vectors left out), relationships ``{"_kind": "relationship", "type", "start",
    "end", …}`` (start and end are element ids), paths ``{"_kind": "path", "nodes",
    "relationships"}``, temporal values as ISO 8601 text."""
    if isinstance(value, Node):
        return {"_kind": "node", "labels": sorted(value.labels), "element_id": value.element_id,
                "properties": _properties(value)}
    if isinstance(value, Relationship):
        return {"_kind": "relationship", "type": value.type, "element_id": value.element_id,
                "start": value.start_node.element_id if value.start_node is not None else None,
                "end": value.end_node.element_id if value.end_node is not None else None,
                "properties": _properties(value)}
    if isinstance(value, GraphPath):
        return {"_kind": "path", "nodes": [plain(n) for n in value.nodes],
                "relationships": [plain(r) for r in value.relationships]}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, Date | Time | DateTime | Duration):
        return value.iso_format()
    if isinstance(value, Point):
        return {"srid": value.srid, "coordinates": list(value)}
    return value


# -- running ---------------------------------------------------------------------------------------------


READ_QUERY_TYPE = "r"
_QUERY_TYPES = {"r": "read", "rw": "read-write", "w": "write", "s": "schema"}
_ACCESS_MODE_ERROR = "Neo.ClientError.Statement.AccessMode"


class InspectionRunner:
    """Runs inspection queries read-only against one database."""

    def __init__(self, driver: neo4j.Driver, database: str = "neo4j"):
        self.driver = driver
        self.database = database

    def query_type(self, query: InspectionQuery, parameters: Mapping[str, Any]) -> str:
        """Neo4j's classification of the statement from its plan (``EXPLAIN``, nothing runs):
        r (read), rw, w (writes) or s (schema). Also checks syntax and parameters."""
        result = self._read(query, f"EXPLAIN {query.cypher}", parameters)
        return result.summary.query_type or ""

    def run(self, query: InspectionQuery, given: Mapping[str, Any] | None = None,
            namespace: str | None = None) -> InspectionResult:
        """Binds the parameters (:meth:`InspectionQuery.bind`), refuses a statement that would write,
        and runs it in READ access mode."""
        parameters = query.bind(given or {}, namespace)
        kind = self.query_type(query, parameters)
        if kind != READ_QUERY_TYPE:
            raise WriteRefusedError(
                f"inspection query {query.name!r} is a {_QUERY_TYPES.get(kind, kind)} statement: inspection "
                "only reads, so it was not run and nothing was written")
        return self.execute_read(query, parameters)

    def execute_read(self, query: InspectionQuery, parameters: Mapping[str, Any]) -> InspectionResult:
        """Runs the statement in a READ transaction, without :meth:`run`'s plan check: Neo4j itself
        refuses any write there (raised as WriteRefusedError; the transaction is rolled back)."""
        result = self._read(query, query.cypher, parameters)
        return InspectionResult(
            query=query.name, parameters=dict(parameters), columns=list(result.keys),
            rows=[{key: plain(record[key]) for key in result.keys} for record in result.records],
        )

    def _read(self, query: InspectionQuery, cypher: str, parameters: Mapping[str, Any]) -> neo4j.EagerResult:
        try:
            result: neo4j.EagerResult = self.driver.execute_query(
                cypher, dict(parameters), database_=self.database, routing_=neo4j.RoutingControl.READ)
        except neo4j.exceptions.ClientError as error:
            if error.code == _ACCESS_MODE_ERROR:
                raise WriteRefusedError(
                    f"inspection query {query.name!r} tried to write and Neo4j refused it (READ access mode): "
                    "inspection only reads, nothing was written") from None
            raise InspectionError(f"Neo4j refused inspection query {query.name!r} ({query.source}): "
                                  f"{error.code}: {error.message}") from None
        return result


def describe_parameters(parameters: Sequence[QueryParameter]) -> str:
    """``kb="default", id (required), limit=10`` — a query's parameters on one line."""
    return ", ".join(p.as_text() for p in parameters) or "none"
