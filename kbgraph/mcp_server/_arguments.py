"""The contract's tools as MCP tools: arguments validated strictly, failures as the tool errors a model reads.

The SDK validates arguments leniently and words a failure as it comes; here an argument must have
the type its schema publishes (:class:`StrictArguments`, by the contract's own model), and a
failure kbgraph anticipates becomes a :class:`ToolError` of one line (:func:`as_tool_error`,
worded by :mod:`kbgraph.tools`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import ToolAnnotations
from pydantic import BaseModel, WithJsonSchema

from kbgraph.core.value_bounds import value_problem
from kbgraph.tools import ToolSpec, failure_message


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
    """Whether a field takes text (``str``, ``str | None``), not a list of texts."""
    return annotation is str or (get_origin(annotation) in (Union, UnionType) and str in get_args(annotation))


class StrictArguments(FuncMetadata):
    """A tool's arguments validated by its contract model (:mod:`kbgraph.tools`), strictly, before
    the tool runs; the tool function receives them as one ``arguments`` object.

    The SDK validates leniently: "yes", "true" or "1" pass as true, "10" and 3.0 as the integer
    10 and 3, and any string it can parse as JSON is replaced by the parsed value, so "null" in an
    optional text field (domain, agent, task) silently became "not given". Here a value must have
    the type the schema publishes. The SDK's one allowance kept: a list or object sent as a JSON
    string (some clients do) to a field that takes a list or an object.
    """

    contract: Annotated[type[BaseModel], WithJsonSchema(None)]

    @classmethod
    def of(cls, metadata: FuncMetadata, contract: type[BaseModel]) -> StrictArguments:
        return cls(arg_model=metadata.arg_model, output_schema=metadata.output_schema,
                   output_model=metadata.output_model, wrap_output=metadata.wrap_output, contract=contract)

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = dict(data)
        for name, value in data.items():
            field = self.contract.model_fields.get(name)
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
        return {"arguments": self.contract.model_validate(self.pre_parse_json(arguments_to_validate), strict=True)}


def contract_tool(spec: ToolSpec, work: Callable[[Any], BaseModel]) -> Tool:
    """The contract's tool ``spec`` as an MCP tool: its name, description and input schema as the
    contract publishes them, its answer as structured content; ``work`` gets the validated
    arguments."""

    def call(arguments: Any) -> BaseModel:
        return work(arguments)

    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("arguments", inspect.Parameter.KEYWORD_ONLY, annotation=spec.arguments)],
        return_annotation=spec.answer)
    annotations = ToolAnnotations(title=spec.title, read_only_hint=spec.read_only, open_world_hint=False,
                                  **({} if spec.read_only else {"destructive_hint": False,
                                                                "idempotent_hint": spec.idempotent}))
    tool = Tool.from_function(call, name=spec.name, title=spec.title, description=spec.description,
                              annotations=annotations, structured_output=True)
    return tool.model_copy(update={"parameters": spec.arguments.model_json_schema(),
                                   "fn_metadata": StrictArguments.of(tool.fn_metadata, spec.arguments)})
