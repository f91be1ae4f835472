"""Checks shared by every scoring formula: numbers, weights, similarities, vectors and score arrays.

They carry the conventions of :mod:`kbgraph.search.scoring` (rejecting NaN, never clamping a weight,
clamping a similarity to [0, 1]) so that each formula states them once, by calling these.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Rounding slack accepted around [-1, 1] for cosines and [0, 1] for Neo4j scores (float32 vectors).
SIMILARITY_SLACK = 1e-4


def _finite(value: float, name: str) -> float:
    """``value`` as a float; rejects NaN, ±inf and non-numbers with a message naming ``name``."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, not a bool")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number}")
    return number


def _unit_interval(value: float, name: str) -> float:
    """A weight or probability: finite and in [0, 1], else ValueError (never clamped)."""
    number = _finite(value, name)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {number}")
    return number


def _similarity(value: float, name: str) -> float:
    """A cosine in [-1, 1] (± slack), clamped to [0, 1]: negative similarity counts as none."""
    number = _finite(value, name)
    if not -1.0 - SIMILARITY_SLACK <= number <= 1.0 + SIMILARITY_SLACK:
        raise ValueError(f"{name} must be a similarity in [-1, 1], got {number}")
    return min(1.0, max(0.0, number))


def _array(values: npt.ArrayLike, name: str) -> FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric") from None
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return array


def _vector(values: npt.ArrayLike, name: str) -> FloatArray:
    array = _array(values, name)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d vector, got shape {array.shape}")
    return array


def _scores(values: npt.ArrayLike, name: str) -> FloatArray:
    array = _array(values, name)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-d sequence of scores, got shape {array.shape}")
    return array


def _same_dimension(a: FloatArray, b: FloatArray, a_name: str, b_name: str) -> None:
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{a_name} and {b_name} have different dimensions ({a.shape[-1]} and {b.shape[-1]})"
        )
