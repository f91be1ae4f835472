"""A candidate's score breakdown as the stages of a student search compute it, made a
:class:`~kbgraph.search.results.ScoreBreakdown` only for the hits the search returns.

A search scores ~50-150 candidates and returns k of them; validating a ScoreBreakdown for each
candidate cost ~20 µs, ~2 ms of client CPU a search. The stages keep each candidate's values
as given (rounded where the breakdown shows them rounded) and rank by the few they need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbgraph.search.results import ScoreBreakdown

__all__ = ["FLOORED", "Later", "Parts"]


class Later:
    """A value of :class:`Parts` only an explanation shows, worked out when the breakdown is made
    (for the k hits, not for every candidate)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]):
        self.make = make


class _Value:
    """A value of :class:`Parts` the stages rank by, read as a float (the breakdown's default when
    left out)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, parts: Parts, owner: type | None = None) -> float:
        values = parts.values
        return float(values[self.name] if self.name in values else ScoreBreakdown.model_fields[self.name].default)


#: The values a breakdown shows at 0 at least (cosines).
FLOORED = frozenset({"semantic", "structural"})


class Parts:
    """The values of one candidate's :class:`ScoreBreakdown`, by field name; a field left out has
    the breakdown's default."""

    __slots__ = ("values", "unrounded")

    direct = _Value()
    stage = _Value()
    trans = _Value()
    success = _Value()
    share = _Value()
    support = _Value()
    utility_factor = _Value()

    def __init__(self, values: dict[str, Any], unrounded: frozenset[str] = frozenset()):
        self.values = values
        #: Values kept as computed that the breakdown shows rounded to 6 places (those of
        #: :data:`FLOORED` at 0 first), rounded only when it is made: no stage ranks by them.
        self.unrounded = unrounded

    def updated(self, **changes: Any) -> Parts:
        """A copy with ``changes``."""
        return Parts({**self.values, **changes}, self.unrounded)

    def explained(self) -> ScoreBreakdown:
        """The breakdown itself (a new one each time, the caller's to change)."""
        values = {name: value.make() if isinstance(value, Later) else value for name, value in self.values.items()}
        for name in self.unrounded:
            value = values.get(name)
            if value is not None:
                values[name] = round(max(0.0, value) if name in FLOORED else value, 6)
        return ScoreBreakdown.model_construct(**values)
