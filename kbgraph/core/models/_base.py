"""What every record of :mod:`kbgraph.core.models` shares: limits, field types and the strict base.

Models are strict: wrong types, unknown fields, NaN/infinite numbers and oversized texts are
rejected with the field's name. The base runs the value bounds (:mod:`kbgraph.core.value_bounds`)
before pydantic looks at a record, except for records rebuilt from the store (:data:`STORED`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from kbgraph.core.value_bounds import MAX_COUNT, vector_problem, within_bounds

#: Validation context for models rebuilt from what the store holds (already checked when written).
STORED: dict[str, bool] = {"stored": True}

# Limits: generous for real agent data, small enough that one record cannot flood the graph.
MAX_PROBLEM_CHARS = 20_000
MAX_TEXT_CHARS = 8_000
#: A name: a domain, an agent, a tool.
MAX_NAME_CHARS = 200
#: How much of a feedback's task its Outcome node keeps (cypher/queries/feedback_outcome.cypher).
STORED_OUTCOME_TASK_CHARS = 500
MAX_STEPS = 10_000
MAX_FAILURE_MODES = 200
MAX_RELATIONS = 1_000
MAX_EMBEDDING_DIM = 8_192
MAX_TASK_CHARS = 100_000
#: A tool's result or error as an agent received it: real ones are kilobytes (a list of flights);
#: accepted up to this, and stored cut to STORED_OBSERVATION_CHARS (the step says how long it was).
MAX_OBSERVATION_CHARS = 1_000_000
STORED_OBSERVATION_CHARS = 1_000

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS)]
ShortText = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Reward = Annotated[float, Field(ge=-1.0, le=1.0)]
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]


def _usable_vector(vector: list[float], info: ValidationInfo) -> list[float]:
    # A zero, overflowing or tiny vector breaks every cosine search of its namespace; what the
    # store returns passed this check on its way in.
    if not (isinstance(info.context, dict) and info.context.get("stored")) and (problem := vector_problem(vector)):
        raise PydanticCustomError("unusable_vector", "{problem}", {"problem": problem})
    return vector


Embedding = Annotated[list[float], Field(min_length=1, max_length=MAX_EMBEDDING_DIM), AfterValidator(_usable_vector)]
IdText = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:\-]{1,128}$")]

Kind = Literal["concrete", "abstract"]
Status = Literal["active", "archived", "rejected"]
Scope = Literal["shared", "private"]
Difficulty = Literal["easy", "medium", "hard"]
#: What an agent did after an error (kbgraph.core.recovery): the same action with changed arguments
#: (retry), the same call again (repeat), another action (switch), or nothing (none).
RecoveryKind = Literal["retry", "repeat", "switch", "none"]


class RelationType(StrEnum):
    """The four experience relations of Agent KB. The only relationship types a user can name."""

    ABSTRACTION = "ABSTRACTION"
    COMPOSITION = "COMPOSITION"
    ADAPTATION = "ADAPTATION"
    ALTERNATIVE = "ALTERNATIVE"


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=False)

    @model_validator(mode="before")
    @classmethod
    def _within_bounds(cls, data: Any, info: ValidationInfo) -> Any:
        # Before pydantic recurses into it: depth, 64-bit integers, valid Unicode (value_bounds).
        # The problem names its field path; a custom error keeps pydantic's "Value error, " off it.
        # What the store returns passed this check on its way in (validated with context STORED:
        # a search read ~150 models per query, ~30 µs each).
        if isinstance(info.context, dict) and info.context.get("stored"):
            return data
        try:
            return within_bounds(data)
        except ValueError as exc:
            raise _out_of_bounds(str(exc)) from None


def _out_of_bounds(problem: str) -> PydanticCustomError:
    # The problem goes in as context, not as the template: stored text may hold "{…}".
    return PydanticCustomError("value_bounds", "{problem}", {"problem": problem})

