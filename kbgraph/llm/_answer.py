"""Reading a chat completion as an answer: JSON of the asked shape, repaired when it was cut off.

An answer that is not JSON is first repaired (:mod:`kbgraph.llm.truncated_json`: its complete values,
closed off) before it counts as :class:`~kbgraph.llm._retry.Malformed`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from kbgraph.llm._retry import Malformed
from kbgraph.llm.schema import describe_validation_error
from kbgraph.llm.truncated_json import usable_json_object

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

T = TypeVar("T", bound=BaseModel)

MAX_EXCERPT_CHARS = 160
MAX_KEPT_ANSWER_CHARS = 4000

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*)\n\s*```\s*$", re.DOTALL)


@dataclass
class Call:
    """One call's attempts so far: the next attempt is told what was wrong with the last answer."""

    attempts: int = 0
    problem: str | None = None
    repaired: bool = False
    answers: list[str] = field(default_factory=list)


def parse_answer(
    response: ChatCompletion, schema: type[T], check: Callable[[T], str | None] | None, call: Call,
) -> T:
    """The response's answer validated as ``schema`` (and passed by ``check``), or :class:`Malformed`."""
    choices = response.choices or []
    if not choices:
        raise Malformed("the response has no choices")
    choice = choices[0]
    content = choice.message.content
    call.answers.append((content or "")[:MAX_KEPT_ANSWER_CHARS])
    cut_off = choice.finish_reason == "length"
    if not content or not content.strip():
        if cut_off:
            raise Malformed("answer was cut off at the token limit (finish_reason=length)")
        refusal = getattr(choice.message, "refusal", None)
        raise Malformed(f"model refused: {refusal}" if refusal else "answer is empty")
    text = _strip_fence(content)
    try:
        if cut_off:
            raise Malformed("answer was cut off at the token limit (finish_reason=length)")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise Malformed(f"answer is not JSON ({exc.msg}): {_excerpt(content)}") from None
        if not isinstance(data, dict):
            raise Malformed(f"answer is JSON but not an object: {_excerpt(content)}")
        return _validated(data, schema, check)
    except Malformed as malformed:
        # Cut off, or chat around the object: its complete values may still be an answer.
        usable = usable_json_object(text)
        if usable is None or usable == text.strip():
            raise
        try:
            answer = _validated(json.loads(usable), schema, check)
        except Malformed as unusable:
            raise Malformed(f"{malformed.reason}; its complete part: {unusable.reason}") from None
        call.repaired = True
        return answer


def _validated(data: Any, schema: type[T], check: Callable[[T], str | None] | None) -> T:
    try:
        answer = schema.model_validate(data)
    except ValidationError as exc:
        raise Malformed(describe_validation_error(exc)) from None
    problem = check(answer) if check is not None else None
    if problem:
        raise Malformed(problem)
    return answer


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= MAX_EXCERPT_CHARS else flat[:MAX_EXCERPT_CHARS] + "…")


def _strip_fence(content: str) -> str:
    # Several OpenAI-compatible servers wrap JSON in a Markdown fence even in JSON mode.
    match = _FENCE.match(content)
    return match.group("body") if match else content
