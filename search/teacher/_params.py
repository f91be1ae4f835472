"""What a teacher-phase query is made of: the problematic steps, the weights of the scores, and the
checks that turn a caller's arguments into a :class:`RefineRequest` (or one error naming every
problem). Also what a problematic step is embedded from, for each channel."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import (
    BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator,
)

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.experience_rules import classify_issue
from kbgraph.core.generalise import describe_step, generalise_text, humanise_action
from kbgraph.core.recovery import ErrorSignature, signed_error
from kbgraph.core.weights import ExactScanMax, OverfetchLimit
from kbgraph.search.params import MAX_K  # ``k`` above it is clamped (with a note in the results), as for search

#: At most this many problematic steps per call.
MAX_PROBLEMATIC_STEPS = 50
MAX_ACTION_CHARS = 200
MAX_NAME_CHARS = 200
MAX_TEXT_CHARS = 10_000
#: Characters of a generalised error kept in a query text (ingestion keeps as many).
ERROR_CHARS = 300

_STEP_FIELD_LIMITS = {"text": MAX_TEXT_CHARS, "error": MAX_TEXT_CHARS, "issue_type": MAX_NAME_CHARS}


# --------------------------------------------------------------------------- input


class ProblematicStep(BaseModel):
    """A step the agent is stuck on: what it called, with which arguments, and what went wrong.

    ``text`` is the step's generalised description; when absent it is built from ``action`` and
    ``arguments`` with :func:`~kbgraph.core.generalise.describe_step` (concrete values become
    placeholders). When ``error`` is given without ``issue_type``, the issue type is classified
    from the error with :func:`~kbgraph.core.experience_rules.classify_issue`, as ingestion does.
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
    def signed(self) -> ErrorSignature | None:
        """The error with its values masked, as its parts (:func:`~kbgraph.core.recovery.signed_error`)."""
        return signed_error(self.action, self.error, self.arguments) if self.error is not None else None

    @property
    def signature(self) -> str | None:
        """The key of :attr:`signed` (``action|error``), which stored failure modes and steps match on."""
        signed = self.signed
        return None if signed is None else signed.key

    @property
    def failed(self) -> bool:
        """Whether the criticism (failure-mode) channel is searched for this step."""
        return self.error is not None or self.issue_type is not None

    def description(self) -> str:
        return self.text if self.text is not None else describe_step(self.action, self.arguments)


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
    """The constants of the teacher scores (see :mod:`kbgraph.search.teacher`), each finite, in [0, 1],
    and the candidate policy's two limits.

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
    - ``exact_scan_max``, ``overfetch_limit``: as the search settings' (``[search]``,
      :class:`~kbgraph.core.weights.SearchWeights`; see :mod:`kbgraph.search.candidates`); None
      (the default) takes the knowledge base's.
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
    exact_scan_max: ExactScanMax | None = None
    overfetch_limit: OverfetchLimit | None = None

    @field_validator("w_func", "w_exec", "same_issue", "different_issue", "unknown_issue", "missing_resolution",
                     "missing_precision", "precision_floor", "failure_weight", mode="before")
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
    #: What notes call each of ``problematic_steps`` (see :func:`parse_refine_request`).
    step_names: list[str] = Field(default_factory=list)

    def step_name(self, index: int) -> str:
        return _step_name(self.step_names or None, index)


def _step_name(names: Sequence[str] | None, index: int) -> str:
    """What problems and notes call the problematic step ``index``: the caller's name for it, or
    ``problematic_steps[index]``."""
    return names[index] if names is not None and index < len(names) else f"problematic_steps[{index}]"


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
    step_names: Sequence[str] | None = None,
) -> tuple[RefineRequest, list[str]]:
    """Validates a refine call: the request and its notes (e.g. ``k`` clamped), or
    :class:`~kbgraph.core.errors.InvalidInputError` listing every problem as ``where: reason``.
    ``step_names`` is what problems and notes call each problematic step, one a step (a caller
    that numbers its steps otherwise names them its way); by default ``problematic_steps[i]``."""
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
            where = _step_name(step_names, i)
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

    if step_names is not None and isinstance(problematic_steps, Sequence) and len(step_names) != len(problematic_steps):
        problems.append(f"step_names: give one name a step, got {len(step_names)} for {len(problematic_steps)} steps")

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
            notes.append(f"{_step_name(step_names, i)}: issue_type {step.issue_type!r} classified from its error")
    request = RefineRequest(problematic_steps=steps, domains=domains, k=k, agent=agent_name, weights=checked_weights,
                            exclude_runs=sorted({str(r) for r in exclude_runs}), step_names=list(step_names or ()))
    return request, notes
