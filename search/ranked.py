"""The k best of a ranking computed in numpy, as the exact Cypher scans order theirs: highest rank
first, ties to a key of the caller's (an experience's id), and every position tied with the k-th
kept until the ties are broken. The in-process channels share it (the vector channels,
kbgraph.search.student.vector_model; the full-text corpus, kbgraph.search.lexical)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["best_positions"]


def best_positions(rank: npt.NDArray[np.float64], among: npt.NDArray[np.intp], k: int,
                   tie: Callable[[int], Any]) -> list[int]:
    """The ``k`` positions of ``among`` with the highest ``rank``, best first, equal ranks in the
    order of ``tie(position)``. Only the k best and those tied with the last of them are sorted."""
    if k <= 0 or among.size == 0:
        return []
    if among.size > k:
        kth = np.partition(rank[among], among.size - k)[among.size - k]
        among = among[rank[among] >= kth]
    return sorted(among.tolist(), key=lambda i: (-rank[i], tie(i)))[:k]
