"""What the model is shown of the answer's shape, and how a shape problem is put into words.

The JSON Schema of the answer model goes into the prompt (and into ``response_format`` where the
server constrains output to it), with every string capped at :data:`MAX_ANSWER_STRING_CHARS`.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Literal

from pydantic import ValidationError

#: The longest string the model is shown it may write (``maxLength`` in the schema it gets): every
#: field asked for is a name or a sentence or two. A server that constrains output to the schema
#: (``response_format`` ``json_schema`` or ``json_object_schema``) stops a field there; what is
#: *validated* stays the answer model's own bounds, so a longer answer from another server is kept.
MAX_ANSWER_STRING_CHARS = 300

#: How the answer's shape is asked for. ``json_object``: JSON mode, the schema in the prompt only
#: (every OpenAI-compatible server). ``json_schema``: OpenAI's structured outputs
#: (``{"type": "json_schema", "json_schema": {...}}``; OpenAI, vLLM, Ollama, LM Studio, llama.cpp's
#: llama-server). ``json_object_schema``: ``{"type": "json_object", "schema": {...}}``, the form
#: llama-cpp-python's server constrains generation with.
ResponseFormat = Literal["json_object", "json_schema", "json_object_schema"]


def describe_validation_error(error: ValidationError, root: str = "answer", limit: int = 3) -> str:
    """``answer.steps.0.action: Field required; …`` — the path a person can find in the JSON."""
    parts = []
    for item in error.errors()[:limit]:
        path = ".".join([root, *(str(part) for part in item["loc"])])
        parts.append(f"{path}: {item['msg']}")
    more = len(error.errors()) - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def bounded_schema(schema: dict[str, Any], max_chars: int = MAX_ANSWER_STRING_CHARS) -> dict[str, Any]:
    """``schema`` with every string's ``maxLength`` at most ``max_chars`` (a copy)."""
    bounded = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string":
                node["maxLength"] = min(int(node.get("maxLength", max_chars)), max_chars)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(bounded)
    return bounded


def schema_instructions(shown: dict[str, Any]) -> str:
    """The line appended to the system prompt: answer with one object of this schema."""
    return (
        "Answer with one JSON object and nothing else, matching this JSON Schema:\n"
        + json.dumps(shown, separators=(",", ":"))
    )


def response_format_body(form: ResponseFormat, name: str, shown: dict[str, Any]) -> dict[str, Any]:
    """The request's ``response_format`` for ``form``, naming the answer model ``name``."""
    if form == "json_schema":
        # Not strict: OpenAI's strict mode wants every property required and no open maps.
        return {"type": "json_schema", "json_schema": {"name": name, "schema": shown, "strict": False}}
    if form == "json_object_schema":
        return {"type": "json_object", "schema": shown}
    return {"type": "json_object"}
