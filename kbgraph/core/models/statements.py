"""A statement as data: what one insight, or one statement of a document, says — its kind, the
operation it is about, the call, the error class and what the agent did next — not the sentence
that says it.

The reflector writes records (:mod:`kbgraph.ingest.reflect`); the sentence an insight is stored
under is rendered from its record by one function (:func:`kbgraph.ingest.wording.sentence`);
documents, skills and the audit read the record, never the sentence. What backs a statement (runs,
tasks, runs that succeeded, runs whose next call went through) and its domain are counted beside
it (``kbgraph.ingest.integrate_evidence.Statement``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from kbgraph.core.models._base import RecoveryKind, _Strict

__all__ = ["StatementKind", "StatementRecord", "stored_record"]

#: Stored as JSON arrays, read back as tuples (a record is frozen).
_Names = Annotated[tuple[str, ...], Field(strict=False)]

#: What a statement is: a look-up done before a state change (before), the call that made it
#: (how), an error and what the agent did next (recovery), a rule the agent stated (rule), or a
#: free lesson (an LLM reflector's, or a sentence stored before statements were records). Whether
#: a rule or a lesson stands under *When to use*, *Why*, *How* or *Pitfalls* is its document's to
#: say, from its words and its evidence.
StatementKind = Literal["before", "how", "recovery", "rule", "lesson"]


class StatementRecord(_Strict):
    """What a statement says, field by field (which fields a kind uses is said beside each)."""

    model_config = ConfigDict(frozen=True)

    kind: StatementKind
    #: The operation it is about, humanised ("book reservation"): every kind but a lesson.
    operation: str = ""
    #: before: the look-up (a tool's name); how: the call; recovery by switching: the tool switched to.
    action: str = ""
    #: how: the names of the call's arguments, sorted.
    arguments: _Names = ()
    #: recovery: the error class, values masked ("payment amount does not add up, total price is #").
    error: str = ""
    #: recovery: what the agent did next.
    recovery: RecoveryKind | None = None
    #: recovery by retrying: the argument paths each retry changed, one entry per variant (sorted
    #: paths, indices as ``[]``); a statement standing for several retries of one failure lists each.
    changed: Annotated[tuple[_Names, ...], Field(strict=False)] = ()
    #: Whether it stands for several retries of one failure (their changed arguments its detail).
    merged: bool = False
    #: rule: the rule as the agent stated it; lesson: the sentence.
    text: str = ""

    def retry_key(self) -> tuple[str, str] | None:
        """The failure a retry is about (operation, error class): retries of one failure are one
        statement whatever arguments they changed. None for anything but a retry."""
        if self.kind == "recovery" and self.recovery == "retry":
            return (self.operation, self.error)
        return None


def stored_record(value: Any) -> StatementRecord | None:
    """A record as a node property holds it (JSON text); None for none (a node stored before
    records were kept)."""
    return StatementRecord.model_validate_json(value) if value else None
