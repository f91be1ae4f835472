"""Every weight and threshold of student retrieval (docs/design.md §3), the query a caller sends, and
their validation.

:class:`SearchWeights` holds the tunables (defined in :mod:`kbgraph.core.weights`, below the settings
that read them, and re-exported here); they can be set in settings (``[search]`` in
``kbgraph.toml`` or ``KBGRAPH_SEARCH__ALPHA=0.3``) and overridden per call. :class:`SearchQuery`
is one request; :class:`SearchFilters` restricts which experiences may be returned.
:func:`parse_query` and :func:`parse_search_options` validate what a caller sends. Validation is
strict: NaN or infinite numbers, weights outside [0, 1] and empty queries are rejected with a
message naming the field; only ``k`` above the maximum is clamped (with a note in the results),
because asking for "everything" is a reasonable request that the engine answers with its most.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.core.weights import SearchWeights, StrictModel, Unit, WeightChanges, names_given

__all__ = [
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_STEPS",
    "QueryStep",
    "RequestJson",
    "SearchFilters",
    "SearchQuery",
    "SearchWeights",
    "parse_query",
    "parse_search_options",
]

#: The most results one call returns; larger k is clamped to this, with a note.
MAX_K = 100
#: Longest accepted task / problem / goal text. MiniLM reads 256 word pieces (~1,000 characters);
#: a 100 kB "query" is a mistake (a whole document pasted in), not a question.
MAX_QUERY_CHARS = 8_000
#: The most executed steps a query may carry (the fine score averages over them).
MAX_QUERY_STEPS = 50

# Only active experiences are ever retrieved: archived (pruned by maintenance) and rejected
# (EDV: no agent approved) ones stay in the graph for audit — kb.get, export and the inspection
# queries show them — and restoring an archived one makes it searchable again.
Status = Literal["active"]


def _active_only() -> list[Status]:
    return ["active"]


class SearchFilters(StrictModel):
    """Which experiences may be returned. The namespace is always applied (it is the KB's own)."""

    domains: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None, max_length=100, description="Only these domains (None: all; transferability still weighs them).")
    kinds: list[Literal["concrete", "abstract"]] | None = None
    statuses: list[Status] = Field(
        default_factory=_active_only, min_length=1,
        description="Only 'active': archived and rejected experiences are never retrieved.")
    min_success: Unit = 0.0
    min_quality: Unit = 0.0


class QueryStep(StrictModel):
    """One step the agent has executed so far."""

    action: Annotated[str, Field(min_length=1, max_length=200)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    text: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] | None = None
    #: The error the step returned, verbatim, when it failed (None: it worked).
    error: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] | None = None

    @field_validator("action")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()


class SearchQuery(StrictModel):
    """One student-phase request: the task, optionally split into problem and goal, the domain the
    agent works in, the steps executed so far, and how many results to return."""

    task: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] = ""
    problem: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] | None = None
    goal: Annotated[str, Field(max_length=MAX_QUERY_CHARS)] | None = None
    domain: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    steps_so_far: list[QueryStep] = Field(default_factory=list, max_length=MAX_QUERY_STEPS)
    k: int = Field(default=5, ge=1, le=1_000_000)
    agent: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    #: Ids (experience ids or trajectory source ids) never to return: e.g. the task's own record.
    exclude: list[str] = Field(default_factory=list, max_length=10_000)

    @model_validator(mode="after")
    def _something_to_search_for(self) -> SearchQuery:
        texts = [t for t in (self.task, self.problem, self.goal) if t and t.strip()]
        if not texts and not self.steps_so_far:
            raise ValueError("nothing to search for: give a task (or problem/goal) or steps_so_far")
        return self

    def pg_text(self) -> str:
        """The text behind the query's problem+goal vector, built like an experience's."""
        problem = self.problem if self.problem and self.problem.strip() else self.task
        goal = self.goal if self.goal and self.goal.strip() else ""
        if problem is not self.task or goal:
            return f"{problem}\n{goal}".strip()
        return self.task.strip()

    def full_text(self) -> str:
        return " ".join(t for t in (self.task, self.problem, self.goal) if t)


#: A query or filters as a caller's JSON gives them, before :func:`parse_query` and
#: :func:`parse_search_options` validate them into their model.
RequestJson = dict[str, Any]


def parse_query(query: SearchQuery | RequestJson, where: str = "query") -> SearchQuery:
    """A validated query, or InvalidInputError naming every bad field."""
    parsed: SearchQuery = _parse(SearchQuery, query, where)
    return parsed


def _parse(model: Any, value: Any, where: str) -> Any:
    if value is None or isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise InvalidInputError(validation_problems(where, error), "invalid search") from None


def parse_search_options(
    base: SearchWeights, filters: SearchFilters | RequestJson | None, weights: SearchWeights | WeightChanges | None
) -> tuple[SearchFilters, SearchWeights]:
    """Validated filters and the weights in force (``base`` with ``weights`` applied), or
    InvalidInputError naming every bad field."""
    flt: SearchFilters = _parse(SearchFilters, filters, "filters") or SearchFilters()
    try:
        return flt, base.merged(weights)
    except ValidationError as error:
        raise InvalidInputError(validation_problems("weights", error, names=names_given(weights)),
                                "invalid search") from None
