"""The teacher phase's retrieval: :class:`TeacherRetriever` embeds the problematic steps, asks the
step and failure-mode indexes (or scans a small namespace exactly: the candidate seam,
:mod:`kbgraph.search.candidates`) and scores what they return with the formulas of
:mod:`kbgraph.search.scoring`."""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypedDict

from kbgraph.embedders import Embedder
from kbgraph.core.weights import SearchWeights
from kbgraph.store.gateway import Neo4jGateway, Row
from kbgraph.search.candidates import GROWTH, MAX_FIRST_FACTOR, Nearest, index_query, nearest
from kbgraph.search.namespace_size import NamespaceSize
from kbgraph.search.overfetch import overfetch
from kbgraph.search.scoring import (
    execution_similarity, issue_match, issue_similarity, neo4j_to_cosine, step_similarity, teacher_step_score,
)
from kbgraph.search.teacher._params import (
    ProblematicStep, RefineRequest, RefineWeights, failure_query_text, parse_refine_request, step_query_text,
)
from kbgraph.search.teacher._failures import error_class, failure_matches, read_groups
from kbgraph.search.teacher._results import FailureMatch, MatchedStep, RefineResults, StepMatch, StepScore
from kbgraph.search.teacher._rows import FailureGroupRow, FailureRow, SignatureRow, StepRow

#: Distinct experiences (or failure modes) each channel's window holds before scoring: k times this,
#: at least MIN_WINDOW. The window's first request is MAX_FIRST_FACTOR nodes per wanted one (steps
#: group into experiences), on either path, so that the scan and the index see the same window.
WINDOW_FACTOR = 4
MIN_WINDOW = 20

STEP_QUERY = "refine_step_vectors"
FAILURE_QUERY = "refine_failure_vectors"
#: The vector index each channel asks.
INDEXES: Final = {STEP_QUERY: "step_text_embedding", FAILURE_QUERY: "failure_mode_embedding"}
#: The exact-scan variants of the two channels (same parameters and rows): a namespace with at
#: most ``exact_scan_max`` steps is scanned exactly (steps and failure modes) instead of asking the
#: vector indexes, as the student search does.
SCAN_QUERIES: Final = {STEP_QUERY: "refine_step_scan", FAILURE_QUERY: "refine_failure_scan"}
GROUP_QUERY = "refine_failure_groups"
SIGNATURE_QUERY = "refine_failure_signatures"


def _argument_names(args_schema: Any) -> list[str]:
    """Argument names of a stored step's ``args_schema`` (stored as a JSON object string)."""
    if isinstance(args_schema, str):
        try:
            args_schema = json.loads(args_schema)
        except ValueError:
            return []
    return [str(name) for name in args_schema] if isinstance(args_schema, Mapping) else []


def _unit_or(value: Any, default: float) -> float:
    """A stored value in [0, 1], or ``default`` when it is missing or not a usable number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return default
    number = float(value)
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else default


def _window(k: int) -> int:
    """How many distinct experiences (or failure modes) a channel's window holds for ``k``."""
    return max(k * WINDOW_FACTOR, MIN_WINDOW)


def _cosine(neo4j_score: Any) -> float:
    return max(0.0, neo4j_to_cosine(float(neo4j_score)))


# --------------------------------------------------------------------------- retrieval


class FailureFilters(TypedDict):
    """The filters the failure-mode queries take (``FAILURE_QUERY``, ``SIGNATURE_QUERY``,
    ``GROUP_QUERY``): the namespace, the request's domains and agent, the runs it leaves out."""

    kb: str
    domains: list[str] | None
    agent: str | None
    exclude_runs: list[str]


class TeacherRetriever:
    """Teacher-phase retrieval over one namespace (see :mod:`kbgraph.search.teacher` for the scores)."""

    def __init__(self, gateway: Neo4jGateway, embedder: Embedder, namespace: str, size: NamespaceSize | None = None,
                 settings: SearchWeights | None = None):
        self.gateway = gateway
        self.embedder = embedder
        self.namespace = namespace
        self._size = size or NamespaceSize(gateway, namespace)
        #: When the namespace is scanned exactly and how far an index is asked: the search settings'
        #: exact_scan_max and overfetch_limit, unless a call's RefineWeights give their own.
        self.policy = (settings or SearchWeights()).scan

    def refine(
        self,
        problematic_steps: Sequence[ProblematicStep | Mapping[str, Any]],
        *,
        domain: str | Sequence[str] | None = None,
        k: int = 5,
        agent: str | None = None,
        weights: RefineWeights | Mapping[str, Any] | None = None,
        exclude_runs: Sequence[str] = (),
        step_names: Sequence[str] | None = None,
    ) -> RefineResults:
        """Experiences whose steps went wrong like ``problematic_steps`` and how they recovered.

        ``domain`` keeps only experiences of that domain (or those domains; case-insensitive);
        private experiences are returned only to their owner ``agent``; ``k`` (1..100, larger is clamped with a
        note) bounds each list per problematic step; ``exclude_runs`` leaves those runs out; problems and
        notes call the steps ``step_names``, one a step (by default ``problematic_steps[i]``). Raises
        :class:`~kbgraph.core.errors.InvalidInputError` naming every problem before anything is searched.
        """
        request, notes = parse_refine_request(problematic_steps, domain=domain, k=k, agent=agent, weights=weights,
                                              exclude_runs=exclude_runs, step_names=step_names)
        steps = request.problematic_steps
        texts = [step_query_text(s) for s in steps] + [failure_query_text(s) for s in steps if s.failed]
        vectors = [[float(x) for x in row] for row in self.embedder.embed(texts)]
        step_vectors, failure_vectors = vectors[: len(steps)], iter(vectors[len(steps) :])

        results = RefineResults()
        by_class: dict[str, set[str]] | None = None  # the namespace's signatures, read once per refine
        for i, step in enumerate(steps):
            results.steps += self._step_matches(i, step, step_vectors[i], request, notes)
            if step.failed:
                if by_class is None:
                    by_class = self._signatures_by_class(request)
                results.failures += self._failure_matches(i, step, next(failure_vectors), request, notes, by_class)
            else:
                notes.append(f"{request.step_name(i)}: no error or issue_type, so no failure modes were searched")

        best: dict[str, float] = {}
        for match in results.steps:
            best[match.experience_id] = max(best.get(match.experience_id, 0.0), match.score)
        for failure in results.failures:
            weighted = request.weights.failure_weight * failure.score
            best[failure.experience_id] = max(best.get(failure.experience_id, 0.0), weighted)
        results.experiences = sorted(best, key=lambda e: (-best[e], e))[: request.k]
        results.notes = notes
        return results

    # -- channels ----------------------------------------------------------------------------------

    def _nearest(
        self, query: str, vector: list[float], request: RefineRequest, key: str, **extra: Any
    ) -> tuple[list[Row], Nearest[str]]:
        """The filtered rows of the last window (until ``k`` distinct ``key`` values survive the
        filters, the index or the namespace runs out, or the limit is reached), by the candidate
        seam's policy (:func:`~kbgraph.search.candidates.nearest`); ``extra``: the query's own
        parameters."""
        window: list[Row] = []

        def page(name: str) -> Callable[[int], tuple[int, list[str]]]:
            def fetch(first: int) -> tuple[int, list[str]]:
                records = self.gateway.read(
                    name, kb=self.namespace, vector=vector, first=first, domains=request.domains,
                    agent=request.agent, exclude_runs=request.exclude_runs, **extra,
                )
                fetched = int(records[0]["fetched"]) if records else 0
                window[:] = list(records[0]["rows"]) if records else []
                return fetched, list(dict.fromkeys(str(row[key]) for row in window))
            return fetch

        # Scores are computed after the index has ranked by cosine alone, so the window holds more
        # than k: a step that failed the same way may sit a little further than steps that did not.
        wanted = _window(request.k)
        first = wanted * MAX_FIRST_FACTOR
        policy = self.policy.overridden(request.weights.exact_scan_max, request.weights.overfetch_limit)
        # The exact path grows its window like the index path (the filters may drop steps), over
        # the namespace's own steps only.
        scan_window = page(SCAN_QUERIES[query])
        result = nearest(
            policy, self._size.get(policy.exact_scan_max).steps, wanted,
            scan=lambda: overfetch(scan_window, wanted, first, policy.overfetch_limit, GROWTH).rows,
            fetch=page(index_query(self.gateway, query, INDEXES[query])), first=first)
        return window, result

    def _step_matches(
        self, index: int, step: ProblematicStep, vector: list[float], request: RefineRequest, notes: list[str]
    ) -> list[StepMatch]:
        w = request.weights
        # The step queries keep, of the steps of one text and one profile, those that can reach
        # the window's best experiences (see refine_step_scan.cypher): the window's size, with the
        # precision's terms the scores below use.
        window, fetched = self._nearest(
            STEP_QUERY, vector, request, "experience_id", per_group=_window(request.k),
            precision_floor=w.precision_floor, missing_precision=w.missing_precision)
        rows = [StepRow.from_record(row) for row in window]
        if fetched.limit_hit:
            notes.append(
                f"{request.step_name(index)}: the {fetched.fetched} nearest steps of the index held only "
                f"{len(fetched.rows)} matching experiences; step matches may be incomplete"
            )
        arguments = list(step.arguments)
        by_experience: dict[str, list[tuple[StepRow, float, float, float, float, float]]] = {}
        for row in rows:
            sim_func = _cosine(row.score)
            sim_exec = execution_similarity(step.action, arguments, row.action, _argument_names(row.args_schema))
            sim_step = step_similarity(sim_func, sim_exec, w.w_func, w.w_exec)
            issue_sim = issue_similarity(step.issue_type, row.issue_type, w,
                                         same_error=bool(row.signature) and row.signature == step.signature)
            match = issue_match(issue_sim, _unit_or(row.resolution_effectiveness, w.missing_resolution))
            by_experience.setdefault(row.experience_id, []).append(
                (row, sim_func, sim_exec, sim_step, issue_sim, match)
            )

        matches: list[StepMatch] = []
        for experience_id, candidates in by_experience.items():
            first = candidates[0][0]
            success = _unit_or(first.success_rate, w.missing_precision)
            floored = w.precision_floor + (1.0 - w.precision_floor) * success
            # A stored step that failed carries its run's outcome in its resolution effectiveness.
            precisions = [1.0 if c[0].resolution_effectiveness is not None else floored for c in candidates]
            values = [teacher_step_score([c[3]], [c[5]], p) for c, p in zip(candidates, precisions, strict=True)]
            best = max(range(len(candidates)), key=lambda i: (values[i], -(candidates[i][0].order or 0)))
            precision, score = precisions[best], values[best]
            # The stored step that attains the max (ties: the earliest step).
            row, sim_func, sim_exec, sim_step, issue_sim, match = candidates[best]
            matches.append(StepMatch(
                experience_id=experience_id, problem=first.problem, goal=first.goal, domain=first.domain,
                query_step=index,
                step=MatchedStep(
                    id=row.step_id, order=row.order, action=row.action, text=row.text, issue_type=row.issue_type,
                    resolution_effectiveness=row.resolution_effectiveness,
                ),
                breakdown=StepScore(sim_func=sim_func, sim_exec=sim_exec, sim_step=sim_step,
                                    issue_similarity=issue_sim, issue_match=match, precision=precision, score=score),
            ))
        matches.sort(key=lambda m: (-m.score, m.experience_id))
        return matches[: request.k]

    def _failure_filters(self, request: RefineRequest) -> FailureFilters:
        return {"kb": self.namespace, "domains": request.domains, "agent": request.agent,
                "exclude_runs": request.exclude_runs}

    def _signatures_by_class(self, request: RefineRequest) -> dict[str, set[str]]:
        """Every error signature of the namespace that passes the request's filters, by error class."""
        by_class: dict[str, set[str]] = {}
        for row in map(SignatureRow.from_record, self.gateway.read(SIGNATURE_QUERY, **self._failure_filters(request))):
            cls = error_class(row.signed)
            if cls is not None:
                by_class.setdefault(cls, set()).add(row.signature)
        return by_class

    def _failure_matches(
        self, index: int, step: ProblematicStep, vector: list[float], request: RefineRequest, notes: list[str],
        by_class: dict[str, set[str]],
    ) -> list[FailureMatch]:
        window, fetched = self._nearest(FAILURE_QUERY, vector, request, "failure_id")
        rows = [FailureRow.from_record(row) for row in window]
        if fetched.limit_hit:
            notes.append(
                f"{request.step_name(index)}: the {fetched.fetched} nearest failure modes of the index held only "
                f"{len(fetched.rows)} matching ones; failure matches may be incomplete"
            )
        # Identical failure modes (one signature) are one match: the nearest of them stands for it.
        nearest: dict[str, FailureRow] = {}
        for row in rows:
            nearest.setdefault(row.signature or row.failure_id, row)
        # Every group of the error classes involved (the query's and those near it), so that the
        # evidence for a kind of recovery counts every failure of its class, near the query or not.
        classes = {error_class(step.signed)} | {error_class(r.signed) for r in nearest.values()}
        wanted = {signature for cls in classes if cls is not None for signature in by_class.get(cls, ())}
        signatures = sorted(wanted | {key for key, row in nearest.items() if row.signature})
        groups = read_groups(FailureGroupRow.from_record(row) for row in self.gateway.read(
            GROUP_QUERY, signatures=signatures, vector=vector, **self._failure_filters(request))) if signatures else {}
        return failure_matches(index, step, nearest, groups, request.weights, request.k)
