"""The intent match of a request without executed steps: does a workflow do what the request asks?

A request in the customer's own words ("swap the kettle that arrived for the black one", "call off
my order and also send back the lamp") says what it wants *changed*. A workflow's own words for
that are its state-changing operations (``exchange_delivered_order_items``), read as words
(:func:`kbgraph.core.shapes.intent_text`). The request is split into its asks
(:func:`kbgraph.search.asks.split_asks`); each ask is compared with each operation of the
workflow, each ask against the operation it means best in the whole memory, and the whole request
with the workflow's operations read as one text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbgraph.search.scoring._checks import _unit_interval

__all__ = ["intent_match", "intent_matches", "intent_share", "one_ask_matches", "repeat_factors"]


def intent_match(whole: float, asks_by_operation: npt.ArrayLike, best_by_ask: npt.ArrayLike,
                 unasked_penalty: float, order_penalty: float) -> float:
    """How well a workflow does what a request asks, in [0, 1].

    One ask: ``whole``, the cosine of the request with the workflow's operations read as one text
    (:func:`kbgraph.core.shapes.intent_text`). Several asks: each ask is judged against the best
    operation it could have meant in the whole memory, ``best_by_ask`` (its largest cosine over every
    operation the namespace knows), so that an ask worded far from every operation's words counts
    as much as one worded close to them::

        p(o | a) = cos(a, o) / best(a)                          (1 for the operation the ask means)
        cover    = mean over asks a of max over its operations o of p(o | a)
        asked    = mean over its operations o of max over asks a of p(o | a)
        intent   = cover · asked^γ · mean over asks of best(a)

    A workflow that does every ask and nothing else scores the asks' mean best cosine; one that
    does one of two asks loses what the other ask's best operation would have given; and operations
    nobody asked for cost through ``asked`` with γ = ``unasked_penalty``. A customer says first what
    they want done first, and an agent does it in that order: with ``order_penalty`` ε > 0 the match
    is multiplied by ``1 − ε · inverted``, the share of pairs of asks whose operations (each ask's
    best of the workflow's, by where the workflow first makes it) come in the other order — the
    workflow "cancel, then exchange" over "exchange, then cancel" for "cancel A, and swap B". The last factor is the same
    for every workflow of one request: it only puts the match on a cosine's scale, where the other
    parts of the coarse score are. ``asks_by_operation``: cosines, asks (rows) × the workflow's
    distinct operations (columns); a workflow without operations is matched as a whole. Cosines are
    clamped to [0, 1]; γ in [0, 1]."""
    gamma = _unit_interval(unasked_penalty, "unasked_penalty")
    base = _cosine(whole, "whole")
    matrix = np.asarray(asks_by_operation, dtype=np.float64)
    best = np.asarray(best_by_ask, dtype=np.float64).reshape(-1)
    if matrix.ndim != 2:
        raise ValueError(f"asks_by_operation must be a matrix (asks × operations), got {matrix.ndim} dimensions")
    if (matrix.size and not np.isfinite(matrix).all()) or (best.size and not np.isfinite(best).all()):
        raise ValueError("asks_by_operation or best_by_ask contains NaN or infinite values")
    if matrix.shape[0] < 2 or matrix.shape[1] == 0:
        return float(base)
    if best.size != matrix.shape[0]:
        raise ValueError(f"best_by_ask has {best.size} values for {matrix.shape[0]} asks")
    # One workflow making every column: the formula is written once, in intent_matches.
    return float(intent_matches([base], matrix, [range(matrix.shape[1])], best, gamma, order_penalty)[0])


def intent_matches(wholes: npt.ArrayLike, asks_by_operation: npt.ArrayLike, sequences: Sequence[Sequence[int]],
                   best_by_ask: npt.ArrayLike, unasked_penalty: float,
                   order_penalty: float) -> npt.NDArray[np.float64]:
    """:func:`intent_match` of many workflows of one request at once: ``asks_by_operation`` holds the
    cosines of the asks (rows) with every operation any of them makes (columns), ``sequences`` each
    workflow's distinct operations as column numbers, ``wholes`` each workflow's whole-request
    cosine. Equal to calling :func:`intent_match` workflow by workflow (the intent channel ranks
    every workflow of a namespace: thousands at 10,000 experiences)."""
    gamma = _unit_interval(unasked_penalty, "unasked_penalty")
    epsilon = _unit_interval(order_penalty, "order_penalty")
    base = np.clip(np.asarray(wholes, dtype=np.float64).reshape(-1), 0.0, 1.0)
    matrix = np.asarray(asks_by_operation, dtype=np.float64)
    best = np.clip(np.asarray(best_by_ask, dtype=np.float64).reshape(-1), 0.0, 1.0)
    if base.size != len(sequences):
        raise ValueError(f"{base.size} whole cosines for {len(sequences)} workflows")
    if matrix.ndim != 2 or (matrix.size and not np.isfinite(matrix).all()) or not np.isfinite(best).all():
        raise ValueError("asks_by_operation must be a finite matrix (asks × operations)")
    widest = max((len(columns) for columns in sequences), default=0)
    if matrix.shape[0] < 2 or widest == 0:
        return base
    if best.size != matrix.shape[0]:
        raise ValueError(f"best_by_ask has {best.size} values for {matrix.shape[0]} asks")
    # Each workflow's columns, padded with a column of zeros (a cosine clamped to 0 adds nothing
    # to a maximum and is left out of the means by ``made``).
    padded = np.hstack([np.clip(matrix, 0.0, 1.0), np.zeros((matrix.shape[0], 1))])
    index, made = _padded_columns(sequences, widest, matrix.shape[1])
    cosines = padded[:, index]                                      # asks × workflows × operations
    # An ask's best operation in the memory is at least as close as any of this workflow's.
    best_here = np.maximum(best[:, None], cosines.max(axis=2))      # asks × workflows
    relative = np.divide(cosines, best_here[:, :, None], out=np.zeros_like(cosines),
                         where=best_here[:, :, None] > 0)
    cover = relative.max(axis=2).mean(axis=0)
    counts = np.maximum(made.sum(axis=1), 1)
    asked = (relative.max(axis=0) * made).sum(axis=1) / counts
    scores = cover * asked ** gamma * best_here.mean(axis=0)
    if epsilon > 0:
        scores = scores * (1.0 - epsilon * _inverted(relative, made))
    return np.where(made.any(axis=1), scores, base)


def _inverted(relative: npt.NDArray[np.float64], made: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """For each workflow, the share of pairs of asks (earlier ask, later ask) whose operations come
    in the other order: each ask's operation is the one of the workflow it means best (``relative``,
    asks × workflows × the workflow's operations in the order it first makes them); two asks of one
    operation are in no order."""
    asks = relative.shape[0]
    position = np.where(made[None, :, :], relative, -1.0).argmax(axis=2)   # asks × workflows
    earlier, later = np.triu_indices(asks, 1)
    inverted: npt.NDArray[np.float64] = (position[earlier] > position[later]).mean(axis=0)
    return inverted


def _padded_columns(sequences: Sequence[Sequence[int]], widest: int,
                    columns: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Each workflow's columns as a row of ``widest`` indexes, the missing ones pointing at the
    padding column ``columns`` (one past the last), and which entries are the workflow's own."""
    index = np.full((len(sequences), widest), columns)
    for row, made in enumerate(sequences):
        index[row, :len(made)] = made
    return index, index < columns


def _cosine(value: float, name: str) -> float:
    number = float(value)
    if not np.isfinite(number):
        raise ValueError(f"{name} must be a finite cosine, got {value!r}")
    if number < -1.0001 or number > 1.0001:
        raise ValueError(f"{name} must be a cosine in [-1, 1], got {value!r}")
    return min(1.0, max(0.0, number))


def intent_share(intent_weight: float, best_semantic: float, scale: str, new_below: float, known_above: float) -> float:
    """ι for one request: how much of the coarse score the intent match takes.

    ``best_semantic`` is the best cosine of the request with any candidate's problem and goal: how
    near the memory holds its words. ``fixed`` applies ι as it is; ``novelty`` scales it by
    ``1 − best``; ``ramp`` gives all of ι to a request farther than ``new_below`` from every stored
    text, none to one nearer than ``known_above`` (a task the memory holds, answered by its own runs
    whatever their operations) and a straight line between::

        ι · clip((known_above − best) / (known_above − new_below), 0, 1)
    """
    best = min(max(best_semantic, 0.0), 1.0)
    if scale == "fixed":
        return intent_weight
    if scale == "novelty":
        return intent_weight * (1.0 - best)
    if scale != "ramp":
        raise ValueError(f"unknown intent scale {scale!r} (fixed, novelty, ramp)")
    if known_above <= new_below:
        raise ValueError(f"known_above ({known_above}) must exceed new_below ({new_below})")
    return intent_weight * min(max((known_above - best) / (known_above - new_below), 0.0), 1.0)


def one_ask_matches(wholes: npt.ArrayLike, by_operation: npt.ArrayLike, sequences: Sequence[Sequence[int]],
                    best: float, penalty: float) -> npt.NDArray[np.float64]:
    """The intent match of a request of one ask against many workflows: each workflow's ``whole``
    (the request against its operations read as one text), and for a workflow of two or more
    distinct operations that times how much of it the request asks for::

        asked  = mean over its distinct operations o of cos(request, o) / best
        intent = whole · asked^γ1                       (whole alone for one operation or none)

    One ask is one change: read as one text, "return delivered order items, then modify pending
    order address, then modify pending order items" is about as near "can I swap it?" as "exchange
    delivered order items" is, though it also makes two changes nobody asked for. ``by_operation``:
    the request's cosine with every operation any workflow makes; ``sequences``: each workflow's
    distinct operations as indexes into it; ``best``: the request's largest cosine with any operation
    the memory knows (raised to the workflow's own largest when the memory's is smaller); γ1 = ``penalty`` ≥ 0
    (0: the whole alone). Cosines are clamped to [0, 1]."""
    gamma = float(penalty)
    if not np.isfinite(gamma) or gamma < 0:
        raise ValueError(f"penalty must be a finite number ≥ 0, got {penalty!r}")
    raw_wholes = np.asarray(wholes, dtype=np.float64).reshape(-1)
    raw_cosines = np.asarray(by_operation, dtype=np.float64).reshape(-1)
    if raw_wholes.size != len(sequences):
        raise ValueError(f"{raw_wholes.size} whole cosines for {len(sequences)} workflows")
    if not np.isfinite(raw_cosines).all() or not np.isfinite(raw_wholes).all() or not np.isfinite(best):
        raise ValueError("wholes, by_operation and best must be finite cosines")
    base, cosines = np.clip(raw_wholes, 0.0, 1.0), np.clip(raw_cosines, 0.0, 1.0)
    if gamma == 0 or not sequences:
        return base
    widest = max(len(columns) for columns in sequences)
    if widest < 2:
        return base
    # Each workflow's columns, padded with a column of zeros that ``made`` leaves out.
    index, made = _padded_columns(sequences, widest, cosines.size)
    own = np.append(cosines, 0.0)[index]
    counts = made.sum(axis=1)
    top = np.maximum(min(max(float(best), 0.0), 1.0), own.max(axis=1))
    asked = np.divide(own.sum(axis=1), np.maximum(counts, 1) * top, out=np.ones(len(sequences)), where=top > 0)
    return np.where(counts > 1, base * asked ** gamma, base)


def repeat_factors(made: Sequence[int], distinct: Sequence[int], penalty: float) -> npt.NDArray[np.float64]:
    """What a workflow's repeated changes cost its intent match: ``(distinct / made)^ρ`` for each
    workflow that makes ``made`` state changes of ``distinct`` operations, ρ = ``penalty`` ≥ 0.

    The match reads a workflow's distinct operations, so "credit the interest, credit it again,
    credit it twice more, then report it" answers "credit me what I'm owed and report the error" as
    well as "credit it, then report it" does. The changes it repeats are changes the request did not
    ask for, as the unasked operations are; the simplest workflow that makes what was asked is the
    likeliest answer. 1 for a workflow that repeats nothing (or makes nothing); ρ = 0: off."""
    rho = float(penalty)
    if not np.isfinite(rho) or rho < 0:
        raise ValueError(f"penalty must be a finite number ≥ 0, got {penalty!r}")
    total = np.asarray(made, dtype=np.float64).reshape(-1)
    kinds = np.asarray(distinct, dtype=np.float64).reshape(-1)
    if total.size != kinds.size:
        raise ValueError(f"{total.size} counts of changes for {kinds.size} counts of operations")
    if (kinds > total).any() or (kinds < 0).any():
        raise ValueError("a workflow makes at least as many changes as distinct operations, and none is negative")
    if rho == 0:
        return np.ones(total.size)
    ratio = np.divide(kinds, total, out=np.ones(total.size), where=total > 0)
    return np.asarray(ratio ** rho, dtype=np.float64)
