"""Pure scoring functions of kbgraph's retrieval (docs/design.md §3), testable without a database.

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

The formulas come in families, one module each: :mod:`._vectors` (Neo4j scores, cosines, the
problem-goal vector), :mod:`._stages` (coarse, fine, the stage blend λ(t), lexical normalisation
and the hybrid score), :mod:`._graph` (transferability, success, reward, path decay),
:mod:`._diversity` (MMR), :mod:`._teacher` (the teacher phase's step, issue and failure scores, and the evidence of a recovery) and
:mod:`._direct` (the student phase's direct score). :mod:`._checks` holds the checks above.
"""

from __future__ import annotations

from kbgraph.search.scoring._checks import SIMILARITY_SLACK, FloatArray
from kbgraph.search.scoring._direct import direct_scores, fit_score, support_score, workflow_score
from kbgraph.search.scoring._diversity import mmr, mmr_from_similarity
from kbgraph.search.scoring._graph import domain_distance, mael_step_score, path_score, success_weight, transferability
from kbgraph.search.scoring._stages import (
    LambdaKind, coarse_score, fine_score, hybrid_score, lambda_schedule, max_normalise, minmax_normalise, stage_blend,
)
from kbgraph.search.scoring._teacher import (
    UNKNOWN_ISSUE_TYPES, IssueWeights, execution_similarity, failure_score, issue_match, issue_similarity,
    recovery_evidence, step_similarity, teacher_step_score,
)
from kbgraph.search.scoring._vectors import combine_problem_goal, cosine_similarity, neo4j_to_cosine

__all__ = [
    "SIMILARITY_SLACK",
    "UNKNOWN_ISSUE_TYPES",
    "FloatArray",
    "IssueWeights",
    "LambdaKind",
    "coarse_score",
    "combine_problem_goal",
    "cosine_similarity",
    "direct_scores",
    "domain_distance",
    "execution_similarity",
    "failure_score",
    "fine_score",
    "fit_score",
    "hybrid_score",
    "issue_match",
    "issue_similarity",
    "lambda_schedule",
    "mael_step_score",
    "max_normalise",
    "minmax_normalise",
    "mmr",
    "mmr_from_similarity",
    "neo4j_to_cosine",
    "path_score",
    "recovery_evidence",
    "stage_blend",
    "step_similarity",
    "success_weight",
    "support_score",
    "teacher_step_score",
    "transferability",
    "workflow_score",
]
