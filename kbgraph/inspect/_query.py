"""What an inspection query is once read: its parameters, its statement and how they are bound,
plus the errors inspection raises. Reading files is :mod:`kbgraph.inspect._library`'s job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kbgraph.core.errors import InvalidInputError, KbgraphError

INSPECT_FOLDER = "inspect"
NAMESPACE_PARAMETER = "kb"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def _json_literal(text: str) -> Any:
    """The JSON value of ``text``, or None when it is not JSON (a Cypher-only expression)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a query can use")


def describe_parameters(parameters: Sequence[QueryParameter]) -> str:
    """``kb="default", id (required), limit=10`` — a query's parameters on one line."""
    return ", ".join(p.as_text() for p in parameters) or "none"
