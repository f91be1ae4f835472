"""The k best of a numpy ranking, as the exact scans order them (kbgraph.search.ranked)."""

from __future__ import annotations

import numpy as np

from kbgraph.search.ranked import best_positions


def test_the_k_best_come_highest_first_with_ties_to_the_key_even_across_the_kth() -> None:
    rank = np.array([0.5, 0.9, 0.5, 0.1, 0.5, 0.9])
    ids = ["e", "b", "c", "a", "d", "a"]
    assert best_positions(rank, np.arange(6), 3, ids.__getitem__) == [5, 1, 2]  # 0.9 a, 0.9 b, then 0.5 c
    assert best_positions(rank, np.array([0, 2, 3]), 2, ids.__getitem__) == [2, 0]  # only among those given
    assert best_positions(rank, np.arange(6), 0, ids.__getitem__) == []
    assert best_positions(rank, np.arange(0), 3, ids.__getitem__) == []
