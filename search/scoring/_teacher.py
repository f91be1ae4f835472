"""The teacher phase's formulas (docs/design.md §3, teacher phase; Agent KB eqs. 6–9): how a stored step
is compared with a problematic step, and how the comparisons make one score per experience.

:mod:`kbgraph.search.teacher` runs them over the rows Neo4j returns; its docstring says how
kbgraph fills in each part (the weights are fields of its ``RefineWeights``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy.typing as npt

from kbgraph.core.utility import ability
from kbgraph.search.scoring._checks import _finite, _scores, _similarity, _unit_interval

#: Issue types that say nothing about the issue: classify_issue's catch-all and common stand-ins.
UNKNOWN_ISSUE_TYPES = frozenset({"error", "unknown", "failure"})


class IssueWeights(Protocol):
    """The constants of ``sim(issue types)``; :class:`~kbgraph.search.teacher.RefineWeights` has them.

    A protocol, so that the formula does not depend on the retrieval's request model."""

    @property
    def same_issue(self) -> float: ...

    @property
    def different_issue(self) -> float: ...

    @property
    def unknown_issue(self) -> float: ...


def issue_match(issue_similarity: float, resolution_effectiveness: float) -> float:
    """``issue_match(s_j, s_p) = sim(s_j.issue_type, s_p.issue_type) · s_j.resolution_effectiveness``
    (Agent KB eq. 9).

    ``issue_similarity`` is a similarity of the two issue types (1 for the same type), clamped to
    [0, 1]; ``resolution_effectiveness`` must be in [0, 1].
    """
    return _similarity(issue_similarity, "issue_similarity") * _unit_interval(
        resolution_effectiveness, "resolution_effectiveness"
    )


def step_similarity(func_sim: float, exec_sim: float, w_func: float, w_exec: float) -> float:
    """``sim_step = w_func·sim_func + w_exec·sim_exec`` (Agent KB eq. 8).

    ``func_sim`` compares the steps' functional purpose, ``exec_sim`` their execution details; both
    are cosines clamped to [0, 1]. The weights (``RefineWeights.w_func``, ``w_exec``) must be finite
    and ≥ 0, not both 0; they are divided
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
    precision: float,
) -> float:
    """Teacher step score of one experience for one problematic step s_p (Agent KB eqs. 6–7)::

        S_step(E_i, s_p) = max_{s_j ∈ E_i.S} sim_step(s_j, s_p) · issue_match(s_j, s_p)

    weighted by the experience's ``Precision(E_i)`` (Agent KB §A.1 refinement retrieval).
    ``step_similarities`` (from :func:`step_similarity`) and ``issue_matches`` (from
    :func:`issue_match`) hold one value per step of the experience, in the same order; both must be
    in [0, 1], as must ``precision``. An experience without steps scores 0.0. kbgraph's precision
    is a stored step's (see :mod:`kbgraph.search.teacher`), so the teacher scores each step with
    this and takes the max itself, the earliest step winning a tie.
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


def _issue_key(issue_type: str | None) -> str | None:
    if issue_type is None:
        return None
    key = issue_type.strip().casefold()
    return None if not key or key in UNKNOWN_ISSUE_TYPES else key


def issue_similarity(
    query_issue: str | None, stored_issue: str | None, weights: IssueWeights, same_error: bool = False
) -> float:
    """``sim(issue types)``: ``same_issue`` for the same error (``same_error``: equal error
    signatures, the same error on the same action) or equal types (ignoring case and surrounding
    spaces), ``different_issue`` for two different known types, ``unknown_issue`` when either is
    missing or one of :data:`UNKNOWN_ISSUE_TYPES` (classify_issue's catch-all ``"error"`` names no
    issue — most real errors, which is why the signature counts first)."""
    if same_error:
        return weights.same_issue
    query, stored = _issue_key(query_issue), _issue_key(stored_issue)
    if query is None or stored is None:
        return weights.unknown_issue
    return weights.same_issue if query == stored else weights.different_issue


def execution_similarity(
    query_action: str, query_arguments: Sequence[str], stored_action: str, stored_arguments: Sequence[str]
) -> float:
    """``sim_exec = 0.5·[same action] + 0.5·Jaccard(argument names)``, in [0, 1].

    Actions are compared ignoring case and surrounding spaces; two steps without arguments have
    Jaccard 1 (the same, empty, signature).
    """
    same_action = query_action.strip().casefold() == stored_action.strip().casefold()
    ours, theirs = set(query_arguments), set(stored_arguments)
    union = ours | theirs
    jaccard = len(ours & theirs) / len(union) if union else 1.0
    return 0.5 * float(same_action) + 0.5 * jaccard


def recovery_evidence(worked: int, tried: int) -> float:
    """How far a kind of recovery can be trusted on an error class, from counts alone: Laplace's
    rule of succession ``(worked + 1) / (tried + 2)`` — the chance the next try works given it
    worked ``worked`` of ``tried`` times, the posterior mean under a uniform prior, no fitted
    constant — once it has worked at all; 0 while it never has, however often it was tried (fewer
    failures are not evidence of success: "0 of 1" is no better than "0 of 5"). 2/3 for 1 of 1
    and for 3 of 4, 10/12 for 9 of 10, 1/6 for 1 of 10. ``0 ≤ worked ≤ tried`` must hold."""
    if isinstance(worked, bool) or isinstance(tried, bool) or not isinstance(worked, int) or not isinstance(tried, int):
        raise ValueError(f"worked and tried must be integers, got {worked!r} and {tried!r}")
    if not 0 <= worked <= tried:
        raise ValueError(f"need 0 <= worked <= tried, got worked={worked}, tried={tried}")
    return ability(worked, tried) if worked else 0.0


def failure_score(cosine: float, issue_sim: float, evidence: float) -> float:
    """A failure match's score: ``cosine · sim(issue types) · (0.5 + 0.5 · evidence)``, where
    ``evidence`` (:func:`recovery_evidence`) is how often the recovery shown, of its kind, worked
    on that error class: a failure whose kind of fix tends to work counts for more, one never
    fixed still counts half. ``cosine`` is clamped to [0, 1]; the others must be in [0, 1]."""
    return (_similarity(cosine, "cosine") * _unit_interval(issue_sim, "issue_sim")
            * (0.5 + 0.5 * _unit_interval(evidence, "evidence")))
