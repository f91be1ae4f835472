"""Parameters from the command line: ``name=value`` texts read as typed values, each as the type
its query documents (a text parameter keeps 2024 as text; a number parameter refuses ten).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kbgraph.core.errors import InvalidInputError
from kbgraph.inspect._query import _IDENTIFIER, InspectionQuery, _refuse_constant
from kbgraph.core.value_bounds import MAX_NESTING_DEPTH, value_fault

_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")


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
        if fault := value_fault(values[name]):  # an integer Neo4j cannot hold, deep JSON, …
            problems.append(fault.within(f"{option} {name}={text:.80}"))
    if problems:
        raise InvalidInputError(problems, headline="cannot run the query, nothing was run")
    return values
