"""The rows the teacher phase reads, as typed records: each lists once the keys its queries return
(``QUERIES``, files of ``cypher/queries/``), and is made once, where the rows come back from the
store (``from_record``), so the scoring reads attributes, never a row's keys.
``tests/search/test_rows.py`` checks the fields against each query's RETURN.

Text the answer shows is read as text (a missing one as ``""``); stored numbers the scoring
judges itself (a step's success rate and resolution effectiveness, which it may replace by a
default) are kept as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kbgraph.core.models import StatementRecord, stored_record
from kbgraph.core.recovery import ErrorSignature

__all__ = ["FailureGroupRow", "FailureRow", "GroupBest", "SignatureRow", "StepRow"]


def _text(value: Any) -> str:
    return str(value or "")


class _Signed:
    """A row with an error signature and its parts as stored (the parts None on failure modes
    stored before they were kept)."""

    __slots__ = ()
    signature: str | None
    signature_action: str | None
    signature_error: str | None

    @property
    def signed(self) -> ErrorSignature | None:
        """The signature as its parts (:meth:`ErrorSignature.stored`)."""
        return ErrorSignature.stored(self.signature_action, self.signature_error, self.signature)


@dataclass(frozen=True, slots=True)
class StepRow:
    """A stored step near a problematic step, with its experience: one map of ``rows`` of
    ``refine_step_vectors`` (or its exact scan). ``score``: Neo4j's cosine score, ``(1 + cos) / 2``."""

    QUERIES: ClassVar[tuple[str, ...]] = ("refine_step_vectors", "refine_step_scan")

    experience_id: str
    problem: str
    goal: str
    domain: str
    success_rate: Any
    step_id: str
    order: int | None
    action: str
    text: str
    args_schema: Any
    issue_type: str | None
    resolution_effectiveness: Any
    signature: str | None
    score: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> StepRow:
        return cls(
            experience_id=str(record["experience_id"]), problem=_text(record["problem"]), goal=_text(record["goal"]),
            domain=_text(record["domain"]), success_rate=record["success_rate"], step_id=str(record["step_id"]),
            order=record["order"], action=_text(record["action"]), text=_text(record["text"]),
            args_schema=record["args_schema"], issue_type=record["issue_type"],
            resolution_effectiveness=record["resolution_effectiveness"], signature=record["signature"],
            score=float(record["score"]),
        )


@dataclass(frozen=True, slots=True)
class FailureRow(_Signed):
    """A stored failure mode near a problematic step's failure, with its experience: one map of
    ``rows`` of ``refine_failure_vectors`` (or its exact scan)."""

    QUERIES: ClassVar[tuple[str, ...]] = ("refine_failure_vectors", "refine_failure_scan")

    experience_id: str
    problem: str
    goal: str
    domain: str
    success_rate: Any
    failure_id: str
    description: str
    issue_type: str | None
    recovery: str
    step_order: int | None
    score: float
    signature: str | None
    signature_action: str | None
    signature_error: str | None
    run_id: str | None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FailureRow:
        return cls(
            experience_id=str(record["experience_id"]), problem=_text(record["problem"]), goal=_text(record["goal"]),
            domain=_text(record["domain"]), success_rate=record["success_rate"],
            failure_id=str(record["failure_id"]), description=_text(record["description"]),
            issue_type=record["issue_type"], recovery=_text(record["recovery"]), step_order=record["step_order"],
            score=float(record["score"]), signature=record["signature"],
            signature_action=record["signature_action"], signature_error=record["signature_error"], run_id=record["run_id"],
        )


@dataclass(frozen=True, slots=True)
class GroupBest:
    """The member a group of identical failure modes shows (``best`` of ``refine_failure_groups``):
    its failure mode and experience, how it was recovered, whether that worked (the fix went
    through and the run then succeeded), and its Neo4j cosine score to the query."""

    QUERIES: ClassVar[tuple[str, ...]] = ("refine_failure_groups",)

    experience_id: str
    problem: str
    goal: str
    domain: str
    failure_id: str
    description: str
    issue_type: str | None
    recovery: str
    step_order: int | None
    recovery_kind: str | None
    #: What the run did next, as data (:attr:`kbgraph.core.models.FailureMode.record`); None for a
    #: failure mode stored before records were kept.
    record: StatementRecord | None
    looked_up: bool | None
    concrete: bool | None
    recovered: bool | None
    run_succeeded: bool | None
    run_id: str | None
    worked: bool
    score: float | None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> GroupBest:
        return cls(
            experience_id=str(record["experience_id"]), problem=_text(record["problem"]), goal=_text(record["goal"]),
            domain=_text(record["domain"]), failure_id=str(record["failure_id"]),
            description=_text(record["description"]), issue_type=record["issue_type"],
            recovery=_text(record["recovery"]), step_order=record["step_order"],
            recovery_kind=record["recovery_kind"], record=stored_record(record["record"]),
            looked_up=record["looked_up"], concrete=record["concrete"], recovered=record["recovered"],
            run_succeeded=record["run_succeeded"], run_id=record["run_id"], worked=bool(record["worked"]),
            score=record["score"],
        )

    @classmethod
    def of_failure(cls, row: FailureRow) -> GroupBest:
        """What a failure mode without a signature (no group) shows: itself, with nothing known of
        its recovery's kind or outcome (the failure channel's rows do not carry them)."""
        return cls(
            experience_id=row.experience_id, problem=row.problem, goal=row.goal, domain=row.domain,
            failure_id=row.failure_id, description=row.description, issue_type=row.issue_type,
            recovery=row.recovery, step_order=row.step_order, recovery_kind=None, record=None, looked_up=None,
            concrete=None, recovered=None,
            run_succeeded=None, run_id=row.run_id, worked=False, score=row.score,
        )


@dataclass(frozen=True, slots=True)
class FailureGroupRow(_Signed):
    """Identical failure modes (one ``signature``) followed by one ``kind`` of recovery: how often
    it was tried, went through (``recovered``) and then worked, the tasks and runs they come from,
    the nearest member's Neo4j cosine score to the query, and every member, from a run that then
    succeeded first (``best``: the first). One row of ``refine_failure_groups``."""

    QUERIES: ClassVar[tuple[str, ...]] = ("refine_failure_groups",)

    signature: str
    #: The signature's parts as stored (None on failure modes stored before the parts were kept).
    signature_action: str | None
    signature_error: str | None
    kind: str
    tried: int
    recovered: int
    worked: int
    task_keys: tuple[str, ...]
    runs: tuple[str | None, ...]
    nearest: float
    members: tuple[GroupBest, ...]

    @property
    def best(self) -> GroupBest:
        """The member listed first: from a run that then succeeded, concrete, went through, nearest."""
        return self.members[0]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FailureGroupRow:
        return cls(
            signature=str(record["signature"]), signature_action=record["signature_action"],
            signature_error=record["signature_error"], kind=str(record["kind"]), tried=int(record["tried"]),
            recovered=int(record["recovered"]), worked=int(record["worked"]),
            task_keys=tuple(str(t) for t in record["task_keys"]), runs=tuple(record["runs"]),
            nearest=float(record["nearest"]),
            members=tuple(GroupBest.from_record(member) for member in record["members"]),
        )


@dataclass(frozen=True, slots=True)
class SignatureRow(_Signed):
    """An error signature of the namespace, with its parts as stored (None on failure modes stored
    before the parts were kept): one row of ``refine_failure_signatures``."""

    QUERIES: ClassVar[tuple[str, ...]] = ("refine_failure_signatures",)

    signature: str
    signature_action: str | None
    signature_error: str | None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SignatureRow:
        return cls(signature=str(record["signature"]), signature_action=record["signature_action"],
                   signature_error=record["signature_error"])
