"""What the in-process channels filter on, and how it follows a write: spliced from the entries
kept and the changed rows, it equals what every row makes, the masks in use included."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kbgraph.search.student.experience_filters import ExperienceFilters

_KINDS = ["concrete", "abstract"]
_DOMAINS = ["airline", "retail", None]
_PARAMS: list[dict[str, Any]] = [
    {"kb": "k", "statuses": ("active",), "domains": None, "kinds": None, "min_success": 0.0, "min_quality": 0.0,
     "agent": None},
    {"kb": "k", "statuses": ("active", "deprecated"), "domains": ("retail",), "kinds": ("concrete",),
     "min_success": 0.5, "min_quality": 0.0, "agent": "a1"},
]


def _row(exp_id: str, n: int) -> list[Any]:
    return [exp_id, _KINDS[n % 2], "active" if n % 3 else "deprecated", _DOMAINS[n % 3], (n % 5) / 4,
            "shared" if n % 4 else "private", "a1" if n % 2 else "a2"]


def _columns(filters: ExperienceFilters) -> list[list[Any]]:
    return [filters.ids, *(list(c) for c in (filters.kind, filters.status, filters.domain, filters.success,
                                            filters.shared, filters.owner))]


@settings(max_examples=60, deadline=None)
@given(before=st.sets(st.integers(0, 60), max_size=40), changed=st.sets(st.integers(0, 60), max_size=12),
       kept_after=st.sets(st.integers(0, 60)), salt=st.integers(1, 7))
def test_filters_spliced_from_the_ones_before_equal_the_ones_made_of_every_row(
        before: set[int], changed: set[int], kept_after: set[int], salt: int) -> None:
    ids_before = sorted(f"e{n:03d}" for n in before)
    old = ExperienceFilters.of([_row(i, int(i[1:])) for i in ids_before])
    for params in _PARAMS:  # masks in use before the write
        old.mask(params)
    old.in_domain("retail")
    gone = {f"e{n:03d}" for n in changed}
    # After the write: the ids before but the changed ones, and the changed ones still there (new values).
    rows = sorted([_row(i, int(i[1:])) for i in ids_before if i not in gone]
                  + [_row(i, int(i[1:]) + salt) for i in sorted(gone) if int(i[1:]) in kept_after], key=lambda r: r[0])
    ids = [r[0] for r in rows]
    fresh_at = np.array([n for n, i in enumerate(ids) if i in gone], dtype=np.intp)
    taken = np.array([n for n, i in enumerate(ids_before) if i not in gone], dtype=np.intp)

    spliced = old.spliced(ids, taken, fresh_at, [rows[n] for n in fresh_at])
    whole = ExperienceFilters.of(rows)

    assert _columns(spliced) == _columns(whole)
    carried = dict(spliced._masks.items())  # pylint: disable=protected-access
    assert len(carried) == len(_PARAMS)
    for params in _PARAMS:
        assert spliced.mask(params).tolist() == whole.mask(params).tolist()
    assert spliced.in_domain("retail").tolist() == whole.in_domain("retail").tolist()
