"""Teacher phase of retrieval (docs/design.md §3; Agent KB eqs. 6–9): help for the steps that went wrong.

While an agent executes, it hands kbgraph its *problematic steps* — the action it took, the
arguments, and the error it got (or just an issue type). :meth:`TeacherRetriever.refine` answers
with two channels, each over its own vector index:

**Step channel** (``via="vector:step_embedding"``), for every problematic step ``s_p``: the stored
steps nearest to it, grouped per experience ``E_i`` and scored (Agent KB eqs. 6–9)::

    S_step(E_i, s_p) = max_{s_j ∈ E_i.S} sim_step(s_j, s_p) · issue_match(s_j, s_p) · Precision(E_i)
    sim_step         = w_func · sim_func + w_exec · sim_exec          (weights divided by their sum)
    issue_match      = sim(s_j.issue_type, s_p.issue_type) · s_j.resolution_effectiveness

where, in kbgraph (every constant is a field of :class:`RefineWeights`):

- ``sim_func`` — what the steps do: the cosine of the two step embeddings, both embedded from
  ``"{action}: {description}"`` exactly as ingestion embeds steps (the description is the given
  ``text`` or :func:`~kbgraph.core.generalise.describe_step`, plus ``" — failed: <generalised
  error>"`` when the step errored). Negative cosines count as 0.
- ``sim_exec`` — how they were executed: ``0.5·[same action] + 0.5·Jaccard(argument names)``; the
  action comparison ignores case and surrounding spaces, the argument names are the query's
  ``arguments`` keys against the stored step's ``args_schema`` keys, and two argument-less steps
  have Jaccard 1.
- ``sim(issue types)`` — :func:`issue_similarity`: ``same_issue`` (1.0) for the same type,
  ``different_issue`` (0.3) for two different known types, ``unknown_issue`` (0.5) when either side
  has none (a stored step that did not fail has none) or only the catch-all ``"error"`` of
  :func:`~kbgraph.core.experience_rules.classify_issue`.
- ``resolution_effectiveness`` — the stored step's; ``missing_resolution`` (0.5) when absent.
- ``Precision(E_i)`` — ``precision_floor + (1 − precision_floor) · success_rate`` (the fraction of
  its runs that succeeded; ``missing_precision`` when absent). The floor (0.5) matters on real
  runs: most errors happen in runs that later failed for another reason, and the way such a run
  got past the error still teaches, so it ranks below one from a run that succeeded, never at 0.
  For a match on stored steps that failed, precision is 1: their resolution effectiveness (1 when
  the fix went through and the run succeeded, 0.75 when the run succeeded another way, 0.5 when
  the fix went through but the run failed) already weighs the run's outcome.

Only the stored steps the index returned for ``s_p`` take part in the max.

**Criticism channel** (``via="vector:failure_mode_embedding"``), only for problematic steps that
carry an ``error`` or an ``issue_type``: the stored failure modes nearest to the failure, embedded
as ingestion embeds failure modes (``"{issue_type}: {humanised action} failed: {generalised
error}"``). Identical failure modes — the same error on the same action, values masked (their
``signature``) — are one match, counted over the namespace ("seen 24 times in 6 tasks, recovered
in 15"). The *error class* is the same error on any action (the signature's message,
:func:`error_class`); every failure of the query's class is a match, near or not. The answer is
built from the runs that hit the class (:mod:`._next`): what each did next (one form per kind of
action — a retry with changed arguments, the same call, another tool, a handover, a look-up, no
further call) and whether the run then reached its goal, said in runs: "after this error, 2 of 7
runs reached their goal; what they did next: handed over to a person (2 runs)" (``headline``,
``next_actions``); that the call went through is a second fact (``went_through``). The matches of
the query's class come first, ranked by the recovery each shows (a group shows its member by the
same rule): one from a run that then reached its goal, then the form that led to the goal in the
most runs of the class, then a concrete one (it names what to do), then one whose call went
through, then the same call again, then similarity — so a recovery that only made the call go
through in runs that still failed comes after every one that led to success, and says so. The
older count per class and kind of recovery (retry, repeat, switch, none: how often it followed the
error, how often it *worked*, the fix went through and the run then succeeded) is kept as
``recovery_tried`` / ``recovery_worked``; its evidence ``(worked + 1) / (tried + 2)`` once it
worked, 0 while it never did (:func:`~kbgraph.search.scoring.recovery_evidence`), weighs the score.
The other matches follow by score, ``cosine · sim(issue types) · (0.5 +
0.5 · evidence)``, where the same error class counts as the same issue. Precision is deliberately
*not* applied: an experience that failed overall can still show how a failure was recovered, and
its recovery is what this channel returns.

Each experience's overall score is the larger of its best step-channel score and
``failure_weight ·`` its best failure score; :attr:`RefineResults.experiences` ranks by it.

Everything runs inside one namespace (the ``kb`` property), over ``status = 'active'``
experiences only, within the caller's scope (``scope = 'shared' OR owner_agent = agent`` when an
``agent`` is given) and optional domains. Each channel's candidates come from the candidate seam
(:mod:`kbgraph.search.candidates`, with the search settings' ``exact_scan_max`` and
``overfetch_limit``, or the call's ``RefineWeights``): a namespace of at most ``exact_scan_max``
steps is scanned exactly; above it, the index is asked — on Neo4j 5.26 the shared one,
over-fetched, on 2026 for the namespace's nodes only. The window asks for 8 nodes per wanted
experience (``max(4·k, 20)`` of them) first, up to ``overfetch_limit``, and every candidate in the
final window is re-scored before the top ``k`` are kept.

The package: :mod:`._params` holds the request (problematic steps, weights, validation),
:mod:`._results` what comes back, :mod:`._retriever` the retrieval, :mod:`._failures` the
criticism channel's groups, counts and order; the formulas are
:mod:`kbgraph.search.scoring`'s (its teacher family).
"""

from __future__ import annotations

from kbgraph.search.params import MAX_K
from kbgraph.search.scoring import UNKNOWN_ISSUE_TYPES, execution_similarity, issue_similarity
from kbgraph.search.teacher._failures import error_class
from kbgraph.search.teacher._params import (
    ERROR_CHARS, MAX_ACTION_CHARS, MAX_NAME_CHARS, MAX_PROBLEMATIC_STEPS, MAX_TEXT_CHARS, ProblematicStep,
    RefineRequest, RefineWeights, failure_query_text, parse_refine_request, step_query_text,
)
from kbgraph.search.teacher._results import (
    VIA_FAILURE, VIA_STEP, FailureMatch, MatchedStep, RefineResults, StepMatch, StepScore,
)
from kbgraph.search.teacher._retriever import (
    FAILURE_QUERY, GROUP_QUERY, MIN_WINDOW, SCAN_QUERIES, SIGNATURE_QUERY, STEP_QUERY, WINDOW_FACTOR,
    TeacherRetriever,
)

__all__ = [
    "ERROR_CHARS",
    "FAILURE_QUERY",
    "GROUP_QUERY",
    "MAX_ACTION_CHARS",
    "MAX_K",
    "MAX_NAME_CHARS",
    "MAX_PROBLEMATIC_STEPS",
    "MAX_TEXT_CHARS",
    "MIN_WINDOW",
    "SCAN_QUERIES",
    "SIGNATURE_QUERY",
    "STEP_QUERY",
    "UNKNOWN_ISSUE_TYPES",
    "VIA_FAILURE",
    "VIA_STEP",
    "WINDOW_FACTOR",
    "FailureMatch",
    "MatchedStep",
    "ProblematicStep",
    "RefineRequest",
    "RefineResults",
    "RefineWeights",
    "StepMatch",
    "StepScore",
    "TeacherRetriever",
    "error_class",
    "execution_similarity",
    "failure_query_text",
    "issue_similarity",
    "parse_refine_request",
    "step_query_text",
]
