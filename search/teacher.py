"""Teacher phase of retrieval (DESIGN §3; Agent KB eqs. 6–9): help for the steps that went wrong.

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
  ``text`` or :func:`~kbgraph.ingest.generalise.describe_step`, plus ``" — failed: <generalised
  error>"`` when the step errored). Negative cosines count as 0.
- ``sim_exec`` — how they were executed: ``0.5·[same action] + 0.5·Jaccard(argument names)``; the
  action comparison ignores case and surrounding spaces, the argument names are the query's
  ``arguments`` keys against the stored step's ``args_schema`` keys, and two argument-less steps
  have Jaccard 1.
- ``sim(issue types)`` — :func:`issue_similarity`: ``same_issue`` (1.0) for the same type,
  ``different_issue`` (0.3) for two different known types, ``unknown_issue`` (0.5) when either side
  has none (a stored step that did not fail has none) or only the catch-all ``"error"`` of
  :func:`~kbgraph.ingest.abstract.classify_issue`.
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
in 15"), showing the group's most useful recovery: concrete and followed by a run that
succeeded, else a concrete retry of the same call, else any concrete one or a fix that went
through. A match scores ``cosine · sim(issue types) · (0.5 + 0.5 · value)``, the value of that
recovery (1, 2/3, 1/3 or 0), so the errors that were fixed come first. Precision is deliberately *not* applied: an experience that failed overall
can still show how a failure was recovered, and its recovery is what this channel returns.

Each experience's overall score is the larger of its best step-channel score and
``failure_weight ·`` its best failure score; :attr:`RefineResults.experiences` ranks by it.

Everything runs inside one namespace (the ``kb`` property), over ``status = 'active'``
experiences only, within the caller's scope (``scope = 'shared' OR owner_agent = agent`` when an
``agent`` is given) and optional domains. Neo4j 5.26 cannot filter inside a vector index, so each
query over-fetches (:func:`kbgraph.search.overfetch.overfetch`: ``8·k`` nodes first, up to 4096)
and every candidate in the final window is re-scored before the top ``k`` are kept.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from pydantic import (
    BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator,
)

from kbgraph.embedders import Embedder
from kbgraph.errors import InvalidInputError
from kbgraph.gateway import Neo4jGateway, Row
from kbgraph.ingest.abstract import classify_issue
from kbgraph.ingest.generalise import describe_step, generalise_text, humanise_action
from kbgraph.ingest.recovery import error_signature
from kbgraph.search.namespace_size import DEFAULT_EXACT_SCAN_MAX, NamespaceSize
from kbgraph.search.overfetch import Overfetched, overfetch
from kbgraph.search.scoring import (
    UNKNOWN_ISSUE_TYPES, execution_similarity, issue_match, issue_similarity, neo4j_to_cosine, step_similarity,
    teacher_step_score,
)

__all__ = [
    "FAILURE_QUERY",
    "MAX_K",
    "MAX_PROBLEMATIC_STEPS",
    "STEP_QUERY",
    "UNKNOWN_ISSUE_TYPES",
    "VIA_FAILURE",
    "VIA_STEP",
    "FailureMatch",
    "MatchedStep",
    "ProblematicStep",
    "RefineRequest",
    "RefineResults",
    "RefineWeights",
    "StepMatch",
    "StepScore",
    "TeacherRetriever",
    "execution_similarity",
    "failure_query_text",
    "issue_similarity",
    "parse_refine_request",
    "step_query_text",
]

#: At most this many problematic steps per call.
MAX_PROBLEMATIC_STEPS = 50
#: ``k`` above this is clamped (with a note in the results).
MAX_K = 100
MAX_ACTION_CHARS = 200
MAX_NAME_CHARS = 200
MAX_TEXT_CHARS = 10_000
#: Characters of a generalised error kept in a query text (ingestion keeps as many).
ERROR_CHARS = 300
#: Over-fetching: the index is first asked for ``FIRST_FACTOR · k`` nodes, at most ``FETCH_LIMIT``.
FIRST_FACTOR = 8
FETCH_LIMIT = 4096
#: Distinct experiences (or failure modes) each channel's window holds before scoring: k times this,
#: at least MIN_WINDOW.
WINDOW_FACTOR = 4
MIN_WINDOW = 20

#: A namespace with at most this many steps is scanned exactly (steps and failure modes) instead
#: of asking the shared vector indexes, as the student search does (``exact_scan_max``; see
#: :mod:`kbgraph.search.namespace_size`).
EXACT_SCAN_MAX = DEFAULT_EXACT_SCAN_MAX

STEP_QUERY = "refine_step_vectors"
FAILURE_QUERY = "refine_failure_vectors"
#: The exact-scan variants of the two channels (same parameters and rows).
SCAN_QUERIES: Final = {STEP_QUERY: "refine_step_scan", FAILURE_QUERY: "refine_failure_scan"}
GROUP_QUERY = "refine_failure_groups"
VIA_STEP: Final = "vector:step_embedding"
VIA_FAILURE: Final = "vector:failure_mode_embedding"

_STEP_FIELD_LIMITS = {"text": MAX_TEXT_CHARS, "error": MAX_TEXT_CHARS, "issue_type": MAX_NAME_CHARS}


# --------------------------------------------------------------------------- input


class ProblematicStep(BaseModel):
    """A step the agent is stuck on: what it called, with which arguments, and what went wrong.

    ``text`` is the step's generalised description; when absent it is built from ``action`` and
    ``arguments`` with :func:`~kbgraph.ingest.generalise.describe_step` (concrete values become
    placeholders). When ``error`` is given without ``issue_type``, the issue type is classified
    from the error with :func:`~kbgraph.ingest.abstract.classify_issue`, as ingestion does.
    """

    model_config = ConfigDict(strict=True, extra="forbid")

    action: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    text: str | None = None
    error: str | None = None
    issue_type: str | None = None

    _issue_classified: bool = PrivateAttr(default=False)

    @field_validator("action")
    @classmethod
    def _action(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("must not be empty")
        if len(value) > MAX_ACTION_CHARS:
            raise ValueError(f"must be at most {MAX_ACTION_CHARS} characters, got {len(value)}")
        return value

    @field_validator("text", "error", "issue_type")
    @classmethod
    def _bounded(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        limit = _STEP_FIELD_LIMITS[str(info.field_name)]
        if len(value) > limit:
            raise ValueError(f"must be at most {limit:,} characters, got {len(value):,}")
        if value.strip():
            return value.strip() if info.field_name == "issue_type" else value
        if info.field_name == "text":
            return None  # a blank description: build one from the action and arguments
        if info.field_name == "error":
            raise ValueError("must not be blank (leave it out when the step did not fail)")
        raise ValueError("must not be blank (leave it out to classify the error, or when unknown)")

    @model_validator(mode="after")
    def _classify(self) -> ProblematicStep:
        if self.error is not None and self.issue_type is None:
            self.issue_type = classify_issue(self.error)
            self._issue_classified = True
        return self

    @property
    def issue_classified(self) -> bool:
        """True when ``issue_type`` was classified from ``error`` rather than given."""
        return self._issue_classified

    @property
    def signature(self) -> str | None:
        """The error with its values masked (:func:`~kbgraph.ingest.recovery.error_signature`)."""
        return error_signature(self.action, self.error) if self.error is not None else None

    @property
    def failed(self) -> bool:
        """Whether the criticism (failure-mode) channel is searched for this step."""
        return self.error is not None or self.issue_type is not None

    def description(self) -> str:
        return self.text if self.text is not None else describe_step(self.action, self.arguments)


def _unit_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"must be a number in [0, 1], got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"must be a finite number in [0, 1], got {number}")
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"must be in [0, 1], got {number}")
    return number


class RefineWeights(BaseModel):
    """The constants of the teacher scores (see the module docstring); each finite, in [0, 1].

    - ``w_func``, ``w_exec``: weights of ``sim_func`` and ``sim_exec`` in ``sim_step`` (divided by
      their sum; not both 0).
    - ``same_issue``, ``different_issue``, ``unknown_issue``: ``sim(issue types)`` for the same
      type, two different known types, and when either type is missing or the catch-all.
    - ``missing_resolution``: a stored step's resolution effectiveness when it has none.
    - ``missing_precision``: an experience's precision (success rate) when it has none.
    - ``precision_floor``: precision weighs as ``floor + (1 − floor) · success rate``, so a step of
      a run that failed overall — whose recovery can still teach — is ranked lower, never zeroed.
    - ``failure_weight``: how much a failure-mode match counts against a step match when ranking
      experiences overall (``max(step score, failure_weight · failure score)``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    w_func: float = 0.7
    w_exec: float = 0.3
    same_issue: float = 1.0
    different_issue: float = 0.3
    unknown_issue: float = 0.5
    missing_resolution: float = 0.5
    missing_precision: float = 0.5
    precision_floor: float = 0.5
    failure_weight: float = 0.5

    @field_validator("*", mode="before")
    @classmethod
    def _unit(cls, value: Any) -> float:
        return _unit_number(value)

    @model_validator(mode="after")
    def _some_step_weight(self) -> RefineWeights:
        if self.w_func == 0.0 and self.w_exec == 0.0:
            raise ValueError("w_func and w_exec cannot both be 0")
        return self


class RefineRequest(BaseModel):
    """A validated teacher-phase query (build it with :func:`parse_refine_request`)."""

    model_config = ConfigDict(frozen=True)

    problematic_steps: list[ProblematicStep]
    #: Lower-cased domain names to keep, or None for every domain.
    domains: list[str] | None = None
    k: int = 5
    agent: str | None = None
    weights: RefineWeights = Field(default_factory=RefineWeights)
    #: Runs (trajectory ids) left out: their failure modes, and experiences standing only for them.
    exclude_runs: list[str] = Field(default_factory=list)


def _pydantic_problems(where: str, error: ValidationError, model: type[BaseModel]) -> list[str]:
    problems = []
    for item in error.errors(include_url=False):
        path = ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown field (the fields are " + ", ".join(model.model_fields) + ")"
        elif item["type"] == "missing":
            message = "required"
        problems.append(f"{where}.{path}: {message}" if path else f"{where}: {message}")
    return problems


def _name(value: Any, where: str, problems: list[str]) -> str | None:
    if not isinstance(value, str):
        problems.append(f"{where}: must be a string, got {type(value).__name__}")
        return None
    if not value.strip():
        problems.append(f"{where}: must not be blank")
        return None
    if len(value) > MAX_NAME_CHARS:
        problems.append(f"{where}: must be at most {MAX_NAME_CHARS} characters, got {len(value)}")
        return None
    return value.strip()


def parse_refine_request(
    problematic_steps: Any,
    *,
    domain: str | Sequence[str] | None = None,
    k: int = 5,
    agent: str | None = None,
    weights: RefineWeights | Mapping[str, Any] | None = None,
    exclude_runs: Sequence[str] = (),
) -> tuple[RefineRequest, list[str]]:
    """Validates a refine call: the request and its notes (e.g. ``k`` clamped), or
    :class:`~kbgraph.errors.InvalidInputError` listing every problem as ``where: reason``."""
    problems: list[str] = []
    notes: list[str] = []

    steps: list[ProblematicStep] = []
    if isinstance(problematic_steps, str | bytes | Mapping) or not isinstance(problematic_steps, Sequence):
        problems.append(f"problematic_steps: must be a list of steps, got {type(problematic_steps).__name__}")
    elif not problematic_steps:
        problems.append("problematic_steps: give at least one step")
    elif len(problematic_steps) > MAX_PROBLEMATIC_STEPS:
        problems.append(f"problematic_steps: at most {MAX_PROBLEMATIC_STEPS} steps, got {len(problematic_steps)}")
    else:
        for i, item in enumerate(problematic_steps):
            where = f"problematic_steps[{i}]"
            if isinstance(item, ProblematicStep):
                steps.append(item)
                continue
            if not isinstance(item, Mapping):
                problems.append(f"{where}: must be a step (a mapping with an action), got {type(item).__name__}")
                continue
            try:
                steps.append(ProblematicStep.model_validate(dict(item)))
            except ValidationError as error:
                problems += _pydantic_problems(where, error, ProblematicStep)

    domains: list[str] | None = None
    if domain is not None:
        names = [domain] if isinstance(domain, str) else domain
        if not isinstance(names, Sequence):
            problems.append(f"domain: must be a domain name or a list of them, got {type(domain).__name__}")
        elif not names:
            problems.append("domain: an empty list matches nothing; leave it out for every domain")
        else:
            where = "domain" if isinstance(domain, str) else "domain[{}]"
            checked = [_name(n, where.format(i), problems) for i, n in enumerate(names)]
            domains = sorted({n.lower() for n in checked if n is not None})

    if isinstance(k, bool) or not isinstance(k, int):
        problems.append(f"k: must be an integer, got {k!r}")
    elif k < 1:
        problems.append(f"k: must be at least 1, got {k}")
    elif k > MAX_K:
        notes.append(f"k={k} is more than the maximum of {MAX_K}; returning at most {MAX_K} per list")
        k = MAX_K

    agent_name = None if agent is None else _name(agent, "agent", problems)

    checked_weights = RefineWeights()
    if isinstance(weights, RefineWeights):
        checked_weights = weights
    elif isinstance(weights, Mapping):
        try:
            checked_weights = RefineWeights.model_validate(dict(weights))
        except ValidationError as error:
            problems += _pydantic_problems("weights", error, RefineWeights)
    elif weights is not None:
        problems.append(f"weights: must be RefineWeights or a mapping, got {type(weights).__name__}")

    if problems:
        raise InvalidInputError(problems, headline="invalid refine request, nothing was searched")
    for i, step in enumerate(steps):
        if step.issue_classified:
            notes.append(f"problematic_steps[{i}]: issue_type {step.issue_type!r} classified from its error")
    request = RefineRequest(problematic_steps=steps, domains=domains, k=k, agent=agent_name, weights=checked_weights,
                            exclude_runs=sorted({str(r) for r in exclude_runs}))
    return request, notes


# --------------------------------------------------------------------------- output


class MatchedStep(BaseModel):
    """The stored step a problematic step matched."""

    model_config = ConfigDict(frozen=True)

    id: str
    order: int | None
    action: str
    text: str
    issue_type: str | None
    resolution_effectiveness: float | None


class StepScore(BaseModel):
    """Every part of a step-channel score: ``score = sim_step · issue_match · precision``."""

    model_config = ConfigDict(frozen=True)

    sim_func: float
    sim_exec: float
    sim_step: float
    issue_similarity: float
    #: ``issue_similarity · resolution effectiveness`` (the missing-value default when absent).
    issue_match: float
    precision: float
    score: float


class StepMatch(BaseModel):
    """An experience with a step like the problematic step ``query_step``, and why it matched."""

    model_config = ConfigDict(frozen=True)

    experience_id: str
    problem: str
    goal: str
    domain: str
    #: Index into the ``problematic_steps`` given to ``refine``.
    query_step: int
    step: MatchedStep
    breakdown: StepScore
    via: Literal["vector:step_embedding"] = VIA_STEP

    @property
    def score(self) -> float:
        return self.breakdown.score


class FailureMatch(BaseModel):
    """An experience that failed like the problematic step ``query_step``, and how it recovered."""

    model_config = ConfigDict(frozen=True)

    experience_id: str
    problem: str
    goal: str
    domain: str
    query_step: int
    failure_id: str
    description: str
    issue_type: str | None
    recovery: str
    step_order: int | None
    #: Cosine between the query's failure text and the failure mode (negative counts as 0).
    cosine: float
    issue_similarity: float
    #: ``cosine · issue_similarity · (0.5 + 0.5 · recovery value)``, the value of the group's best
    #: recovery: 1 concrete and followed by a run that succeeded, 2/3 a concrete retry, 1/3 another
    #: concrete recovery or a fix that went through, 0 none.
    score: float
    via: Literal["vector:failure_mode_embedding"] = VIA_FAILURE
    #: The error on that action with values masked: identical failure modes share it and are one match.
    signature: str | None = None
    #: Identical failure modes in the namespace: how many, in how many tasks, how many fixes went
    #: through, how many of those runs then succeeded, and the runs they come from.
    seen: int = 1
    tasks: int = 1
    recovered: int = 0
    worked: int = 0
    runs: list[str] = Field(default_factory=list)
    #: The recovery shown (the group's best): its kind, whether it is concrete, whether its fix went
    #: through and its run then succeeded, and which run it comes from.
    recovery_kind: str | None = None
    concrete: bool | None = None
    fix_recovered: bool | None = None
    run_succeeded: bool | None = None
    run_id: str | None = None

    @property
    def summary(self) -> str:
        """"seen 24 times in 6 tasks, recovered in 15 (the run then succeeded in 9)"."""
        times = "once" if self.seen == 1 else f"{self.seen} times"
        tasks = "1 task" if self.tasks == 1 else f"{self.tasks} tasks"
        return f"seen {times} in {tasks}, recovered in {self.recovered} (the run then succeeded in {self.worked})"


class RefineResults(BaseModel):
    """What :meth:`TeacherRetriever.refine` found.

    - ``steps``: up to ``k`` experiences per problematic step (each with its best-matching stored
      step), ordered by ``query_step``, then score (best first), then experience id.
    - ``failures``: up to ``k`` failure modes per problematic step that carries an error or issue
      type, in the same order.
    - ``experiences``: up to ``k`` experience ids over both channels, best first, ranked by
      ``max(step score, failure_weight · failure score)`` over every problematic step.
    - ``notes``: what was adjusted or could not be done (k clamped, issue types classified,
      over-fetch limit reached, failure channel skipped).
    """

    steps: list[StepMatch] = Field(default_factory=list)
    failures: list[FailureMatch] = Field(default_factory=list)
    experiences: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def step_query_text(step: ProblematicStep) -> str:
    """What a problematic step is embedded from: the text ingestion embeds a stored step from."""
    text = f"{step.action}: {step.description()}"
    if step.error is not None:
        text += " — failed: " + generalise_text(step.error)[:ERROR_CHARS]
    return text


def failure_query_text(step: ProblematicStep) -> str:
    """What a failed step is embedded from for the criticism channel: the shape of a stored
    failure mode's text, ``"{issue_type}: {humanised action} failed: {generalised error}"``."""
    text = f"{step.issue_type or 'failure'}: {humanise_action(step.action)} failed"
    if step.error is not None:
        text += ": " + generalise_text(step.error)[:ERROR_CHARS]
    return text


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


def _cosine(neo4j_score: Any) -> float:
    return max(0.0, neo4j_to_cosine(float(neo4j_score)))


# --------------------------------------------------------------------------- retrieval


class TeacherRetriever:
    """Teacher-phase retrieval over one namespace (see the module docstring for the scores)."""

    def __init__(self, gateway: Neo4jGateway, embedder: Embedder, namespace: str):
        self.gateway = gateway
        self.embedder = embedder
        self.namespace = namespace
        self._size = NamespaceSize(gateway, namespace)

    def refine(
        self,
        problematic_steps: Sequence[ProblematicStep | Mapping[str, Any]],
        *,
        domain: str | Sequence[str] | None = None,
        k: int = 5,
        agent: str | None = None,
        weights: RefineWeights | Mapping[str, Any] | None = None,
        exclude_runs: Sequence[str] = (),
    ) -> RefineResults:
        """Experiences whose steps went wrong like ``problematic_steps`` and how they recovered.

        ``domain`` keeps only experiences of that domain (or those domains; case-insensitive);
        private experiences are returned only to their owner ``agent``; ``k`` (1..100, larger is clamped with a
        note) bounds each list per problematic step; ``exclude_runs`` leaves those runs out. Raises
        :class:`~kbgraph.errors.InvalidInputError` naming every problem before anything is searched.
        """
        request, notes = parse_refine_request(problematic_steps, domain=domain, k=k, agent=agent, weights=weights,
                                              exclude_runs=exclude_runs)
        steps = request.problematic_steps
        texts = [step_query_text(s) for s in steps] + [failure_query_text(s) for s in steps if s.failed]
        vectors = [[float(x) for x in row] for row in self.embedder.embed(texts)]
        step_vectors, failure_vectors = vectors[: len(steps)], iter(vectors[len(steps) :])

        results = RefineResults()
        for i, step in enumerate(steps):
            results.steps += self._step_matches(i, step, step_vectors[i], request, notes)
            if step.failed:
                results.failures += self._failure_matches(i, step, next(failure_vectors), request, notes)
            else:
                notes.append(f"problematic_steps[{i}]: no error or issue_type, so no failure modes were searched")

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
        self, query: str, vector: list[float], request: RefineRequest, key: str
    ) -> tuple[list[Row], Overfetched[str]]:
        """The filtered rows of the last over-fetch window (until ``k`` distinct ``key`` values
        survive the filters, the index runs out, or the limit is reached)."""
        window: list[Row] = []

        def fetch(first: int) -> tuple[int, list[str]]:
            records = self.gateway.read(
                query, kb=self.namespace, vector=vector, first=first, domains=request.domains, agent=request.agent,
                exclude_runs=request.exclude_runs,
            )
            fetched = int(records[0]["fetched"]) if records else 0
            window[:] = list(records[0]["rows"]) if records else []
            return fetched, list(dict.fromkeys(str(row[key]) for row in window))

        # Scores are computed after the index has ranked by cosine alone, so the window holds more
        # than k: a step that failed the same way may sit a little further than steps that did not.
        wanted = max(request.k * WINDOW_FACTOR, MIN_WINDOW)
        if self._size.get(EXACT_SCAN_MAX).steps <= EXACT_SCAN_MAX:
            query = SCAN_QUERIES[query]  # the same window, the exact nearest of this namespace
        result = overfetch(fetch, k=wanted, first=wanted * FIRST_FACTOR, limit=FETCH_LIMIT)
        return window, result

    def _step_matches(
        self, index: int, step: ProblematicStep, vector: list[float], request: RefineRequest, notes: list[str]
    ) -> list[StepMatch]:
        rows, fetched = self._nearest(STEP_QUERY, vector, request, "experience_id")
        if fetched.limit_hit:
            notes.append(
                f"problematic_steps[{index}]: the {fetched.fetched} nearest steps of the index held only "
                f"{len(fetched.rows)} matching experiences; step matches may be incomplete"
            )
        w = request.weights
        arguments = list(step.arguments)
        by_experience: dict[str, list[tuple[Row, float, float, float, float, float]]] = {}
        for row in rows:
            sim_func = _cosine(row["score"])
            sim_exec = execution_similarity(step.action, arguments, str(row["action"] or ""),
                                            _argument_names(row.get("args_schema")))
            sim_step = step_similarity(sim_func, sim_exec, w.w_func, w.w_exec)
            issue_sim = issue_similarity(step.issue_type, row.get("issue_type"), w,
                                         same_error=bool(row.get("signature")) and row.get("signature") == step.signature)
            match = issue_match(issue_sim, _unit_or(row.get("resolution_effectiveness"), w.missing_resolution))
            by_experience.setdefault(str(row["experience_id"]), []).append(
                (row, sim_func, sim_exec, sim_step, issue_sim, match)
            )

        matches: list[StepMatch] = []
        for experience_id, candidates in by_experience.items():
            first = candidates[0][0]
            success = _unit_or(first.get("success_rate"), w.missing_precision)
            floored = w.precision_floor + (1.0 - w.precision_floor) * success
            # A stored step that failed carries its run's outcome in its resolution effectiveness.
            precisions = [1.0 if c[0].get("resolution_effectiveness") is not None else floored for c in candidates]
            values = [c[3] * c[5] * p for c, p in zip(candidates, precisions, strict=True)]
            best = max(range(len(candidates)), key=lambda i: (values[i], -(candidates[i][0].get("order") or 0)))
            precision = precisions[best]
            score = teacher_step_score([candidates[best][3]], [candidates[best][5]], precision)
            # The stored step that attains the max (ties: the earliest step).
            row, sim_func, sim_exec, sim_step, issue_sim, match = candidates[best]
            matches.append(StepMatch(
                experience_id=experience_id, problem=str(first.get("problem") or ""),
                goal=str(first.get("goal") or ""), domain=str(first.get("domain") or ""), query_step=index,
                step=MatchedStep(
                    id=str(row["step_id"]), order=row.get("order"), action=str(row["action"] or ""),
                    text=str(row.get("text") or ""), issue_type=row.get("issue_type"),
                    resolution_effectiveness=row.get("resolution_effectiveness"),
                ),
                breakdown=StepScore(sim_func=sim_func, sim_exec=sim_exec, sim_step=sim_step,
                                    issue_similarity=issue_sim, issue_match=match, precision=precision, score=score),
            ))
        matches.sort(key=lambda m: (-m.score, m.experience_id))
        return matches[: request.k]

    def _failure_matches(
        self, index: int, step: ProblematicStep, vector: list[float], request: RefineRequest, notes: list[str]
    ) -> list[FailureMatch]:
        rows, fetched = self._nearest(FAILURE_QUERY, vector, request, "failure_id")
        if fetched.limit_hit:
            notes.append(
                f"problematic_steps[{index}]: the {fetched.fetched} nearest failure modes of the index held only "
                f"{len(fetched.rows)} matching ones; failure matches may be incomplete"
            )
        # Identical failure modes (one signature) are one match: the nearest of them stands for it.
        nearest: dict[str, Row] = {}
        for row in rows:
            nearest.setdefault(str(row.get("signature") or row["failure_id"]), row)
        signatures = [key for key, row in nearest.items() if row.get("signature")]
        groups = {g["signature"]: g for g in self.gateway.read(
            GROUP_QUERY, kb=self.namespace, signatures=signatures, vector=vector, domains=request.domains,
            agent=request.agent, exclude_runs=request.exclude_runs)} if signatures else {}
        matches: list[FailureMatch] = []
        for key, row in nearest.items():
            group = groups.get(key)
            best: Row = group["best"] if group else row
            cosine = _cosine(row["score"])
            issue_sim = issue_similarity(step.issue_type, best.get("issue_type"), request.weights,
                                         same_error=bool(key) and key == step.signature)
            value = int(group["value"]) / 3 if group else 0.0
            matches.append(FailureMatch(
                experience_id=str(best["experience_id"]), problem=str(best.get("problem") or ""),
                goal=str(best.get("goal") or ""), domain=str(best.get("domain") or ""), query_step=index,
                failure_id=str(best["failure_id"]), description=str(best.get("description") or ""),
                issue_type=best.get("issue_type"), recovery=str(best.get("recovery") or ""),
                step_order=best.get("step_order"), cosine=cosine, issue_similarity=issue_sim,
                score=cosine * issue_sim * (0.5 + 0.5 * value), signature=row.get("signature"),
                seen=int(group["seen"]) if group else 1, tasks=int(group["tasks"]) if group else 1,
                recovered=int(group["recovered"]) if group else 0, worked=int(group["worked"]) if group else 0,
                runs=[str(r) for r in (group["runs"] if group else [row.get("run_id")]) if r],
                recovery_kind=best.get("recovery_kind"), concrete=best.get("concrete"),
                fix_recovered=best.get("recovered"), run_succeeded=best.get("run_succeeded"), run_id=best.get("run_id"),
            ))
        matches.sort(key=lambda m: (-m.score, m.experience_id, m.failure_id))
        return matches[: request.k]
