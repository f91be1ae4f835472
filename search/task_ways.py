"""How often an experience's way solved its task, relative to the way that solved it most often.

Experiences of one task (the same ``task_key``) that took different ways (different operations)
compete: the scoring facts count, once per task among the candidates, the successful runs of each
of its ways (``search_candidates_score`` returns them as ``[task_key, operations, runs]`` rows); a
way that hands the task to a human (:mod:`kbgraph.search.handoff`) counts its runs at the hand-off
credit. A candidate's share is
its way's runs over the best way's, so the way that worked most often keeps its score and rarer
ones are discounted; 1 when nothing is known or the way never worked (its success rate already
says so).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kbgraph.search.handoff import hands_off

__all__ = ["TaskWays", "task_ways", "unique_ways", "way_share"]

#: task_key → [(operations of one way, successful runs of that way)]
TaskWays = dict[str, list[tuple[tuple[str, ...] | None, float]]]


def task_ways(rows: Iterable[Sequence[Any]], handoff_credit: float) -> TaskWays:
    """The ``[task_key, operations, runs]`` rows of the scoring facts, by task, each way's runs
    counted at ``handoff_credit`` when it hands the task to a human."""
    ways: TaskWays = {}
    for task_key, operations, runs in rows:
        way = tuple(operations) if operations is not None else None
        credit = handoff_credit if way is not None and hands_off(way) else 1.0
        ways.setdefault(str(task_key), []).append((way, float(runs or 0) * credit))
    return ways


def unique_ways(parts: Iterable[Iterable[Sequence[Any]]]) -> list[list[Any]]:
    """The ``[task_key, operations, runs]`` rows of several answers as one list: one row per task
    and operations, an absent way the same as an empty one, the first of equal rows kept (the
    halves of one search's scoring facts each return the ways of their own tasks)."""
    seen: dict[tuple[Any, ...], list[Any]] = {}
    for part in parts:
        for task_key, way, worked in part:
            seen.setdefault((task_key, tuple(way or ())), [task_key, way, worked])
    return list(seen.values())


def way_share(task_key: str | None, operations: Sequence[str] | None, ways: TaskWays) -> float:
    """The share of a concrete experience of task ``task_key`` whose way is ``operations``."""
    known = ways.get(task_key) if task_key is not None else None
    if not known or operations is None:  # (an experience without operations has no way to compare)
        return 1.0
    most = max(runs for _, runs in known)
    mine = sum(runs for way, runs in known if way == tuple(operations))
    return 1.0 if most <= 0 or mine <= 0 else mine / most
