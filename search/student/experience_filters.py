"""What the in-process channels filter a namespace's experiences on (:class:`ExperienceFilters`):
one column per filtered property, one entry per experience in id order, with the masks of the
sets of filters in use; and how it follows a write (:meth:`ExperienceFilters.spliced`): the
entries of the experiences the write left alone are moved as arrays, only the changed ones are
made from their rows, and the masks follow with them.

Made from every row after each follow, it cost ~18 ms of the client's CPU an add under
``bench online``'s mixed round at 10,000 experiences (a Python pass over every row per column, and
every mask worked out again by the next searches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.change_feed import first_id, position
from kbgraph.search.student.versioned import filter_key

__all__ = ["ExperienceFilters", "kept_positions", "spliced_positions"]

#: Filter masks kept per model, one per set of filters (a namespace's searches use a few).
_MASKS = 64


@dataclass
class ExperienceFilters:
    """A namespace's experiences at one version with what the channels filter on (one entry per id,
    in the order of ``ids``): the rows of ``search_experience_vector_rows``."""

    ids: list[str]
    kind: npt.NDArray[Any]
    status: npt.NDArray[Any]
    domain: npt.NDArray[Any]
    success: npt.NDArray[np.float64]
    shared: npt.NDArray[np.bool_]
    owner: npt.NDArray[Any]
    _masks: BoundedMap[tuple[Any, ...], npt.NDArray[np.bool_]] = field(default_factory=lambda: BoundedMap(_MASKS))
    #: Per domain, which experiences are of it.
    _of_domain: BoundedMap[str, npt.NDArray[np.bool_]] = field(default_factory=lambda: BoundedMap(_MASKS))

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> ExperienceFilters:
        """From rows ``[id, kind, status, domain, success_rate, scope, owner_agent]``."""
        def column(j: int) -> npt.NDArray[Any]:
            values = np.empty(len(rows), dtype=object)
            values[:] = [row[j] for row in rows]
            return values

        return cls(ids=[str(row[0]) for row in rows], kind=column(1), status=column(2), domain=column(3),
                   success=np.array([float(row[4]) for row in rows], dtype=np.float64),
                   shared=np.array([row[5] == "shared" for row in rows], dtype=bool), owner=column(6))

    def mask(self, params: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        """The experiences that pass ``params``'s filters, as the channel queries filter (a
        quality floor is never above 0 here)."""
        key = filter_key(params)
        kept = self._masks.get(key)
        if kept is not None:
            return kept
        passed = _among(self.status, params["statuses"])
        if params["domains"] is not None:
            passed &= _among(self.domain, params["domains"])
        if params["kinds"] is not None:
            passed &= _among(self.kind, params["kinds"])
        passed &= self.success >= float(params["min_success"])
        agent = params["agent"]
        passed &= self.shared | ((self.owner == agent) if agent is not None else False)
        self._masks.put(key, passed)
        return passed

    def in_domain(self, domain: str) -> npt.NDArray[np.bool_]:
        """Which experiences are of ``domain`` (worked out once per domain: a string comparison over
        every experience costs a millisecond at 10,000)."""
        kept = self._of_domain.get(domain)
        if kept is None:
            kept = self.domain == domain
            self._of_domain.put(domain, kept)
        return kept

    def spliced(self, ids: list[str], taken: npt.NDArray[np.intp], fresh_at: npt.NDArray[np.intp],
                fresh_rows: Sequence[Sequence[Any]]) -> ExperienceFilters:
        """The filters of ``ids`` (in id order): at the positions not in ``fresh_at``, the entries of
        this one's positions ``taken`` (in order); at ``fresh_at``, those of ``fresh_rows`` (rows as
        :meth:`of` reads them, in the same order). Equal to :meth:`of` of every row, masks included:
        each kept mask is carried over with the entries and worked out for the fresh ones only."""
        fresh = ExperienceFilters.of(fresh_rows)
        old = np.ones(len(ids), dtype=bool)
        old[fresh_at] = False

        def splice(before: npt.NDArray[Any], after: npt.NDArray[Any]) -> npt.NDArray[Any]:
            values = np.empty(len(ids), dtype=before.dtype)
            values[old] = before[taken]
            values[fresh_at] = after
            return values

        made = ExperienceFilters(ids=ids, kind=splice(self.kind, fresh.kind), status=splice(self.status, fresh.status),
                                 domain=splice(self.domain, fresh.domain), success=splice(self.success, fresh.success),
                                 shared=splice(self.shared, fresh.shared), owner=splice(self.owner, fresh.owner))
        made._masks.put_many({key: splice(mask, fresh.mask(_params_of(key))) for key, mask in self._masks.items()})
        made._of_domain.put_many({domain: splice(of, fresh.in_domain(domain)) for domain, of in self._of_domain.items()})
        return made


def spliced_positions(before: list[str], rows: Sequence[Sequence[Any]], gone: set[str]
                      ) -> tuple[list[str], npt.NDArray[np.intp], npt.NDArray[np.intp]] | None:
    """How ``rows`` (in id order) are ``before``'s ids (in id order) with those of ``gone`` taken out
    and the rows of ``gone`` there now put in: the ids of ``rows``, the positions in ``before`` of
    the ids kept (in order), and the positions in ``rows`` of the fresh ones; found by bisection, not
    a pass over every row (a follow brings a write's few ids). None when ``rows`` are not that."""
    removed = sorted(at for exp_id in gone if (at := position(before, exp_id, str)) is not None)
    fresh_at = [at for exp_id in sorted(gone) if (at := position(rows, exp_id, first_id)) is not None]
    if len(before) - len(removed) + len(fresh_at) != len(rows):
        return None
    ids = list(before)
    for at in reversed(removed):
        del ids[at]
    for at in fresh_at:  # in ascending order: the ids before each are in place
        ids.insert(at, str(rows[at][0]))
    taken = np.delete(np.arange(len(before), dtype=np.intp), np.array(removed, dtype=np.intp))
    return ids, taken, np.array(fresh_at, dtype=np.intp)


def kept_positions(length: int, fresh_at: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """The positions, among ``length`` spliced entries, of those taken over (not ``fresh_at``), in order."""
    return np.setdiff1d(np.arange(length), fresh_at, assume_unique=True)


def _params_of(key: tuple[Any, ...]) -> dict[str, Any]:
    """The filters of a mask's key (:func:`~kbgraph.search.student.versioned.filter_key`)."""
    kb, statuses, domains, kinds, min_success, min_quality, agent = key
    return {"kb": kb, "statuses": statuses, "domains": domains, "kinds": kinds, "min_success": min_success,
            "min_quality": min_quality, "agent": agent}


def _among(values: npt.NDArray[Any], allowed: Sequence[Any]) -> npt.NDArray[np.bool_]:
    """Which of ``values`` (strings or None) are among ``allowed``, as Cypher's ``IN``."""
    wanted = set(allowed)
    return np.fromiter((v is not None and v in wanted for v in values), dtype=bool, count=len(values))
