"""List parameters sent in one shape, so that Neo4j plans a statement once, not once per list size.

Neo4j keeps a plan per statement *and* shape of its parameters, and a list parameter of no element,
of one and of several are three shapes. Measured on 5.26 (10,000 experiences, the first run of each
after ``CALL db.clearQueryCaches()``): ``search_hits_get_since`` 288 ms for 5 ids and 6 ms the next
time, but 247 ms again for 1 id and 246 ms for none; ``search_candidates_score`` 251 ms, then 229 ms
more for each shape of its ``$exclude`` (empty unless a query excludes something) and
``$structural_known`` lists; ``search_hits_get`` 147 ms, then 134 for one id. A search meets a new
shape whenever one of its lists happens to hold no id or one (k = 1, nothing excluded, a single
kept row), so the first such search after a restart, or after writes big enough to make the server
plan again, paid 0.1-0.3 s of planning per shape. Padded with a filler no id ever equals, the lists
a search sends always have the shape of two or more: the statements only test membership
(``x IN $ids``, ``UNWIND $ids`` then ``MATCH``), which a filler leaves unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["NO_ID", "at_least_two", "id_list"]

T = TypeVar("T")

#: The filler of id lists: experience, step and run ids are never empty (``IdText``, generated ids).
NO_ID = ""


def at_least_two(values: Iterable[T], filler: T) -> list[T]:
    """``values`` as a list, with ``filler`` appended until it holds two elements or more."""
    out = list(values)
    out.extend([filler] * (2 - len(out)))
    return out


def id_list(ids: Iterable[str]) -> list[str]:
    """``ids`` as an id list parameter in the one shape of two or more (padded with :data:`NO_ID`)."""
    return at_least_two(ids, NO_ID)
