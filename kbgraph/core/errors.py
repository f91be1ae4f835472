"""Errors kbgraph raises on purpose. Each one carries a message a person can act on."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import ValidationError


class KbgraphError(Exception):
    """Base class: the CLI prints these as one line, without a traceback."""


class Problem(str):
    """One problem of an input, as the text ``where: field: message`` (``where: message`` without a
    field) that error messages show, rendered once from the parts it keeps: ``where`` (a record's
    label: ``file.jsonl:12``, ``experiences[3]``, ``query``), ``field`` (its path, ``(record)`` for
    the whole record; None when the problem is of ``where`` itself) and ``message``. A reader that
    needs a part takes it from here, never from the text."""

    where: str
    field: str | None
    message: str

    def __new__(cls, where: str, message: str, field: str | None = None) -> Problem:
        problem = super().__new__(cls, f"{where}: {message}" if field is None else f"{where}: {field}: {message}")
        problem.where, problem.field, problem.message = where, field, message
        return problem

    def __getnewargs__(self) -> tuple[str, str, str | None]:  # type: ignore[override]  # copied, pickled
        return self.where, self.message, self.field


class InvalidInputError(KbgraphError):
    """Input rejected before anything was written. ``problems`` lists each `where: field: reason`
    (a :class:`Problem` where the code that found it kept its parts)."""

    def __init__(self, problems: list[str], headline: str = "invalid input, nothing was written"):
        self.problems = problems
        shown = "\n  ".join(problems[:20])
        more = f"\n  … and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"{headline}:\n  {shown}{more}")


class Neo4jUnavailableError(KbgraphError):
    """Neo4j could not be reached or refused our credentials."""


class ManagedServerError(KbgraphError):
    """The locally managed Neo4j could not be installed, started or stopped."""


class EmbedderError(KbgraphError):
    """The embedding model could not be loaded or answered badly."""


class SchemaError(KbgraphError):
    """The schema could not be applied or did not come ONLINE."""


def validation_problems(where: str, error: ValidationError, *, strip_value_error: bool = False,
                        names: Mapping[str, str] | None = None) -> list[str]:
    """A :class:`Problem` (``where: field.path: reason``) for every problem pydantic found
    (``(record)`` for the whole record). ``strip_value_error`` drops pydantic's "Value error, "
    prefix from custom checks. ``names`` renames a field's path (and the paths below it) to the
    name the caller gave it."""
    problems: list[str] = []
    for item in error.errors(include_url=False):
        path = ".".join(str(part) for part in item["loc"]) or "(record)"
        for known, name in (names or {}).items():
            if path == known or path.startswith(known + "."):
                path = name + path[len(known):]
                break
        message = item["msg"].removeprefix("Value error, ") if strip_value_error else item["msg"]
        problems.append(Problem(where, message, path))
    return problems
