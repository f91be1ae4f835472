"""The recovery after a failed step (:func:`recovery_after`), what it says (:class:`Recovery`), and
the error's signature (:func:`error_signature`): the rules are in the package docstring."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kbgraph.core.generalise import CODE, EMAIL, SPACES, humanise_action
from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.recovery._changes import MAX_CHANGES_SHOWN, ArgumentChange, argument_changes, describe_call
from kbgraph.core.recovery._thoughts import next_attempt, preparation_between, thoughts_of, trim_thought
from kbgraph.core.recovery._values import Run, short, type_prefixes
from kbgraph.core.models import RecoveryKind, Trajectory
from kbgraph.core.shapes import counted_tool

_ERROR_PREFIX = re.compile(r"^\s*error\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Recovery:
    """What followed one failed step (see the package docstring)."""

    kind: RecoveryKind
    failed_index: int
    #: The next attempt (the fix, when it went through) and its action; None for "none".
    fix_index: int | None = None
    action: str | None = None
    #: A retry's argument changes.
    changes: tuple[ArgumentChange, ...] = ()
    #: Look-ups and calculations between the failure and the fix.
    preparation: tuple[str, ...] = ()
    thought: str | None = None
    #: The fix call went through (no error).
    recovered: bool = False
    run_succeeded: bool = False
    #: A switch's call, its arguments as shown (``transfer to human agents (summary: "…")``).
    switched_to: str | None = None
    #: When the fix errored: its error, generalised; and whether it was this same error again.
    fix_error: str | None = None
    fix_failed_same_way: bool = False

    @property
    def got_past(self) -> bool:
        """The next attempt no longer hit this error: it went through, or it was the same call
        and failed with another error (a changed flight got past "not enough seats" into "not
        enough balance")."""
        return self.recovered or (self.kind in ("retry", "repeat") and not self.fix_failed_same_way)

    @property
    def concrete(self) -> bool:
        """A fix that went through, named so another agent can act on it: a retry that says what
        changed, a switch that says with what, or the agent's reasoning."""
        if not self.recovered:
            return False
        if self.kind == "retry" and self.changes:
            return True
        if self.kind == "switch" and self.switched_to and self.switched_to != humanise_action(self.action or ""):
            return True  # the call's arguments are described, not only its name
        return bool(self.thought)

    @property
    def text(self) -> str:
        """One line a person (or an agent) reads: never a bare placeholder, never a raw id."""
        if self.kind == "none" or self.action is None:
            head = "nothing was tried after this error"
            if self.preparation:
                head += ", only " + ", ".join(self.preparation)
            return f"{head}{self._thought_part()}; the run {'succeeded' if self.run_succeeded else 'failed'}"
        name = humanise_action(self.action)
        if self.kind == "retry":
            shown = [c.describe() for c in self.changes[:MAX_CHANGES_SHOWN]]
            if len(self.changes) > MAX_CHANGES_SHOWN:
                shown.append(f"and {len(self.changes) - MAX_CHANGES_SHOWN} more")
            head = f"retried {name} with " + "; ".join(shown)
        elif self.kind == "repeat":
            head = f"repeated {name} unchanged"
        else:
            head = f"switched to {self.switched_to or name}"
        if self.preparation:
            head += " after " + ", ".join(self.preparation)
        head += self._thought_part()
        if not self.recovered and self.kind == "switch":
            head += f"; it failed: {self.fix_error}" if self.fix_error else "; it failed"
        elif not self.recovered and self.got_past and self.fix_error:
            head += f"; it got past this error but failed with: {self.fix_error}"
        elif not self.recovered:
            head += "; it failed again"
        return f"{head}; {'the run then succeeded' if self.run_succeeded else 'the run still failed'}"

    def _thought_part(self) -> str:
        return f' (thought: "{self.thought}")' if self.thought else ""


# --------------------------------------------------------------------------- signatures

# Numbers as values ("305", "1,625", "12.50"). A comma right after one goes with it ("is #
# but paid #"): stored signatures and their readers already use that form, so it stays.
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_QUOTED = re.compile(r"(['\"`]).*?\1")


@dataclass(frozen=True)
class ErrorSignature:
    """The same error on the same action, values masked (:func:`signed_error`): its two parts as
    data, and ``key``, the one string they make (``action|error``), which identical failure modes
    share and the graph matches on. Readers take the parts from here, never from ``key``."""

    action: str
    error: str

    @property
    def key(self) -> str:
        return f"{self.action}|{self.error}"

    @classmethod
    def stored(cls, action: str | None, error: str | None, key: str | None) -> ErrorSignature | None:
        """A stored failure mode's signature from its parts as the write path stores them
        (``signature_action``, ``signature_error``). One stored before the parts were kept, or
        given ready-made with a ``signature`` alone, has only its ``key``: the parts are then read
        back from it (before the first ``|``, after it), the one place that does, for data
        written before kbgraph kept them. None without a signature."""
        if action is not None and error is not None:
            return cls(action, error)
        if not key or "|" not in key:
            return None
        action, _, error = key.partition("|")
        return cls(action, error)


def signed_error(action: str, error: str, arguments: Mapping[str, Any] | None = None) -> ErrorSignature:
    """The action (lower-cased) and the error with every value masked (e-mails, quoted values, ids
    and codes, numbers as ``#``), lower-cased, white space collapsed: the same error on the same
    action, whatever the run's values (``payment method certificate_7504069 not found`` and
    ``… certificate_4856383 …`` share one). Given the call's ``arguments``, a call made through a
    wrapper is signed by the tool it called (:func:`~kbgraph.core.shapes.counted_tool`), as its
    step counts: the same error of two tools called through one wrapper is two failures, not one."""
    if arguments is not None:
        action = counted_tool(action, arguments)
    text = EMAIL.sub("@", error)
    text = _QUOTED.sub("'…'", text)
    text = CODE.sub("#", text)
    text = _NUMBER.sub("#", text)
    return ErrorSignature(action.strip().lower(), SPACES.sub(" ", text).strip().lower()[:300])


def error_signature(action: str, error: str, arguments: Mapping[str, Any] | None = None) -> str:
    """``action|error``: the key of :func:`signed_error` (what failure modes and steps store as
    ``signature``)."""
    return signed_error(action, error, arguments).key


def recovery_after(
    trajectory: Trajectory, failed_index: int, names: Collection[str] | None = None, ids: Collection[str] | None = None
) -> Recovery:
    """What followed the failed step ``failed_index`` of ``trajectory`` (package docstring).
    ``names``/``ids`` are the run's person names and identifiers
    (:func:`~kbgraph.core.run_identities.names_in_trajectory`, ``ids_in_trajectory``); read from the
    trajectory when not given (pass them to save reading it again for each failed step)."""
    steps = trajectory.steps
    if not 0 <= failed_index < len(steps):
        raise IndexError(f"failed_index {failed_index} is not a step of {trajectory.id} ({len(steps)} steps)")
    names = names_in_trajectory(trajectory) if names is None else frozenset(names)
    run = Run(frozenset(names), ids_in_trajectory(trajectory) if ids is None else frozenset(ids),
               type_prefixes(trajectory, names))
    failed = steps[failed_index]
    fix_index = next_attempt(steps, failed_index)
    end = len(steps) if fix_index is None else fix_index + 1
    written = list(dict.fromkeys(t for step in steps[failed_index + 1:end] for t in thoughts_of(step)))
    thought = trim_thought(" ".join(written), run.names, run.ids)
    preparation = preparation_between(steps[failed_index + 1:fix_index if fix_index is not None else end], run)
    if fix_index is None:
        return Recovery(kind="none", failed_index=failed_index, preparation=preparation, thought=thought,
                        run_succeeded=trajectory.outcome.success)
    fix = steps[fix_index]
    fix_error = _ERROR_PREFIX.sub("", short(run.general(fix.error), 120)) if fix.error else None
    same_way = fix.error is not None and failed.error is not None and (
        error_signature(fix.action, fix.error, fix.arguments) == error_signature(failed.action, failed.error, failed.arguments))
    changes: tuple[ArgumentChange, ...] = ()
    switched_to = None
    if fix.action == failed.action:
        changes = argument_changes(failed.arguments, fix.arguments, run.names, run.ids, run.prefixes)
        kind: RecoveryKind = "retry" if changes else "repeat"
    else:
        kind = "switch"
        switched_to = describe_call(fix.action, fix.arguments, run)
    return Recovery(
        kind=kind, failed_index=failed_index, fix_index=fix_index, action=fix.action, changes=changes,
        preparation=preparation, thought=thought, recovered=fix.error is None,
        run_succeeded=trajectory.outcome.success, switched_to=switched_to, fix_error=fix_error,
        fix_failed_same_way=same_way,
    )
