"""Feedback: what agents report after a search — which experiences were retrieved, which they
used, how the task ended, and how each step they followed went (docs/design.md §4, MAEL).

One call is one event and one write transaction: the retrieved/used/succeeded counters, the
quality EMA (Agent KB D.1), the usage impact behind utility (D.3), last-used time, per-step
rewards (MAEL) and the agent's ability-matrix cell (EDV) all change together, or nothing does.
Each node is locked before its counters are read, so agents reporting at the same time never
lose an update. Unknown experiences or steps are refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from kbgraph.embedders import Embedder
from kbgraph.core.errors import InvalidInputError, KbgraphError, validation_problems
from kbgraph.core.ids import content_hash
from kbgraph.core.models import MAX_NAME_CHARS, MAX_TEXT_CHARS
from kbgraph.core.generalise import generalise_text
from kbgraph.store.experiences import aware_datetime
from kbgraph.store.gateway import Neo4jGateway, Row
from kbgraph.core.settings import LearningSettings
from kbgraph.core.utility import calendar_days_between, decay_rate_per_day, utility
from kbgraph.core.value_bounds import within_bounds
from kbgraph.core.votes import most_common

ExperienceId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:\-]{1,128}$")]
AgentName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_NAME_CHARS)]
MAX_IDS_PER_EVENT = 1_000
# How often one event is resolved again when merges keep deleting what it names.
MAX_MERGE_RETRIES = 5


class StepReward(BaseModel):
    """MAEL: how one step of a used experience went, in [−1, 1]."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    experience_id: ExperienceId
    order: int = Field(ge=0)
    reward: float = Field(ge=-1.0, le=1.0)


class FeedbackEvent(BaseModel):
    """One report from an agent. ``outcome`` is True/False or a score in [0, 1] (≥ 0.5 counts as a
    success); leave it out to record use before the task has ended."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _within_bounds(cls, data: Any) -> Any:
        # Before pydantic recurses into it: depth, 64-bit integers, valid Unicode (value_bounds).
        return within_bounds(data)

    retrieved: list[ExperienceId] = Field(default_factory=list, max_length=MAX_IDS_PER_EVENT)
    used: list[ExperienceId] = Field(default_factory=list, max_length=MAX_IDS_PER_EVENT)
    # Strict: "yes", "true" or "1" are not outcomes (lax parsing once read "yes" as a success).
    outcome: StrictBool | StrictFloat | StrictInt | None = None
    agent: AgentName | None = None
    domain: AgentName | None = None
    step_rewards: list[StepReward] = Field(default_factory=list, max_length=MAX_IDS_PER_EVENT)
    # The task the agent was doing: with it, the outcome is remembered for tasks like this one
    # (task-conditioned feedback), not only in the experience's overall quality.
    task: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS)] | None = None
    at: datetime | None = None

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome_not_text(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, bool | int | float):
            raise ValueError(f"must be true, false or a score in [0, 1], not {type(value).__name__} {value!r:.40}")
        return value

    @field_validator("outcome")
    @classmethod
    def _outcome_in_unit(cls, value: bool | float | None) -> bool | float | None:
        if isinstance(value, int | float) and not isinstance(value, bool) and not 0.0 <= value <= 1.0:
            raise ValueError("must be true, false or a score in [0, 1]")
        return value

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    @property
    def outcome_score(self) -> float | None:
        return None if self.outcome is None else float(self.outcome)


class _MergedMeanwhile(Exception):
    """A node the event counts on was deleted by a merge after the event looked it up."""


def _all_written(results: list[list[Row]], expected: list[int]) -> None:
    # A node deleted by a transaction that committed while this one waited for its lock still
    # comes back as a row, but without properties: its id reads as null.
    for rows, count in zip(results, expected, strict=True):
        if count >= 0 and (len(rows) != count or any(row["id"] is None for row in rows)):
            raise _MergedMeanwhile


class ExperienceLearningState(BaseModel):
    """An experience's counters and learnt values after the event."""

    id: str
    retrieved: int
    used: int
    succeeded: int
    quality: float
    utility: float
    status: str | None = None


class FeedbackReport(BaseModel):
    """What one feedback event changed."""

    at: datetime
    retrieved: int
    used: int
    outcome: float | None
    step_rewards: int
    step_rewards_skipped: int = Field(
        default=0, description="Rewards for steps of experiences merged away since they were retrieved.")
    agent: str | None
    domain: str | None
    redirected: dict[str, str] = Field(
        default_factory=dict, description="Ids merged into another experience since: id -> where it landed.")
    experiences: list[ExperienceLearningState]


def parse_feedback(event: FeedbackEvent | Mapping[str, Any]) -> FeedbackEvent:
    if isinstance(event, FeedbackEvent):
        return event
    try:
        return FeedbackEvent.model_validate(dict(event))
    except ValidationError as exc:
        raise InvalidInputError(validation_problems("feedback", exc, strip_value_error=True)) from None


def _unique(ids: Sequence[str]) -> list[str]:
    # Sorted: transactions lock nodes in one order, so concurrent events cannot deadlock.
    return sorted(set(ids))


def row_utility(row: Row, half_life_days: float, now: datetime) -> float:
    """Current utility of an experience from a row holding its ``quality``, ``last_used_at``,
    ``created_at``, ``usage_impact`` and ``usage_impact_at`` (see :func:`kbgraph.core.utility.utility`),
    decayed by whole calendar days (UTC) up to ``now``, as the searches decay it
    (:func:`~kbgraph.core.utility.calendar_days_between`): what is reported is what the ranking used."""
    recent = aware_datetime(row.get("last_used_at")) or aware_datetime(row.get("created_at"))
    return utility(
        float(row["quality"]), calendar_days_between(recent, now), decay_rate_per_day(half_life_days),
        float(row.get("usage_impact") or 0.0), calendar_days_between(aware_datetime(row.get("usage_impact_at")), now),
    )


def learning_state(row: Row, settings: LearningSettings, now: datetime) -> ExperienceLearningState:
    return ExperienceLearningState(
        id=row["id"], retrieved=row["retrieved"], used=row["used"], succeeded=row["succeeded"],
        quality=round(float(row["quality"]), 6), utility=round(row_utility(row, settings.utility_half_life_days, now), 6),
        status=row.get("status"),
    )


class FeedbackRecorder:
    """Writes feedback events for one namespace."""

    def __init__(self, gateway: Neo4jGateway, namespace: str, settings: LearningSettings,
                 embedder: Embedder | None = None):
        self.gateway = gateway
        self.embedder = embedder
        self.namespace = namespace
        self.settings = settings

    def _check(self, event: FeedbackEvent, wanted: list[str]) -> dict[str, Row]:
        rows = {row["id"]: row for row in self.gateway.read("feedback_targets", kb=self.namespace, ids=wanted)}
        problems = [f"feedback: experience {i!r}: not in namespace {self.namespace!r}"
                    for i in wanted if not rows[i]["found"]]
        for n, reward in enumerate(event.step_rewards):
            row = rows[reward.experience_id]
            if row["found"] and row["target"] == reward.experience_id and reward.order not in row["step_orders"]:
                problems.append(f"feedback: step_rewards.{n}: experience {reward.experience_id!r} has no step "
                                f"{reward.order} (its steps: {sorted(row['step_orders'])})")
        if event.outcome is None and event.agent is not None and not event.used and not event.retrieved:
            problems.append("feedback: an agent without an outcome, retrievals or uses records nothing")
        if problems:
            raise InvalidInputError(problems)
        return rows

    def _task_domain(self, event: FeedbackEvent, rows: dict[str, Row]) -> str | None:
        if event.domain:
            return event.domain
        domains = [rows[i]["domain"] for i in event.used or event.retrieved if rows[i]["domain"]]
        # The task's domain is the one most of the experiences it used come from.
        return most_common(sorted(domains))

    def record(self, event: FeedbackEvent | Mapping[str, Any]) -> FeedbackReport:
        event = parse_feedback(event)
        if not (event.retrieved or event.used or event.step_rewards or event.outcome is not None):
            raise InvalidInputError(["feedback: nothing to record: give retrieved, used, step_rewards or outcome"])
        touched = _unique([*event.retrieved, *event.used, *(r.experience_id for r in event.step_rewards)])
        now = event.at or datetime.now(UTC)
        # A merge may delete an experience between our look-up and our write: the write sees it
        # (verify), rolls back, and the event is resolved again, now onto the survivor.
        for _ in range(MAX_MERGE_RETRIES):
            rows = self._check(event, touched)
            redirected = {i: row["target"] for i, row in rows.items() if row["target"] != i}
            calls, expected = self._calls(event, rows, redirected, now)
            try:
                if calls:
                    self.gateway.write_all(calls, verify=lambda results: _all_written(results, expected))
                break
            except _MergedMeanwhile:
                continue
        else:
            raise KbgraphError(f"feedback: the experiences kept being merged while this event was recorded "
                               f"({MAX_MERGE_RETRIES} tries); nothing was written: send it again")
        targets = _unique([rows[i]["target"] for i in touched])
        states = [learning_state(row, self.settings, now)
                  for row in self.gateway.read("feedback_counters", kb=self.namespace, ids=targets)]
        skipped = sum(1 for r in event.step_rewards if r.experience_id in redirected)
        return FeedbackReport(
            at=now, retrieved=len(set(event.retrieved)), used=len(set(event.used)), outcome=event.outcome_score,
            step_rewards=len(event.step_rewards) - skipped, step_rewards_skipped=skipped,
            agent=event.agent, domain=self._task_domain(event, rows), redirected=redirected, experiences=states,
        )

    def _calls(
        self, event: FeedbackEvent, rows: dict[str, Row], redirected: dict[str, str], now: datetime
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[int]]:
        """The queries of one event, with merged-away ids replaced by their survivors, and how many
        rows each must return (one per node it changes) for the event to have landed whole."""
        outcome = event.outcome_score
        domain = self._task_domain(event, rows)
        # Each id named counts once, also when two of them have since merged into one experience:
        # the survivor then counts both, as the merge would have summed them had it come later.
        retrieved = sorted(redirected.get(i, i) for i in set(event.retrieved))
        used = sorted(redirected.get(i, i) for i in set(event.used))
        s = self.settings
        calls: list[tuple[str, dict[str, Any]]] = []
        expected: list[int] = []
        # Each query locks its nodes in id order, and retrieved (a superset of used, in practice)
        # first: concurrent events lock experiences in one order. Whichever comes first bumps a
        # feedback stripe before it locks anything (kbgraph.store.search_version).
        if retrieved:
            calls.append(("feedback_retrieved", {"kb": self.namespace, "ids": retrieved}))
            expected.append(len(retrieved))
        if used:
            calls.append(("feedback_used", {
                "kb": self.namespace, "ids": used, "outcome": outcome, "now": now,
                "rate": s.quality_rate, "decay": decay_rate_per_day(s.utility_half_life_days),
                "impact": s.usage_impact,
            }))
            expected.append(len(used))
        # A merged-away experience's steps went with it: rewards for them have nothing to land on.
        kept = [r for r in event.step_rewards if r.experience_id not in redirected]
        if kept:
            rewards = sorted((r.model_dump() for r in kept), key=lambda r: (r["experience_id"], r["order"]))
            calls.append(("feedback_step_rewards", {"kb": self.namespace, "rewards": rewards}))
            expected.append(len(rewards))
        if event.task and used and outcome is not None:
            if self.embedder is None:
                raise InvalidInputError(["feedback: task given but no embedder to remember it with"])
            # Embedded as search embeds a query, so the two compare.
            vector = self.embedder.embed([generalise_text(event.task)])[0].tolist()
            outcome_id = content_hash({"task": event.task, "used": _unique(event.used), "at": now.isoformat(),
                                       "agent": event.agent}, "outcome")
            calls.append(("feedback_outcome", {"kb": self.namespace, "id": outcome_id, "vector": vector,
                                               "outcome": outcome, "now": now, "agent": event.agent,
                                               "task": event.task, "ids": used}))
            expected.append(-1)
        if event.agent and outcome is not None and domain:
            calls.append(("feedback_ability", {"kb": self.namespace, "agent": event.agent, "domain": domain,
                                               "outcome": outcome, "now": now}))
            expected.append(-1)
        return calls, expected

    def counters(self, ids: Sequence[str], now: datetime | None = None) -> list[ExperienceLearningState]:
        rows = self.gateway.read("feedback_counters", kb=self.namespace, ids=_unique(ids))
        return [learning_state(row, self.settings, now or datetime.now(UTC)) for row in rows]
