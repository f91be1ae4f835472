"""Reading inspection query files: the header (``// @param`` and ``// :param`` lines), the one
statement after it and the ``$parameters`` it uses; the shipped folder as a library by name.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from kbgraph.inspect._query import (
    _IDENTIFIER,
    INSPECT_FOLDER,
    InspectionError,
    InspectionQuery,
    QueryParameter,
    _refuse_constant,
)

#: A query file of your own is read up to this size (the shipped ones are a few kB).
MAX_QUERY_FILE_BYTES = 1_000_000

_PARAM_DECLARATION = re.compile(r"^@param\s+(?P<name>\S+)\s*(?P<rest>.*)$")
_BROWSER_PARAM = re.compile(r"^:param\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*=>\s*(?P<value>.+?)\s*;?$")
_DESCRIPTION_DASHES = ("—", "--", "-", "–")


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
