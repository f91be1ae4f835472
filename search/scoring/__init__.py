"""Pure scoring functions of kbgraph's retrieval (docs/design.md §3), testable without a database.

Every function here is a formula from the design or a seed paper, with the formula cited in its
docstring, and every one of them ranks: this is the one place a ranking formula is written, and
the searches call these rather than writing a formula again (``tests/test_architecture.py`` fails
when an exported formula is not called outside this package). Nothing here reads, writes or
connects; the retrievers run these over the rows Neo4j returns. No formula has a default for a
tunable: the weights come from ``SearchWeights`` (student, step search) or ``RefineWeights``
(teacher), so there is no second default to disagree with them.

Which function ranks what:

- **Student search** (:mod:`kbgraph.search.student`), per candidate found by an index:
  :func:`neo4j_to_cosine` (every index score), :func:`fine_score` (executed steps),
  :func:`lambda_schedule` (λ(t)), :func:`domain_distance`, :func:`transferability` and
  :func:`carried_over` (a step-less record of another domain carries nothing),
  :func:`support_score`, :func:`outcome_evidence` and :func:`context_factor` (task-conditioned
  feedback), :func:`intent_match` (a request without steps against what a workflow changes)
  sharpened by :func:`history_association` (what the namespace's own requests made),
  all combined by :func:`direct_scores` (lexical scale, hybrid text, coarse, stage
  blend, :func:`fit_score`, support, quality and :func:`utility_factor`); a workflow by
  :func:`fit_score` of its best instance and :func:`workflow_score`; a node reached over the graph
  by :func:`path_score`; the final selection by :func:`mmr_from_similarity`.
- **Step search** (:mod:`kbgraph.search.steps`, MAEL): :func:`step_score`.
- **Teacher** (:mod:`kbgraph.search.teacher`): :func:`execution_similarity`,
  :func:`step_similarity`, :func:`issue_similarity`, :func:`issue_match` and
  :func:`teacher_step_score` for step matches; :func:`recovery_evidence` and
  :func:`failure_score` for failure matches.
- **The LangGraph store** (:mod:`kbgraph.integrations.langgraph`): experiences through the
  student search; its own items by cosine (:func:`neo4j_to_cosine` of the vector index's score).

Utility itself (quality decayed since the last use, plus the decayed usage impact; Agent KB D.3)
is a learning-loop value, :func:`kbgraph.core.utility.utility`. The student search reads it as
the Cypher of ``search_candidates_score`` and ``search_neighbours`` computes it;
``tests/search/scoring/test_utility_in_cypher.py`` pins the two equal on a grid of inputs.

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

The formulas come in families, one module each: :mod:`._vectors` (Neo4j scores, cosines),
:mod:`._stages` (λ(t), the fine score, the lexical scale), :mod:`._graph` (transferability, path
decay), :mod:`._diversity` (MMR), :mod:`._direct` (the student phase's direct, fit and workflow
scores and support), :mod:`._learnt` (what feedback taught: the utility and context factors and
MAEL's step score) and :mod:`._teacher` (the teacher phase's step, issue and failure scores, and
the evidence of a recovery). :mod:`._checks` holds the checks above.
"""

from __future__ import annotations

from kbgraph.search.scoring._direct import direct_scores, fit_score, support_score, workflow_score
from kbgraph.search.scoring._diversity import mmr_from_similarity
from kbgraph.search.scoring._graph import carried_over, domain_distance, path_score, transferability
from kbgraph.search.scoring._intent import intent_match, intent_matches, intent_share, one_ask_matches, repeat_factors
from kbgraph.search.scoring._intent_history import (
    NO_CHANGE, WordOperationCounts, ask_history_association, asks_association, history_association, operations_association,
)
from kbgraph.search.scoring._learnt import context_factor, outcome_evidence, step_score, utility_factor
from kbgraph.search.scoring._stages import fine_score, lambda_schedule
from kbgraph.search.scoring._teacher import (
    UNKNOWN_ISSUE_TYPES, execution_similarity, failure_score, issue_match, issue_similarity, recovery_evidence,
    step_similarity, teacher_step_score,
)
from kbgraph.search.scoring._vectors import neo4j_to_cosine

__all__ = [
    "NO_CHANGE",
    "UNKNOWN_ISSUE_TYPES",
    "WordOperationCounts",
    "carried_over",
    "context_factor",
    "direct_scores",
    "domain_distance",
    "execution_similarity",
    "failure_score",
    "fine_score",
    "fit_score",
    "ask_history_association",
    "asks_association",
    "history_association",
    "operations_association",
    "intent_match",
    "intent_matches",
    "intent_share",
    "one_ask_matches",
    "repeat_factors",
    "issue_match",
    "issue_similarity",
    "lambda_schedule",
    "mmr_from_similarity",
    "neo4j_to_cosine",
    "outcome_evidence",
    "path_score",
    "recovery_evidence",
    "step_score",
    "step_similarity",
    "support_score",
    "teacher_step_score",
    "transferability",
    "utility_factor",
    "workflow_score",
]
