"""The MCP tools' arguments, validated strictly, and failures as the tool errors a model reads.

The SDK validates arguments leniently and words a failure as it comes; here an argument must have
the type its schema publishes (:class:`StrictArguments`), and a failure kbgraph anticipates
becomes a :class:`ToolError` of one line (:func:`as_tool_error`, worded by :mod:`kbgraph.tools`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, get_args

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from kbgraph.core.value_bounds import value_problem
from kbgraph.tools import failure_message


def as_tool_error(exc: Exception) -> ToolError | None:
    """The message a model can act on for a failure kbgraph anticipates; None for a bug."""
    message = failure_message(exc)
    return ToolError(message) if message is not None else None


@contextmanager
def tool_errors() -> Iterator[None]:
    """Anticipated failures inside the block raised as one-line tool errors; a bug propagates."""
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        error = as_tool_error(exc)
        if error is None:
            raise  # a bug: KbgraphMCPServer logs its traceback on stderr and answers one line
        raise error from exc


def _takes_text(annotation: Any) -> bool:
    return annotation is str or str in get_args(annotation)


class StrictArguments(FuncMetadata):
    """A tool's arguments validated in pydantic's strict mode, before the tool runs.

    The SDK validates leniently: "yes", "true" or "1" pass as true, "10" and 3.0 as the integer
    10 and 3, and any string it can parse as JSON is replaced by the parsed value, so "null" in an
    optional text field (domain, agent, task) or for the outcome silently became "not given".
    Here a value must have the type the schema publishes. The SDK's one allowance kept: a list
    or object sent as a JSON string (some clients do) to a field that takes a list or an object.
    """

    @classmethod
    def of(cls, metadata: FuncMetadata) -> StrictArguments:
        return cls(arg_model=metadata.arg_model, output_schema=metadata.output_schema,
                   output_model=metadata.output_model, wrap_output=metadata.wrap_output)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = dict(data)
        for name, value in data.items():
            field = self.arg_model.model_fields.get(name)
            if field is None or not isinstance(value, str) or _takes_text(field.annotation):
                continue
            try:
                decoded = json.loads(value)
            except (ValueError, RecursionError):
                continue  # left as a string, which strict validation refuses by the field's name
            if isinstance(decoded, list | dict) and value_problem(decoded) is None:
                parsed[name] = decoded
        return parsed

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        # An unknown argument is refused rather than ignored: a misspelt "outcom" would otherwise
        # record a task without its outcome.
        unknown = [name for name in arguments_to_validate if name not in self.arg_model.model_fields]
        if unknown:
            raise ValidationError.from_exception_data(self.arg_model.__name__, [
                {"type": "extra_forbidden", "loc": (name,), "input": arguments_to_validate[name]} for name in unknown])
        model = self.arg_model.model_validate(self.pre_parse_json(arguments_to_validate), strict=True)
        return model.model_dump_one_level()


def strict_tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    """``fn`` as an MCP tool whose arguments are validated by :class:`StrictArguments`."""
    tool = Tool.from_function(fn, annotations=annotations)
    return tool.model_copy(update={"fn_metadata": StrictArguments.of(tool.fn_metadata)})
