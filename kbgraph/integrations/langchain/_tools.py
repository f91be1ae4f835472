"""kbgraph_tools: the contract's five tools (:data:`kbgraph.tools.TOOLS`) as LangChain tools.

Each returns its answer as JSON text for the model and as a dict in the ``ToolMessage``'s
``artifact``; refused arguments and anticipated failures answer one line, status "error". Over an
:class:`AsyncKnowledgeBase` the tools are awaited (``ainvoke``, LangGraph's async graphs).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, ValidationError

from kbgraph.async_kb import AsyncKnowledgeBase
from kbgraph.core.value_bounds import INT64_MAX, INT64_MIN, value_problem
from kbgraph.kb import KnowledgeBase
from kbgraph.tools import (TOOL_NAMES, TOOLS, ToolArguments, ToolSpec, argument_problems, arun_tool, failure_message,
                           one_line, run_tool)

__all__ = ["TOOL_NAMES", "kbgraph_tools"]

Answer = tuple[str, dict[str, Any]]


@contextmanager
def _as_tool_exception(name: str) -> Iterator[None]:
    """kbgraph's anticipated failures (bad input, Neo4j refusing or gone) as a ToolException the
    tool answers with; anything else is a bug and propagates."""
    try:
        yield
    except ToolException:
        raise
    except Exception as exc:
        message = failure_message(exc)
        if message is None:
            raise
        raise ToolException(one_line(f"{name}: {message}")) from exc


def _answer(result: BaseModel) -> Answer:
    dumped = result.model_dump(mode="json")
    return json.dumps(dumped, ensure_ascii=False), dumped


def _beyond_64_bits(value: Any) -> bool:
    """Whether an integer outside the 64-bit range sits anywhere in ``value`` (walked without
    recursion: the arguments may be nested deeply)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            return True
    return False


class ContractTool(StructuredTool):
    """A StructuredTool whose arguments are validated by the contract's model, and refused in the
    contract's words (the path in what was sent, as the MCP server and the HTTP API name it); the
    tool function receives them as one ``arguments`` object."""

    def _refused_early(self, tool_input: str | dict[str, Any], tool_call_id: str | None) -> Any:
        """The error answer for arguments LangChain cannot even log, or None to run the tool.

        BaseTool.run writes ``str(tool_input)`` for its callbacks before any handler is in place,
        and Python refuses to print an integer of more than 4,300 digits (a raw ValueError): such
        arguments are answered here, as the contract refuses any integer past 64 bits."""
        if not isinstance(tool_input, dict) or not _beyond_64_bits(tool_input):
            return None
        content = one_line(f"{self.name}: invalid arguments, nothing was done: {value_problem(tool_input)}")
        if tool_call_id is None:  # invoked with the arguments alone: the answer is the text, as for any error
            return content
        return ToolMessage(content, artifact=None, tool_call_id=tool_call_id, name=self.name, status="error")

    def run(self, tool_input: str | dict[str, Any], *args: Any, tool_call_id: str | None = None,
            **kwargs: Any) -> Any:
        refused = self._refused_early(tool_input, tool_call_id)
        if refused is not None:
            return refused
        return super().run(tool_input, *args, tool_call_id=tool_call_id, **kwargs)

    async def arun(self, tool_input: str | dict[str, Any], *args: Any, tool_call_id: str | None = None,
                   **kwargs: Any) -> Any:
        refused = self._refused_early(tool_input, tool_call_id)
        if refused is not None:
            return refused
        return await super().arun(tool_input, *args, tool_call_id=tool_call_id, **kwargs)

    def _parse_input(self, tool_input: str | dict[str, Any], tool_call_id: str | None) -> dict[str, Any]:
        schema = self.args_schema
        assert isinstance(schema, type) and issubclass(schema, ToolArguments)
        try:
            return {"arguments": schema.model_validate(tool_input)}
        except ValidationError as error:
            raise ToolException(f"{self.name}: invalid arguments, nothing was done: "
                                f"{argument_problems(error, tool_input)}") from None


def _tool(spec: ToolSpec, func: Callable[[ToolArguments], Answer],
          coroutine: Callable[[ToolArguments], Awaitable[Answer]] | None) -> BaseTool:
    return ContractTool(name=spec.name, description=spec.description, args_schema=spec.arguments, func=func,
                        coroutine=coroutine, response_format="content_and_artifact", handle_tool_error=True)


def kbgraph_tools(kb: KnowledgeBase | AsyncKnowledgeBase, *, agent: str | None = None) -> list[BaseTool]:
    """``search_experiences``, ``refine_steps``, ``record_outcome``, ``add_trajectory`` and
    ``get_experience`` over ``kb`` (its namespace: no tool can reach another). ``agent`` is the
    agent name used when a call names none (it decides which private experiences are visible and
    whose ability is updated).

    Over a KnowledgeBase, ``invoke`` runs the tool and ``ainvoke`` runs it in a worker thread; over
    an AsyncKnowledgeBase, ``ainvoke`` awaits it on the event loop and ``invoke`` is refused (there
    is no loop to run it on)."""
    tools: list[BaseTool] = []
    for spec in TOOLS:
        name = spec.name
        if isinstance(kb, AsyncKnowledgeBase):
            akb = kb

            def refuse(arguments: ToolArguments, name: str = name) -> Answer:
                raise TypeError(f"{name} works over an AsyncKnowledgeBase: call it with ainvoke (or build the "
                                "tools over a KnowledgeBase to invoke them)")

            async def awaited(arguments: ToolArguments, name: str = name) -> Answer:
                with _as_tool_exception(name):
                    return _answer(await arun_tool(akb, name, arguments, default_agent=agent))

            tools.append(_tool(spec, refuse, awaited))
        else:
            sync_kb = kb

            def run(arguments: ToolArguments, name: str = name) -> Answer:
                with _as_tool_exception(name):
                    return _answer(run_tool(sync_kb, name, arguments, default_agent=agent))

            tools.append(_tool(spec, run, None))
    return tools
