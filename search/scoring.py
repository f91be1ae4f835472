"""Pure scoring functions of kbgraph's retrieval (DESIGN §3), testable without a database.

Every function here is a formula from the design or a seed paper, with the formula cited in its
docstring. Nothing here reads, writes or connects; the retrieval module runs these over the rows
Neo4j returns.

Conventions shared by all functions:

- **Similarities** (cosines) are accepted in [-1, 1] (a rounding slack of ``1e-4`` either side is
  tolerated) and, wherever a score is built from them, **clamped to [0, 1]**: a negative cosine
  (opposite meaning) is treated as no evidence of relevance, the same as an orthogonal one. This
  keeps every blended score in [0, 1] so the parts can be mixed and compared.
- **Weights and probabilities** (λ, α, edge weights, success, precision, resolution effectiveness,
  decay δ) must lie in [0, 1]; values outside are *rejected*, never clamped, because they signal a
  bug or a bad setting rather than rounding.
- **NaN or infinite** inputs are always rejected with a :class:`ValueError` naming the argument.
- Vectors need not be unit length: cosines are computed on normalised copies, and a zero vector
  has cosine 0 with everything (it carries no direction).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from kbgraph.search.utility import NEUTRAL_UTILITY

__all__ = [
    "FloatArray",
    "LambdaKind",
    "coarse_score",
    "combine_problem_goal",
    "cosine_similarity",
    "direct_scores",
    "fit_score",
    "domain_distance",
    "fine_score",
    "hybrid_score",
    "issue_match",
    "lambda_schedule",
    "mael_step_score",
    "max_normalise",
    "minmax_normalise",
    "mmr",
    "mmr_from_similarity",
    "neo4j_to_cosine",
    "path_score",
    "stage_blend",
    "step_similarity",
    "success_weight",
    "support_score",
    "teacher_step_score",
    "transferability",
    "workflow_score",
]

FloatArray = npt.NDArray[np.float64]
LambdaKind = Literal["exponential", "linear", "constant"]

#: Rounding slack accepted around [-1, 1] for cosines and [0, 1] for Neo4j scores (float32 vectors).
SIMILARITY_SLACK = 1e-4


# --------------------------------------------------------------------------- validation helpers


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


def _rows(values: npt.ArrayLike, name: str) -> FloatArray:
    """A matrix of row vectors; an empty input is a 0×0 matrix, a 1-d vector is one row."""
    array = _array(values, name)
    if array.size == 0:
        return np.zeros((0, 0), dtype=np.float64)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a matrix of row vectors, got shape {array.shape}")
    return array


def _unit_rows(rows: FloatArray) -> FloatArray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0  # a zero row stays zero: cosine 0 with everything
    unit: FloatArray = rows / norms
    return unit


def _same_dimension(a: FloatArray, b: FloatArray, a_name: str, b_name: str) -> None:
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"{a_name} and {b_name} have different dimensions ({a.shape[-1]} and {b.shape[-1]})"
        )


# --------------------------------------------------------------------------- similarities


def neo4j_to_cosine(score: float) -> float:
    """Converts a Neo4j cosine vector-index score back to the cosine: ``cos = 2·score − 1``.

    Neo4j reports cosine similarity as ``score = (1 + cos) / 2`` in [0, 1] (DESIGN §1); scores must
    be converted before they are mixed with anything else. A score outside [0, 1] by more than the
    rounding slack raises ValueError; the result is clamped to [-1, 1] to absorb float32 rounding.
    """
    number = _finite(score, "score")
    if not -SIMILARITY_SLACK <= number <= 1.0 + SIMILARITY_SLACK:
        raise ValueError(f"score must be a Neo4j cosine score in [0, 1], got {number}")
    return min(1.0, max(-1.0, 2.0 * number - 1.0))


def cosine_similarity(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Plain cosine ``a·b / (‖a‖·‖b‖)`` in [-1, 1]; 0.0 when either vector is zero. Not clamped."""
    left, right = _vector(a, "a"), _vector(b, "b")
    _same_dimension(left, right, "a", "b")
    norm = float(np.linalg.norm(left) * np.linalg.norm(right))
    if norm == 0.0:
        return 0.0
    return min(1.0, max(-1.0, float(left @ right) / norm))


def combine_problem_goal(problem: npt.ArrayLike, goal: npt.ArrayLike) -> FloatArray:
    """The problem-goal vector ``r = f(π) + f(γ)`` (Agent KB §A.1), scaled to unit length.

    Cosine ignores scale, so the unit scaling does not change :func:`coarse_score`; it only makes
    the vector fit a cosine index. A zero sum stays the zero vector.
    """
    p, g = _vector(problem, "problem"), _vector(goal, "goal")
    _same_dimension(p, g, "problem", "goal")
    total = p + g
    norm = float(np.linalg.norm(total))
    combined: FloatArray = total / norm if norm > 0 else total
    return combined


def coarse_score(query_pg: npt.ArrayLike, candidate_pg: npt.ArrayLike) -> float:
    """Coarse (workflow-level) score ``S_coarse = cos(f(π)+f(γ), f(π̂)+f(γ̂))`` (Agent KB §A.1).

    Takes the **combined** problem-goal vectors, one 1-d vector per side: either an experience's
    ``pg_embedding`` (the embedding of its problem and goal text) or the output of
    :func:`combine_problem_goal` when problem and goal were embedded separately. Never a pair.

    Returns the cosine clamped to [0, 1] (negative cosine counts as no similarity), so that it can
    be blended with :func:`fine_score`. The θ_coarse cut-off is applied by the caller.
    """
    query, candidate = _vector(query_pg, "query_pg"), _vector(candidate_pg, "candidate_pg")
    _same_dimension(query, candidate, "query_pg", "candidate_pg")
    return max(0.0, cosine_similarity(query, candidate))


def fine_score(query_steps: npt.ArrayLike, candidate_steps: npt.ArrayLike) -> float:
    """Fine (step-level) score ``S_fine = (1/m) Σ_j max_ℓ cos(s_ℓ, ŝ_j)`` (Agent KB §A.1, DESIGN §3).

    ``query_steps`` is the m×d matrix of the steps executed so far ``ŝ_1..ŝ_m``; ``candidate_steps``
    the n×d matrix of a candidate experience's steps ``s_1..s_n``. A 1-d vector counts as one step.
    Each executed step is matched to its most similar candidate step; the mean over the m executed
    steps (the paper sums; DESIGN divides by m) keeps the score in [0, 1]. Each cosine is clamped
    at 0 first, so an executed step with no positively similar candidate step contributes 0.

    Returns 0.0 when either side has no steps (nothing executed yet, or a step-less experience).
    """
    query, candidate = _rows(query_steps, "query_steps"), _rows(candidate_steps, "candidate_steps")
    if query.shape[0] == 0 or candidate.shape[0] == 0:
        return 0.0
    _same_dimension(query, candidate, "query_steps", "candidate_steps")
    cosines = np.clip(_unit_rows(query) @ _unit_rows(candidate).T, 0.0, 1.0)  # m×n
    return float(np.clip(cosines.max(axis=1).mean(), 0.0, 1.0))


# --------------------------------------------------------------------------- stage blend


def lambda_schedule(
    t: float,
    kind: LambdaKind = "exponential",
    rate: float = 0.25,
    floor: float = 0.2,
) -> float:
    """The stage weight λ(t) of ``S(t) = λ(t)·S_coarse + (1−λ(t))·S_fine`` (Agent KB §A.1).

    ``t`` is the number of steps executed so far (t ≥ 0). Every kind gives λ(0) = 1 (nothing
    executed: only the problem-goal match counts), is non-increasing in t and never below ``floor``:

    - ``"exponential"``: ``λ(t) = max(floor, exp(−rate·t))``;
    - ``"linear"``: ``λ(t) = max(floor, 1 − rate·t)``;
    - ``"constant"``: ``λ(0) = 1``, then ``λ(t) = max(floor, 1 − rate)`` for every t > 0 (a fixed
      blend as soon as any step has been executed).

    ``rate`` must be finite and ≥ 0; ``floor`` in [0, 1]; otherwise ValueError.
    """
    steps = _finite(t, "t")
    if steps < 0:
        raise ValueError(f"t must be >= 0 (steps executed so far), got {steps}")
    speed = _finite(rate, "rate")
    if speed < 0:
        raise ValueError(f"rate must be >= 0, got {speed}")
    lowest = _unit_interval(floor, "floor")
    if steps == 0:
        return 1.0
    if kind == "exponential":
        value = math.exp(-speed * steps)
    elif kind == "linear":
        value = 1.0 - speed * steps
    elif kind == "constant":
        value = 1.0 - speed
    else:
        raise ValueError(f"kind must be 'exponential', 'linear' or 'constant', got {kind!r}")
    return min(1.0, max(lowest, value))


def stage_blend(coarse: float, fine: float, lam: float) -> float:
    """``S(t) = λ·S_coarse + (1−λ)·S_fine`` (Agent KB §A.1); λ in [0, 1], scores finite."""
    weight = _unit_interval(lam, "lam")
    return weight * _finite(coarse, "coarse") + (1.0 - weight) * _finite(fine, "fine")


# --------------------------------------------------------------------------- hybrid lexical + semantic


def minmax_normalise(scores: npt.ArrayLike) -> FloatArray:
    """Min-max normalisation over one query's candidate set: ``(x − min) / (max − min)``.

    Used on full-text (Lucene) scores, which are unbounded and only comparable within one query.
    When all scores are equal there is no spread to normalise: the result is all **1.0** when the
    common score is positive (every candidate matched the text equally well) and all **0.0**
    otherwise (no candidate matched; give a candidate absent from the full-text results score 0).
    An empty input gives an empty array; NaN or infinite scores raise ValueError.
    """
    array = _scores(scores, "scores")
    if array.size == 0:
        return np.zeros(0, dtype=np.float64)
    low, high = float(array.min()), float(array.max())
    if high == low:
        return np.full(array.shape, 1.0 if high > 0 else 0.0, dtype=np.float64)
    normalised: FloatArray = (array - low) / (high - low)
    return normalised


def max_normalise(scores: npt.ArrayLike) -> FloatArray:
    """Non-negative scores (BM25) relative to the best of one query's candidates: ``x / max``.

    0 means no match, so it is the natural bottom: two candidates that match almost equally keep
    almost equal scores, where min-max over them would stretch a small length difference to the
    whole [0, 1] range. All zeros (or an empty input) stay zeros; a negative, NaN or infinite score
    raises ValueError.
    """
    array = _scores(scores, "scores")
    if array.size and float(array.min()) < 0.0:
        raise ValueError("scores must be >= 0")
    high = float(array.max()) if array.size else 0.0
    if high <= 0.0:
        return np.zeros(array.shape, dtype=np.float64)
    normalised: FloatArray = array / high
    return normalised


def hybrid_score(semantic: npt.ArrayLike, lexical: npt.ArrayLike, alpha: float = 0.5) -> FloatArray:
    """Hybrid retrieval ``α·text + (1−α)·semantic`` (Agent KB §E.2; α = 0.5 was best there).

    ``semantic`` are cosine similarities of the candidates (convert Neo4j index scores with
    :func:`neo4j_to_cosine` first), clamped to [0, 1]. ``lexical`` are the raw full-text scores of
    the same candidates, in the same order, normalised per query with :func:`minmax_normalise`.
    ``alpha`` weighs the lexical part and must be in [0, 1]. Returns one score in [0, 1] per
    candidate.
    """
    weight = _unit_interval(alpha, "alpha")
    sem = _scores(semantic, "semantic")
    lex = _scores(lexical, "lexical")
    if sem.shape != lex.shape:
        raise ValueError(
            f"semantic and lexical must score the same candidates ({sem.size} vs {lex.size} scores)"
        )
    if sem.size and (sem.min() < -1.0 - SIMILARITY_SLACK or sem.max() > 1.0 + SIMILARITY_SLACK):
        raise ValueError("semantic scores must be cosine similarities in [-1, 1]")
    combined: FloatArray = weight * minmax_normalise(lex) + (1.0 - weight) * np.clip(sem, 0.0, 1.0)
    return combined


# --------------------------------------------------------------------------- transfer, success, reward


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


def transferability(domain_distance: float, tau: float = 1.0) -> float:
    """Transferability ``trans = exp(−d_domain / τ)`` (Agent KB eq. 4), in (0, 1].

    ``domain_distance`` must be finite and ≥ 0 (0 → trans 1); the temperature ``tau`` finite and
    > 0 (larger τ forgives domain differences more).
    """
    distance = _finite(domain_distance, "domain_distance")
    if distance < 0:
        raise ValueError(f"domain_distance must be >= 0, got {distance}")
    temperature = _finite(tau, "tau")
    if temperature <= 0:
        raise ValueError(f"tau must be > 0, got {temperature}")
    return math.exp(-distance / temperature)


def success_weight(score: float, success: float, trans: float = 1.0) -> float:
    """``S_final = S_workflow · trans · E.μ.success`` (Agent KB eq. 5).

    ``success`` (an experience's success rate) and ``trans`` (see :func:`transferability`) must be
    in [0, 1]; ``score`` must be finite.
    """
    return (
        _finite(score, "score")
        * _unit_interval(trans, "trans")
        * _unit_interval(success, "success")
    )


def mael_step_score(similarity: float, reward: float, alpha: float = 0.5) -> float:
    """MAEL step-wise retrieval score ``α·similarity(s_t, s_j) + (1−α)·reward(s_j)`` (α = 0.5).

    ``similarity`` is a cosine, clamped to [0, 1]; ``reward`` is used as given (finite; kbgraph
    stores step rewards in [-1, 1]); ``alpha`` in [0, 1].
    """
    weight = _unit_interval(alpha, "alpha")
    return weight * _similarity(similarity, "similarity") + (1.0 - weight) * _finite(reward, "reward")


# --------------------------------------------------------------------------- graph traversal


def path_score(
    seed_score: float,
    edge_weights: Sequence[float],
    hop_decay: float = 0.8,
    edge_type_weights: Mapping[str, float] | None = None,
    types: Sequence[str] | None = None,
    trans: float = 1.0,
) -> float:
    """Score of a node reached from a seed over a path (DESIGN §3, graph traversal)::

        score(seed) · Π_i [ w(edge_i) · type_weight(type_i) ] · δ^hops · trans(node)

    ``edge_weights`` are the ``weight`` properties of the path's edges in order (each in [0, 1]);
    hops = ``len(edge_weights)``, so an empty path is the seed itself (``seed_score · trans``).
    ``hop_decay`` δ is in [0, 1]. ``types`` names each edge's relation type (e.g. a
    :class:`~kbgraph.models.RelationType`) and ``edge_type_weights`` maps a type to its weight in
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


# --------------------------------------------------------------------------- diversity


def _count(k: int) -> int:
    """``k`` as a count of results: an integer (not a bool) ≥ 0, else ValueError."""
    try:
        count = operator.index(k)
    except TypeError:
        raise ValueError(f"k must be an integer, got {k!r}") from None
    if isinstance(k, bool):
        raise ValueError("k must be an integer, not a bool")
    if count < 0:
        raise ValueError(f"k must be >= 0, got {count}")
    return count


def mmr(
    candidate_scores: npt.ArrayLike,
    candidate_vectors: npt.ArrayLike,
    k: int,
    lam: float = 0.5,
) -> list[int]:
    """Maximal Marginal Relevance selection (AutoRefine §3; DESIGN §3 uses λ ≈ 0.5)::

        MMR(p_j) = λ·rel(p_j) − (1−λ)·max_{p_s ∈ selected} cos(p_j, p_s)

    Greedy: the first pick is the most relevant candidate, then each pick maximises MMR over the
    rest. ``candidate_scores`` are the n relevance scores, ``candidate_vectors`` the n×d embeddings
    in the same order. Returns the indices of up to ``k`` candidates in the order picked (all of
    them when k ≥ n; ``[]`` when k = 0). Ties go to the lowest index, so the result is
    deterministic. k < 0, λ outside [0, 1], NaN/inf or mismatched shapes raise ValueError.
    """
    count = _count(k)
    weight = _unit_interval(lam, "lam")
    relevance = _scores(candidate_scores, "candidate_scores")
    vectors = _rows(candidate_vectors, "candidate_vectors")
    n = relevance.size
    if vectors.shape[0] != n:
        raise ValueError(f"{n} candidate_scores but {vectors.shape[0]} candidate_vectors")
    if n == 0 or count == 0:
        return []
    unit = _unit_rows(vectors)
    return mmr_from_similarity(relevance, unit @ unit.T, count, weight)


def mmr_from_similarity(
    candidate_scores: npt.ArrayLike,
    similarity: npt.ArrayLike,
    k: int,
    lam: float = 0.5,
) -> list[int]:
    """:func:`mmr` given the n×n cosine similarity matrix of the candidates instead of their
    vectors (retrieval computes it inside Neo4j, so no embedding has to travel). Same greedy
    selection, tie-breaking and validation; the matrix must be n×n and finite.
    """
    count = _count(k)
    weight = _unit_interval(lam, "lam")
    relevance = _scores(candidate_scores, "candidate_scores")
    n = relevance.size
    matrix = np.asarray(similarity, dtype=np.float64)
    if matrix.shape != (n, n):
        raise ValueError(f"similarity must be {n}x{n} for {n} candidates, got shape {matrix.shape}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("similarity must be finite")
    if n == 0 or count == 0:
        return []
    selected: list[int] = []
    available = np.ones(n, dtype=bool)
    # Highest similarity of each candidate to anything selected so far (none yet: no penalty).
    redundancy = np.full(n, -np.inf)
    while len(selected) < min(count, n):
        if selected:
            objective = weight * relevance - (1.0 - weight) * redundancy
        else:
            objective = relevance.copy()
        objective[~available] = -np.inf
        best = int(np.argmax(objective))  # argmax returns the first maximum: lowest index wins
        selected.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, matrix[best])
    return selected


# --------------------------------------------------------------------------- teacher phase


def issue_match(issue_similarity: float, resolution_effectiveness: float) -> float:
    """``issue_match(s_j, s_p) = sim(s_j.issue_type, s_p.issue_type) · s_j.resolution_effectiveness``
    (Agent KB eq. 9).

    ``issue_similarity`` is a similarity of the two issue types (1 for the same type), clamped to
    [0, 1]; ``resolution_effectiveness`` must be in [0, 1].
    """
    return _similarity(issue_similarity, "issue_similarity") * _unit_interval(
        resolution_effectiveness, "resolution_effectiveness"
    )


def step_similarity(
    func_sim: float, exec_sim: float, w_func: float = 0.5, w_exec: float = 0.5
) -> float:
    """``sim_step = w_func·sim_func + w_exec·sim_exec`` (Agent KB eq. 8).

    ``func_sim`` compares the steps' functional purpose, ``exec_sim`` their execution details; both
    are cosines clamped to [0, 1]. The weights must be finite and ≥ 0, not both 0; they are divided
    by their sum (so (2, 1) means (2/3, 1/3)), which keeps the result in [0, 1].
    """
    wf, we = _finite(w_func, "w_func"), _finite(w_exec, "w_exec")
    if wf < 0 or we < 0:
        raise ValueError(f"w_func and w_exec must be >= 0, got {wf} and {we}")
    total = wf + we
    if total == 0:
        raise ValueError("w_func and w_exec cannot both be 0")
    return (wf * _similarity(func_sim, "func_sim") + we * _similarity(exec_sim, "exec_sim")) / total


def teacher_step_score(
    step_similarities: npt.ArrayLike,
    issue_matches: npt.ArrayLike,
    precision: float = 1.0,
) -> float:
    """Teacher step score of one experience for one problematic step s_p (Agent KB eqs. 6–7)::

        S_step(E_i, s_p) = max_{s_j ∈ E_i.S} sim_step(s_j, s_p) · issue_match(s_j, s_p)

    weighted by the experience's ``Precision(E_i)`` (Agent KB §A.1 refinement retrieval).
    ``step_similarities`` (from :func:`step_similarity`) and ``issue_matches`` (from
    :func:`issue_match`) hold one value per step of the experience, in the same order; both must be
    in [0, 1], as must ``precision``. An experience without steps scores 0.0.
    """
    weight = _unit_interval(precision, "precision")
    sims = _scores(step_similarities, "step_similarities")
    matches = _scores(issue_matches, "issue_matches")
    if sims.shape != matches.shape:
        raise ValueError(
            f"step_similarities and issue_matches must have one value per step ({sims.size} vs {matches.size})"
        )
    if sims.size == 0:
        return 0.0
    for name, values in (("step_similarities", sims), ("issue_matches", matches)):
        if values.min() < 0.0 or values.max() > 1.0:
            raise ValueError(f"{name} must be in [0, 1]")
    return float((sims * matches).max()) * weight


# --------------------------------------------------------------------------- student direct score


def support_score(trajectories: int, saturation: int = 100) -> float:
    """Evidence behind an experience: ``min(1, ln(1+n) / ln(1+n_sat))`` for one that stands for
    ``n`` trajectories (its sources; an abstract experience: its instances' sources).

    Logarithmic, because the tenth confirming trajectory adds less trust than the second, and
    saturating at ``saturation`` so the most common workflow cannot outgrow relevance. n ≥ 0,
    saturation ≥ 1, else ValueError.
    """
    if isinstance(trajectories, bool) or int(trajectories) != trajectories or trajectories < 0:
        raise ValueError(f"trajectories must be an integer >= 0, got {trajectories!r}")
    if isinstance(saturation, bool) or int(saturation) != saturation or saturation < 1:
        raise ValueError(f"saturation must be an integer >= 1, got {saturation!r}")
    return min(1.0, math.log1p(trajectories) / math.log1p(saturation))


def fit_score(stage: Any, trans: Any, success: Any, share: Any, success_floor: float) -> Any:
    """How well an experience fits a query before its support bonus (eq. 5 with a floor)::

        fit = stage · trans · (floor + (1−floor)·success) · share

    Elementwise: floats or numpy arrays. :func:`direct_scores` adds β·support to it, and a
    workflow takes the fit of its best instance (:func:`workflow_score`)."""
    return stage * trans * (success_floor + (1.0 - success_floor) * success) * share


def workflow_score(evidence: float, support: float, support_weight: float = 0.1) -> float:
    """The student-phase score of a workflow (an abstract experience) from its instances::

        score(W) = stage(m*)·trans(m*)·(floor + (1−floor)·success(m*))·share(m*) + β·support(m*)

    where m* is the instance that worked and fits the query best: ``evidence`` is its score before
    support, ``support`` its :func:`support_score`. It is :func:`direct_scores`' formula for that
    instance, because the workflow fits a task exactly as well as its closest run did: the workflow
    of the run most like this task is the answer. Measured on the development sets, adding the
    popularity of the whole workflow instead (the support of all its runs) ranked the most common
    way first on every vague request (retail 0.538 against 0.557, real runs same). All in [0, 1].
    """
    fit = _unit_interval(evidence, "evidence")
    trust = _unit_interval(support, "support")
    beta = _unit_interval(support_weight, "support_weight")
    return fit + beta * trust


def direct_scores(
    *,
    semantic: npt.ArrayLike,
    structural: npt.ArrayLike,
    has_structure: npt.ArrayLike,
    fine: npt.ArrayLike,
    lexical: npt.ArrayLike,
    trans: npt.ArrayLike,
    success: npt.ArrayLike,
    support: npt.ArrayLike,
    quality: npt.ArrayLike,
    structure_weight: float = 0.5,
    lam: float = 1.0,
    alpha: float = 0.5,
    success_floor: float = 0.2,
    support_weight: float = 0.1,
    quality_weight: float = 0.0,
    utility: npt.ArrayLike | None = None,
    utility_weight: float = 0.0,
    share: npt.ArrayLike | None = None,
) -> dict[str, FloatArray]:
    """The student-phase score of n candidates found directly by an index (DESIGN §3), vectorised.

    With every similarity a cosine clamped to [0, 1]::

        lexical = BM25 / max BM25 over the candidates  (0 for a candidate with none of the terms)
        textual = (1−α)·semantic + α·lexical         (Agent KB §E.2 hybrid, over problem and goal)
        coarse  = (1−ω)·textual + ω·structural       (textual alone where has_structure is False)
        stage   = λ·coarse + (1−λ)·fine              (Agent KB §A.1)
        direct  = stage · trans · (floor + (1−floor)·success) · share + β·support   (eq. 5, plus evidence)
        direct  ← (1−w_q)·direct + w_q·quality        (MAEL: α·sim + (1−α)·reward)
        direct  ← direct · ((1−w_u) + w_u·utility/0.5) (Agent KB D.3 utility, learnt; 1 without feedback)

    The full-text index covers the same fields as the semantic index (problem, goal), so the
    lexical channel is mixed into that one, and the structural index (workflow shape) stands
    beside both. ``support`` is :func:`support_score` per candidate; it is a bonus, so ``direct``
    may exceed 1 by up to β (only the ranking matters). Returns every part by name
    (``lexical``, ``textual``, ``coarse``, ``stage``, ``success_factor``, ``direct``) so results
    can explain themselves. ``share`` is how often an experience's way solved its task relative to
    the way that solved it most often (1 for the most common way, or unknown; defaults to 1): when
    one task was solved three times by refusing and once by transferring, refusing is the more
    likely answer to a task like it (transferring gets 1/3); a task solved four ways once each
    leaves them all at 1. The utility factor multiplies, so experiences of equal utility (a KB
    without feedback) keep their order; ``utility`` defaults to 1 for every candidate.
    Shapes must agree; weights in [0, 1]; NaN anywhere raises ValueError.
    """
    sem = np.clip(_scores(semantic, "semantic"), 0.0, 1.0)
    n = sem.size
    utilities = np.ones(n) if utility is None else _scores(utility, "utility")
    shares = np.ones(n) if share is None else _scores(share, "share")
    arrays = {
        "structural": _scores(structural, "structural"),
        "fine": _scores(fine, "fine"),
        "lexical": _scores(lexical, "lexical"),
        "trans": _scores(trans, "trans"),
        "success": _scores(success, "success"),
        "support": _scores(support, "support"),
        "quality": _scores(quality, "quality"),
        "utility": utilities,
        "share": shares,
    }
    mask = np.asarray(has_structure, dtype=bool).reshape(-1)
    for name, array in [*arrays.items(), ("has_structure", mask)]:
        if array.size != n:
            raise ValueError(f"{name} has {array.size} values for {n} candidates")
    for name in ("trans", "success", "support", "quality", "utility", "share"):
        array = arrays[name]
        if array.size and (array.min() < 0.0 or array.max() > 1.0):
            raise ValueError(f"{name} values must lie in [0, 1]")
    omega = _unit_interval(structure_weight, "structure_weight")
    weight_lam = _unit_interval(lam, "lam")
    weight_alpha = _unit_interval(alpha, "alpha")
    floor = _unit_interval(success_floor, "success_floor")
    beta = _unit_interval(support_weight, "support_weight")
    w_quality = _unit_interval(quality_weight, "quality_weight")
    w_utility = _unit_interval(utility_weight, "utility_weight")

    structure = np.clip(arrays["structural"], 0.0, 1.0)
    lexical_norm = max_normalise(arrays["lexical"]) if n else np.zeros(0)
    textual = (1.0 - weight_alpha) * sem + weight_alpha * lexical_norm
    coarse = np.where(mask, (1.0 - omega) * textual + omega * structure, textual)
    stage = weight_lam * coarse + (1.0 - weight_lam) * np.clip(arrays["fine"], 0.0, 1.0)
    success_factor = floor + (1.0 - floor) * arrays["success"]
    direct = fit_score(stage, arrays["trans"], arrays["success"], arrays["share"], floor) + beta * arrays["support"]
    direct = (1.0 - w_quality) * direct + w_quality * arrays["quality"]
    utility_factor = (1.0 - w_utility) + w_utility * arrays["utility"] / NEUTRAL_UTILITY
    direct = direct * utility_factor
    return {
        "lexical": lexical_norm,
        "textual": textual,
        "coarse": coarse,
        "stage": stage,
        "success_factor": success_factor,
        "utility_factor": utility_factor,
        "direct": direct,
    }
