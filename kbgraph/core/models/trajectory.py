"""A raw run as an agent recorded it: the input format that ingestion generalises into experiences."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator

from kbgraph.core.models._base import (
    MAX_OBSERVATION_CHARS,
    MAX_PROBLEM_CHARS,
    MAX_STEPS,
    MAX_TASK_CHARS,
    IdText,
    Name,
    Reward,
    ShortText,
    _out_of_bounds,
    _Strict,
)
from kbgraph.core.value_bounds import MAX_NESTING_DEPTH, value_problem

RAW_ARGUMENTS = "_raw"


class TrajectoryStep(_Strict):
    """One raw step as an agent took it: the tool called with its concrete arguments.

    Real agents' steps are untidy, and each form is accepted and represented:

    - ``arguments`` as a JSON-encoded string (how tool-calling APIs hand them over) is decoded; a
      string that is not a JSON object is kept whole as ``{"_raw": text}`` (the malformed call is
      part of what happened — usually the tool then errored);
    - ``thought``, ``observation`` or ``error`` that is empty or blank is absent;
    - an ``observation`` or ``error`` that is JSON (an object or a list) is kept as its JSON text;
    - a call with no result has no ``observation``.
    """

    action: Name
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought: Annotated[str, StringConstraints(max_length=MAX_PROBLEM_CHARS)] | None = None
    observation: Annotated[str, StringConstraints(max_length=MAX_OBSERVATION_CHARS)] | None = None
    error: Annotated[str, StringConstraints(max_length=MAX_OBSERVATION_CHARS)] | None = None
    reward: Reward | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _decode_arguments(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):
            try:
                decoded = json.loads(value) if value.strip() else {}
            except ValueError:
                return {RAW_ARGUMENTS: value}
            except RecursionError:  # the C decoder stops cleanly at the interpreter's limit
                raise _out_of_bounds(f"the JSON text is nested deeper than {MAX_NESTING_DEPTH} levels") from None
            if not isinstance(decoded, dict):
                return {RAW_ARGUMENTS: value}
            # Decoded here, so the bounds the record was checked against have not seen it yet:
            # "\\udcff" or a 30-digit number inside the text would otherwise reach the driver.
            if problem := value_problem(decoded):
                raise _out_of_bounds(f"in the JSON text: {problem}")
            return decoded
        return value

    @field_validator("thought", "observation", "error", mode="before")
    @classmethod
    def _text_or_absent(cls, value: Any) -> Any:
        if isinstance(value, dict | list):
            return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        if isinstance(value, str) and not value.strip():
            return None
        return value


class Outcome(_Strict):
    success: bool
    reward: float | None = None


class Trajectory(_Strict):
    """What an agent did on one task: the reference input format (``shared/data/trajectories``)."""

    id: IdText
    source: ShortText | None = None
    domain: Name = "general"
    task: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TASK_CHARS)]
    steps: Annotated[list[TrajectoryStep], Field(max_length=MAX_STEPS)] = Field(default_factory=list)
    outcome: Outcome = Field(default_factory=lambda: Outcome(success=True))
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("task")
    @classmethod
    def _task_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

