"""The experience record of Agent KB, the tuple ⟨π, γ, S, C, μ, F, R⟩, and its parts:

- π ``problem`` and γ ``goal``;
- S ``steps`` — ordered, generalised :class:`Step` records;
- C context — ``domain`` and ``difficulty``;
- μ metadata — ``success_rate``, ``quality``, ``efficiency``, ``generalizability``, the usage
  counters ``retrieved``/``used``/``succeeded``, timestamps, provenance (``source``, ``source_ids``
  — the runs it stands for — and ``failed_source_ids``, those of them whose outcome was a failure);
- F ``failure_modes`` — what went wrong and how it was recovered (:class:`FailureMode`);
- R ``relations`` — typed, weighted edges to other experiences (:class:`Relation`).

Ids are content hashes (see :mod:`kbgraph.core.ids`), so the same content written twice is the same node.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator, model_validator

from kbgraph.core.ids import content_hash, normalise_text
from kbgraph.core.models.statements import StatementRecord
from kbgraph.core.models._base import (
    MAX_FAILURE_MODES,
    MAX_PROBLEM_CHARS,
    MAX_RELATIONS,
    MAX_STEPS,
    MAX_TEXT_CHARS,
    Count,
    Difficulty,
    Embedding,
    IdText,
    Kind,
    Name,
    RecoveryKind,
    RelationType,
    Reward,
    Scope,
    ShortText,
    Status,
    Unit,
    _Strict,
)


#: Issue types of a call that failed for a reason of the moment, not because of what it asked
#: (ingestion's ``classify_issue``: "503 Service Unavailable", "429 Too Many Requests", timeouts).
TRANSIENT_ISSUES = frozenset({"transient", "timeout"})


def _utc(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


class Step(_Strict):
    """One generalised step of a workflow: the action taken and what it did, ids as placeholders."""

    order: Count | None = None
    action: Name
    #: The tool a generic call dispatched to (:func:`kbgraph.core.shapes.dispatched_tool`), when
    #: ``action`` is such a call: the run's way is told by it rather than by the wrapper.
    tool: Name | None = None
    text: ShortText = ""
    args_schema: dict[str, str] = Field(default_factory=dict)
    reward: Reward | None = None
    issue_type: Name | None = None
    resolution_effectiveness: Unit | None = None
    #: For a step that errored: the error on its action with values masked (identical errors share it).
    signature: ShortText | None = None
    #: What the tool returned, generalised and cut to STORED_OBSERVATION_CHARS; ``observation_chars``
    #: is the length it had (so a reader knows when it was cut).
    observation: ShortText | None = None
    observation_chars: Count | None = None
    embedding: Embedding | None = None

    @property
    def failed_for_the_moment(self) -> bool:
        """The call failed for a reason of the moment (:data:`TRANSIENT_ISSUES`: an overloaded or
        unreachable service, a timeout), not because of what it asked: it says nothing about the
        task, so it is no part of the way the run went. A call refused for what it asked (a wrong
        payment method) is: the run's shape keeps it."""
        return self.issue_type in TRANSIENT_ISSUES



class FailureMode(_Strict):
    """What went wrong at a step and how it was recovered (the F of the tuple).

    From a trajectory, each errored step gives one, with its recovery read from what the agent
    did next (:mod:`kbgraph.core.recovery`): ``recovery`` says it in one line, the other fields
    say it for machines — which run, which action, the error's ``signature`` (the same error on
    the same action, values masked: identical failure modes of many runs share it), the kind of
    fix, whether the fix call went through (``recovered``) and the run then succeeded, and
    whether the recovery is ``concrete`` (names what changed, what was called instead, or the
    agent's reasoning).

    ``record`` is what the agent did next as data, the record of the reflector's statement about
    this error (:class:`~kbgraph.core.models.StatementRecord`: the error class, the kind of
    recovery, the tool switched to, the arguments a retry changed), and ``looked_up`` whether the
    agent looked things up after the error (before its next attempt, or instead of one): readers
    take what the agent did from these, never from ``recovery``'s words. A failure mode stored
    before records were kept has neither; one given without a record (ready-made, or worded by a
    model) is given one from what it says when it is written (``kbgraph.ingest.failure_records``).
    """

    description: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]
    issue_type: Name | None = None
    recovery: ShortText = ""
    step_order: Count | None = None
    action: Name | None = None
    signature: ShortText | None = None
    #: The two parts of ``signature`` as they were made (:class:`~kbgraph.core.recovery.ErrorSignature`):
    #: the action and the masked error. Readers take these, never the parts of ``signature``'s text.
    #: None on a failure mode stored before they were kept (readers then fall back to the stored
    #: ``signature``: :meth:`~kbgraph.core.recovery.ErrorSignature.stored`). Left out of dumps: they say again
    #: what ``signature`` says.
    signature_action: ShortText | None = Field(default=None, exclude=True)
    signature_error: ShortText | None = Field(default=None, exclude=True)
    recovery_kind: RecoveryKind | None = None
    recovered: bool | None = None
    concrete: bool | None = None
    run_id: IdText | None = None
    run_succeeded: bool | None = None
    record: StatementRecord | None = None
    looked_up: bool | None = None
    embedding: Embedding | None = None


class Relation(_Strict):
    """A weighted, explained edge from this experience to another one in the same namespace."""

    type: RelationType
    target_id: IdText
    weight: Unit = 1.0
    reason: ShortText = ""

    @field_validator("type", mode="before")
    @classmethod
    def _type_from_text(cls, value: Any) -> Any:
        # Strict mode refuses plain strings for enums; JSON and people write plain strings.
        if isinstance(value, str) and not isinstance(value, RelationType):
            try:
                return RelationType(value.upper())
            except ValueError:
                allowed = ", ".join(t.value for t in RelationType)
                raise ValueError(f"must be one of {allowed}, not {value!r}") from None
        return value


class Experience(_Strict):
    """A reusable experience ⟨π, γ, S, C, μ, F, R⟩; see the module docstring for the mapping."""

    id: IdText | None = None
    # π, γ
    problem: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PROBLEM_CHARS)]
    goal: Annotated[str, StringConstraints(max_length=MAX_PROBLEM_CHARS)] = ""
    # S
    steps: Annotated[list[Step], Field(max_length=MAX_STEPS)] = Field(default_factory=list)
    # C
    domain: Name = "general"
    difficulty: Difficulty | None = None
    kind: Kind = "concrete"
    # μ
    success_rate: Unit = 1.0
    quality: Unit = 0.5
    efficiency: Unit | None = None
    generalizability: Unit | None = None
    retrieved: Count = 0
    used: Count = 0
    succeeded: Count = 0
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    last_used_at: datetime | None = None
    status: Status = "active"
    scope: Scope = "shared"
    owner_agent: Name | None = None
    # EDV: the agents that approved or rejected this experience when it was verified.
    approved_by: Annotated[list[Name], Field(max_length=100)] = Field(default_factory=list)
    rejected_by: Annotated[list[Name], Field(max_length=100)] = Field(default_factory=list)
    source: ShortText | None = None
    # Provenance grows with merges (one id per trajectory), so its cap is generous: reading a
    # popular workflow back must never fail validation.
    source_ids: Annotated[list[IdText], Field(max_length=1_000_000)] = Field(default_factory=list)
    # Outcome per run: the sources whose run failed (a subset of source_ids). Kept per run so that a
    # failed run is never handed back as an example of what worked, and so a hit can say how often
    # it worked ("n of m runs").
    failed_source_ids: Annotated[list[IdText], Field(max_length=1_000_000)] = Field(default_factory=list)
    # Declared provenance: ids of trajectories this experience was adapted from (ADAPTATION edges).
    adapted_from: Annotated[list[IdText], Field(max_length=100)] = Field(default_factory=list)
    # F, R
    failure_modes: Annotated[list[FailureMode], Field(max_length=MAX_FAILURE_MODES)] = Field(
        default_factory=list
    )
    relations: Annotated[list[Relation], Field(max_length=MAX_RELATIONS)] = Field(default_factory=list)
    # Embeddings: filled in by the knowledge base when absent.
    pg_embedding: Embedding | None = None
    structure_embedding: Embedding | None = None
    context_embedding: Embedding | None = None

    @field_validator("problem")
    @classmethod
    def _problem_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("created_at", "last_used_at", mode="before")
    @classmethod
    def _parse_time(cls, value: Any) -> Any:
        # Strict mode takes ISO strings only from JSON; accept them from Python dicts too.
        if isinstance(value, str):
            return datetime.fromisoformat(value)
        return value

    @field_validator("created_at", "last_used_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return _utc(value)

    @model_validator(mode="after")
    def _order_steps_and_hash(self) -> Experience:
        orders = [s.order for s in self.steps]
        if all(o is None for o in orders):
            for position, step in enumerate(self.steps):
                step.order = position
        elif any(o is None for o in orders):
            raise ValueError("steps: give every step an order, or none (then list order is used)")
        elif len(set(orders)) != len(orders):
            raise ValueError("steps: two steps have the same order")
        self.steps.sort(key=lambda s: s.order or 0)
        if self.succeeded > self.used:
            raise ValueError("succeeded: cannot exceed used")
        stray = set(self.failed_source_ids) - set(self.source_ids)
        if stray:
            raise ValueError(f"failed_source_ids: {sorted(stray)[:3]} not in source_ids")
        if self.id is None:
            self.id = self.content_id()
        return self

    def content_id(self) -> str:
        """The id this experience's content hashes to (problem, goal, domain, kind, steps)."""
        payload: dict[str, Any] = {
            "problem": normalise_text(self.problem),
            "goal": normalise_text(self.goal),
            "domain": normalise_text(self.domain),
            "kind": self.kind,
            "steps": [[normalise_text(s.action), normalise_text(s.text)] for s in self.steps],
        }
        if self.scope == "private":  # one agent's private experience is not another's
            payload["private_to"] = self.owner_agent or ""
        if self.only_failed:  # a failed run is never one node with a success of the same content
            payload["outcome"] = "failed"
        return content_hash(payload, "exp")

    @property
    def only_failed(self) -> bool:
        """True when every run this experience stands for failed (it is a pitfall, not a way to do it)."""
        return bool(self.source_ids) and len(set(self.failed_source_ids)) == len(set(self.source_ids))

    @property
    def runs(self) -> int:
        """How many runs (trajectories) this experience stands for."""
        return len(self.source_ids)

    @property
    def runs_succeeded(self) -> int:
        """How many of those runs succeeded."""
        return len(self.source_ids) - len(set(self.failed_source_ids))

    @property
    def key(self) -> str:
        """The id, which the validator always sets."""
        assert self.id is not None
        return self.id

    def step_id(self, order: int) -> str:
        return content_hash({"experience": self.key, "order": order}, "step")

    def failure_id(self, failure: FailureMode) -> str:
        payload = {
            "experience": self.key,
            "description": normalise_text(failure.description),
            "issue_type": failure.issue_type,
            "step_order": failure.step_order,
        }
        if failure.run_id is not None:  # the same failure in two runs of one content is two failures
            payload["run"] = failure.run_id
        return content_hash(payload, "fail")

    def task_key(self) -> str:
        """What runs of one task share: the hash of its domain and (generalised) problem. Runs of the
        same task are the evidence of which way usually solves it."""
        return content_hash({"problem": normalise_text(self.problem), "domain": normalise_text(self.domain)}, "task")

    def pg_text(self) -> str:
        """Text behind the semantic (problem+goal) embedding."""
        return f"{self.problem}\n{self.goal}".strip()

    def actions(self) -> list[str]:
        """The actions of the run in order (a generic call by the tool it called), less the calls that failed for the moment
        (:attr:`Step.failed_for_the_moment`): a run that retried a call after a "503 Service
        Unavailable" shares its way, workflow and shape with a clean run that did the same things.
        The failed steps stay in ``steps``, for the teacher."""
        return [s.tool or s.action for s in self.steps if not s.failed_for_the_moment]

    def structure_text(self) -> str:
        """Text behind the structural embedding: the workflow's shape, action by action."""
        return " -> ".join(self.actions()) or "(no steps)"

    def context_text(self) -> str:
        return f"domain: {self.domain}; difficulty: {self.difficulty or 'unknown'}; kind: {self.kind}"

