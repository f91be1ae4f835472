"""The student phase's direct score of a candidate (docs/design.md §3): every part of relevance and weight
put together, with the support bonus, quality, utility and the share of its way."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from kbgraph.search.scoring._checks import FloatArray, _scores, _unit_interval
from kbgraph.search.scoring._learnt import utility_factor
from kbgraph.search.scoring._stages import max_normalise


def support_score(trajectories: int, saturation: int) -> float:
    """Evidence behind an experience: ``min(1, ln(1+n) / ln(1+n_sat))`` for one that stands for
    ``n`` trajectories (its sources; an abstract experience: its instances' sources).

    Logarithmic, because the tenth confirming trajectory adds less trust than the second, and
    saturating at ``saturation`` (``SearchWeights.outcomes.support_saturation``) so the most common workflow
    cannot outgrow relevance. n ≥ 0, saturation ≥ 1, else ValueError.
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


def workflow_score(evidence: float, support: float, support_weight: float) -> float:
    """The student-phase score of a workflow (an abstract experience) from its instances::

        score(W) = stage(m*)·trans(m*)·(floor + (1−floor)·success(m*))·share(m*) + β·support(m*)

    where m* is the instance that worked and fits the query best: ``evidence`` is its score before
    support, ``support`` its :func:`support_score`. It is :func:`direct_scores`' formula for that
    instance, because the workflow fits a task exactly as well as its closest run did: the workflow
    of the run most like this task is the answer. Measured on the development sets, adding the
    popularity of the whole workflow instead (the support of all its runs) ranked the most common
    way first on every vague request (retail 0.538 against 0.557, real runs same). All in [0, 1];
    ``support_weight`` is β (``SearchWeights.outcomes.support_weight``).
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
    structure_weight: float,
    lam: float,
    alpha: float,
    success_floor: float,
    support_weight: float,
    quality_weight: float,
    utility_weight: float,
    lexical_normalised: bool,
    utility: npt.ArrayLike | None = None,
    share: npt.ArrayLike | None = None,
    intent: npt.ArrayLike | None = None,
    has_intent: npt.ArrayLike | None = None,
    intent_weight: float,
    intent_spread: bool = False,
) -> dict[str, FloatArray]:
    """The student-phase score of n candidates found directly by an index (docs/design.md §3), vectorised.

    With every similarity a cosine clamped to [0, 1]::

        lexical = BM25 / max BM25 over the candidates  (0 for a candidate with none of the terms)
        textual = (1−α)·semantic + α·lexical         (Agent KB §E.2 hybrid, over problem and goal)
        coarse  = (1−ω)·textual + ω·structural       (textual alone where has_structure is False)
        coarse  ← (1−ι)·coarse + ι·intent             (a request without steps; intent of a candidate
                                                       without one: the mean of those with one;
                                                       intent_spread: (intent − min) / (max − min)
                                                       over the candidates with one)
        stage   = λ·coarse + (1−λ)·fine              (Agent KB §A.1)
        direct  = stage · trans · (floor + (1−floor)·success) · share + β·support   (eq. 5, plus evidence)
        direct  ← (1−w_q)·direct + w_q·quality        (MAEL: α·sim + (1−α)·reward)
        direct  ← direct · ((1−w_u) + w_u·utility/0.5) (Agent KB D.3 utility, learnt; 1 without feedback)

    The full-text index covers the same fields as the semantic index (problem, goal), so the
    lexical channel is mixed into that one, and the structural index (workflow shape) stands
    beside both. ``fine`` is :func:`fine_score` per candidate, ``support`` :func:`support_score`
    and the utility factor :func:`utility_factor`; support is a bonus, so ``direct``
    may exceed 1 by up to β (only the ranking matters). Returns every part by name
    (``lexical``, ``textual``, ``coarse``, ``stage``, ``success_factor``, ``direct``) so results
    can explain themselves. ``share`` is how often an experience's way solved its task relative to
    the way that solved it most often (1 for the most common way, or unknown; defaults to 1): when
    one task was solved three times by refusing and once by transferring, refusing is the more
    likely answer to a task like it (transferring gets 1/3); a task solved four ways once each
    leaves them all at 1. ``intent`` is :func:`~kbgraph.search.scoring.intent_match` per candidate
    (``has_intent`` False where it has none: a record without steps, whose operations are unknown),
    mixed with weight ι = ``intent_weight``; a candidate without one is mixed with the mean of the
    others' (neither favoured nor penalised: left unmixed, it would outrank every candidate the
    intent match lowered, the more the lower the matches). The utility factor multiplies, so experiences of equal utility (a KB
    without feedback) keep their order; ``utility`` defaults to 1 for every candidate.
    ``lexical_normalised``: ``lexical`` is already a share of what the query asks (coverage, in
    [0, 1]) rather than raw BM25. The weights come from ``SearchWeights`` (ω, λ(t) and whether the
    lexical score is normalised are decided per query by the student search); there is no default.
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
    if lexical_normalised:  # already a share of what the query asks (coverage), in [0, 1]
        lexical_norm = np.clip(arrays["lexical"], 0.0, 1.0)
    else:
        lexical_norm = max_normalise(arrays["lexical"]) if n else np.zeros(0)
    textual = (1.0 - weight_alpha) * sem + weight_alpha * lexical_norm
    coarse = np.where(mask, (1.0 - omega) * textual + omega * structure, textual)
    iota = _unit_interval(intent_weight, "intent_weight")
    if intent is not None and iota > 0:
        matched = np.clip(_scores(intent, "intent"), 0.0, 1.0)
        intent_mask = np.ones(n, dtype=bool) if has_intent is None else np.asarray(has_intent, dtype=bool).reshape(-1)
        if matched.size != n or intent_mask.size != n:
            raise ValueError(f"intent has {matched.size} values for {n} candidates")
        if intent_mask.any():
            if intent_spread:
                matched = spread(matched, intent_mask)
            neutral = float(matched[intent_mask].mean())
            coarse = (1.0 - iota) * coarse + iota * np.where(intent_mask, matched, neutral)
    stage = weight_lam * coarse + (1.0 - weight_lam) * np.clip(arrays["fine"], 0.0, 1.0)
    success_factor = floor + (1.0 - floor) * arrays["success"]
    direct = fit_score(stage, arrays["trans"], arrays["success"], arrays["share"], floor) + beta * arrays["support"]
    direct = (1.0 - w_quality) * direct + w_quality * arrays["quality"]
    by_utility = utility_factor(arrays["utility"], w_utility)
    direct = direct * by_utility
    return {
        "lexical": lexical_norm,
        "textual": textual,
        "coarse": coarse,
        "stage": stage,
        "success_factor": success_factor,
        "utility_factor": by_utility,
        "direct": direct,
    }


def spread(scores: FloatArray, among: npt.NDArray[np.bool_]) -> FloatArray:
    """``scores`` stretched to [0, 1] over the entries ``among`` marks: ``(x − min) / (max − min)``
    (all 1 where they are equal), the others left as they are. The intent match of one request
    spans a few tenths (cosines of short texts), where the lexical score, relative to the best,
    spans the whole range: stretched, the intent weighs in the mix what its weight says."""
    out = scores.copy()
    if not among.any():
        return out
    low, high = float(scores[among].min()), float(scores[among].max())
    out[among] = (scores[among] - low) / (high - low) if high > low else 1.0
    return out
