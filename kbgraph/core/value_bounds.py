"""Bounds every value that comes in from outside (a file line, an API call, an MCP argument) must
keep before anything else looks at it: nesting depth, 64-bit integers and valid Unicode text.

They exist because the layers behind them fail badly, not cleanly, past these limits: Python's
JSON decoder and pydantic recurse (RecursionError at a few thousand levels), Neo4j stores integers
in 64 bits (OverflowError in the driver) and a lone surrogate cannot be encoded as UTF-8 (an
encoding error deep inside the Bolt connection). The walk is iterative so it cannot overflow the
stack itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbgraph.core.errors import InvalidInputError

#: Deeper than any real tool argument or record; far below Python's recursion limit.
MAX_NESTING_DEPTH = 64
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
#: The largest count a record may bring (counters, orders, lengths): exact as a float, and far
#: enough below INT64_MAX that feedback can add to it for ever (at INT64_MAX every feedback on the
#: experience failed with "long overflow").
MAX_COUNT = 2**53 - 1
#: A LangGraph store item's value as JSON text (kbgraph.integrations.store_values): room for a long
#: conversation, not for a file dump that would sit in every transaction and search that reads the
#: item. Here so that an import (kbgraph.transfer) holds a stored value to it too.
MAX_STORE_VALUE_CHARS = 4_000_000
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_problem(text: str) -> str | None:
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"contains a lone surrogate ({found.group()!a}), which is not valid Unicode text"


@dataclass(frozen=True)
class ValueFault:
    """Where a value leaves the bounds and why, as data: ``path`` (keys and indexes from the value
    down, empty at the value itself), ``reason``, and ``cut`` when the path is shown cut short (a
    value nested past the bounds). A caller that names the value its own way says so with
    :meth:`under` or :meth:`within`; nobody reads the place back out of the sentence."""

    path: tuple[Any, ...]
    reason: str
    cut: bool = False

    def _place(self, root: str) -> str:
        shown = ".".join(str(part) for part in self.path)
        place = (f"{root}.{shown}" if shown else root) if root else shown or "(value)"
        return place + ("…" if self.cut else "")

    def __str__(self) -> str:
        """``field.path: reason``; ``(value): reason`` at the value itself."""
        return f"{self._place('')}: {self.reason}"

    def under(self, root: str) -> str:
        """``root.field.path: reason``: the value named ``root``."""
        return f"{self._place(root)}: {self.reason}"

    def within(self, where: str) -> str:
        """``where: reason`` at the value itself, ``where: field.path: reason`` inside it: the place
        of a value the caller has named (an option, a query's parameter)."""
        return f"{where}: {self.reason}" if not self.path and not self.cut else f"{where}: {self}"


def value_fault(value: Any, max_depth: int = MAX_NESTING_DEPTH, *, int64: bool = True) -> ValueFault | None:
    """The first place ``value`` leaves the bounds, or None. ``int64=False`` lets integers past 64
    bits through (for values kept as JSON text)."""
    pending: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while pending:
        item, path = pending.pop()
        if isinstance(item, dict | list | tuple) and len(path) >= max_depth:
            return ValueFault(path[:8], f"nested deeper than {max_depth} levels", cut=True)
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and (problem := _text_problem(key)):
                    return ValueFault(path, f"a key {problem}")
                pending.append((child, (*path, key)))
        elif isinstance(item, list | tuple):
            pending.extend((child, (*path, index)) for index, child in enumerate(item))
        elif isinstance(item, str):
            if problem := _text_problem(item):
                return ValueFault(path, problem)
        elif int64 and isinstance(item, int) and not isinstance(item, bool) and not INT64_MIN <= item <= INT64_MAX:
            shown = str(item) if item.bit_length() < 200 else f"a {item.bit_length()}-bit integer"
            return ValueFault(path, f"{shown} is outside the 64-bit integer range Neo4j stores")
    return None


def value_problem(value: Any, max_depth: int = MAX_NESTING_DEPTH, *, int64: bool = True) -> str | None:
    """``field.path: reason`` for the first place ``value`` leaves the bounds (:func:`value_fault`
    in words), or None."""
    fault = value_fault(value, max_depth, int64=int64)
    return None if fault is None else str(fault)


def within_bounds(data: Any) -> Any:
    """A pydantic ``mode="before"`` model validator's body: ``data`` unchanged, or ValueError
    naming the first place it leaves the bounds (before pydantic recurses into it)."""
    if isinstance(data, dict) and (problem := value_problem(data)):
        raise ValueError(problem)
    return data


def check_bounds(**arguments: Any) -> None:
    """Arguments of a call (a read, a search, a delete) keep the bounds before they reach the
    driver: a lone surrogate would fail its UTF-8 encoding, 5,000 levels of nesting the
    generaliser's recursion. InvalidInputError naming the first place they leave them."""
    if problem := value_problem(arguments):
        raise InvalidInputError([problem])


#: The largest float32, the type Neo4j's vector indexes hold: a vector's squared length must stay
#: below it (a cosine similarity divides by the length), and above the smallest normal float32.
_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT32_TINY = 1.1754943508222875e-38


def vector_problem(vector: Sequence[float]) -> str | None:
    """Why an embedding cannot be compared by cosine similarity (None when it can): NaN or an
    infinite value, every value 0 (no direction), or values so large or so small that the length
    over- or underflows in 32-bit floats. One such vector in a namespace used to fail every
    search of it (``vector.similarity.cosine(): Argument a is not a valid vector``)."""
    squares = 0.0
    for value in vector:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"holds {type(value).__name__}, not a number"
        if isinstance(value, int) and not -_FLOAT32_MAX < value < _FLOAT32_MAX:
            return "holds a value too large for a 32-bit float"
        if not math.isfinite(value):
            return "holds NaN or infinite values"
        squares += float(value) * float(value)
    if squares == 0.0:
        return "every value is 0: a vector without a direction has no cosine similarity"
    if not math.isfinite(squares) or squares >= _FLOAT32_MAX:
        return "values so large its length overflows 32-bit floats (as Neo4j's vector index holds them)"
    if squares < _FLOAT32_TINY:
        return "values so small its length rounds to 0 in 32-bit floats (as Neo4j's vector index holds them)"
    return None
