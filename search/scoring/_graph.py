"""What a relevant candidate's score is weighted by (docs/design.md §3): transferability across domains
(Agent KB eq. 4) and the decay along a graph path from a seed. Success (eq. 5) is weighed in
:func:`~kbgraph.search.scoring.fit_score`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy.typing as npt

from kbgraph.search.scoring._checks import _finite, _unit_interval
from kbgraph.search.scoring._vectors import cosine_similarity


def domain_distance(
    query_domain: str,
    candidate_domain: str,
    query_vector: npt.ArrayLike | None = None,
    candidate_vector: npt.ArrayLike | None = None,
    *,
    unknown: float = 1.0,
) -> float:
    """The domain distance ``d_domain`` of Agent KB eq. 4, in [0, 2].

    - 0.0 for the same domain (names equal ignoring case and surrounding spaces);
    - otherwise ``1 − cos(f(D), f(D̂))`` from the two domain embeddings, clamped to [0, 2];
    - otherwise (an embedding missing) ``unknown``, by default 1.0, the distance of two unrelated
      (orthogonal) domains. ``unknown`` must be finite and in [0, 2].
    """
    fallback = _finite(unknown, "unknown")
    if not 0.0 <= fallback <= 2.0:
        raise ValueError(f"unknown must be in [0, 2], got {fallback}")
    if query_domain.strip().casefold() == candidate_domain.strip().casefold():
        return 0.0
    if query_vector is None or candidate_vector is None:
        return fallback
    return min(2.0, max(0.0, 1.0 - cosine_similarity(query_vector, candidate_vector)))


def transferability(domain_distance: float, tau: float) -> float:
    """Transferability ``trans = exp(−d_domain / τ)`` (Agent KB eq. 4), in (0, 1].

    ``domain_distance`` must be finite and ≥ 0 (0 → trans 1); the temperature ``tau`` finite and
    > 0 (``SearchWeights.coarse.tau``; a larger τ forgives domain differences more).
    """
    distance = _finite(domain_distance, "domain_distance")
    if distance < 0:
        raise ValueError(f"domain_distance must be >= 0, got {distance}")
    temperature = _finite(tau, "tau")
    if temperature <= 0:
        raise ValueError(f"tau must be > 0, got {temperature}")
    return math.exp(-distance / temperature)


def carried_over(trans: float, same_domain: bool, has_steps: bool) -> float:
    """What an experience carries into the query's domain: its ``trans`` (:func:`transferability`),
    except that one **without steps from another domain** carries nothing (0).

    A record without steps is a task statement: it says what someone in its own domain asked, not
    how anything was done. What transfers between domains is the way a task was done (its steps,
    its workflow); a bare statement of another domain's task can share words with a request, never
    its answer. Within its own domain it stays a match (similar requests there are answered alike),
    and a query without a domain compares everything alike (``same_domain`` True). ``trans`` in
    [0, 1].
    """
    carried = _unit_interval(trans, "trans")
    return carried if same_domain or has_steps else 0.0


# --------------------------------------------------------------------------- graph traversal


def path_score(
    seed_score: float,
    edge_weights: Sequence[float],
    hop_decay: float,
    edge_type_weights: Mapping[str, float] | None = None,
    types: Sequence[str] | None = None,
    trans: float = 1.0,
) -> float:
    """Score of a node reached from a seed over a path (docs/design.md §3, graph traversal)::

        score(seed) · Π_i [ w(edge_i) · type_weight(type_i) ] · δ^hops · trans(node)

    ``edge_weights`` are the ``weight`` properties of the path's edges in order (each in [0, 1]);
    hops = ``len(edge_weights)``, so an empty path is the seed itself (``seed_score · trans``).
    ``hop_decay`` δ (``SearchWeights.traversal.hop_decay``) is in [0, 1]. ``types`` names each edge's relation type (e.g. a
    :class:`~kbgraph.core.models.RelationType`) and ``edge_type_weights`` maps a type to its weight in
    [0, 1]; without a mapping every type weighs 1. A mapping requires ``types`` of the same length
    as ``edge_weights``, and a type missing from it raises ValueError. ``trans`` (the reached node's
    transferability) is in [0, 1]; ``seed_score`` must be finite.
    """
    seed = _finite(seed_score, "seed_score")
    delta = _unit_interval(hop_decay, "hop_decay")
    transfer = _unit_interval(trans, "trans")
    weights = [_unit_interval(w, f"edge_weights[{i}]") for i, w in enumerate(edge_weights)]
    if types is not None and len(types) != len(weights):
        raise ValueError(f"types has {len(types)} entries but the path has {len(weights)} edges")
    if edge_type_weights is not None and types is None and weights:
        raise ValueError("edge_type_weights needs the types of the path's edges")
    product = 1.0
    for i, weight in enumerate(weights):
        type_weight = 1.0
        if edge_type_weights is not None and types is not None:
            edge_type = str(types[i])
            if edge_type not in edge_type_weights:
                known = ", ".join(sorted(str(k) for k in edge_type_weights))
                raise ValueError(f"no weight for edge type {edge_type!r} (known: {known})")
            type_weight = _unit_interval(edge_type_weights[edge_type], f"edge_type_weights[{edge_type!r}]")
        product *= weight * type_weight
    return seed * product * delta ** len(weights) * transfer
