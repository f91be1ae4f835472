"""Recoveries that teach: for a step that errored, what the agent did next that made it work.

Given a trajectory and the index of a step with an ``error``, :func:`recovery_after` reads on:

- the **fix** is the first later step that is not preparation: ``think`` and ``calculate`` are
  always preparation, and so are look-ups when the failed step changed something (when a look-up
  failed, the next look-up is its fix). The same action again is a **retry** (its
  arguments changed) or a **repeat** (unchanged); another action is a **switch**; nothing but
  look-ups until the end is **none**. Retries of the same action that errored again are counted
  and read past: the recovery is the call that finally went through (or the last one tried).
- for a retry, the **changes** are a recursive diff of the two calls' arguments
  (``payment_methods[1].amount: 250 → 55``). Amounts, dates, times, counts and cabin classes are
  what teach, so they are shown; identifying values (ids, codes, e-mails, names) never are: a
  changed one reads "another payment_id", with its type prefix when that is a type and not a
  person (``certificate_… → credit_card_…``: a prefix shown only when two or more distinct ids of
  the run share it, which a user id like ``mia_li_3668`` never does).
- the **preparation**: the calculations in between (``calculate 305 - 250 = 55.0``).
- the **thought**: the agent's reasoning before the fix — the first thought written after the
  error (a ``think`` step's text, or a step's ``thought``), generalised (ids, e-mails, codes
  become placeholders; amounts, dates and times stay) and cut at a sentence boundary.
- whether the fix call itself went through (``recovered``) and whether the run then succeeded.

:func:`error_signature` names "the same error on the same action", so identical failure modes of
many runs are one group. Pure functions, no state.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from kbgraph.ingest.generalise import EMAIL, IDENTIFYING, describe_step, generalise_text, humanise_action
from kbgraph.ingest.shapes import verb_of
from kbgraph.models import Trajectory, TrajectoryStep

__all__ = ["ArgumentChange", "Recovery", "RecoveryKind", "error_signature", "recovery_after"]

RecoveryKind = Literal["retry", "repeat", "switch", "none"]

#: Changes listed in a recovery's text; the rest are counted ("and 3 more").
MAX_CHANGES_SHOWN = 4
#: Longest thought kept (cut at the last sentence end before it).
THOUGHT_CHARS = 300

_ID_LIKE = re.compile(r"^#?(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])[\w-]+$")
_TYPE_PREFIX = re.compile(r"^([a-z]+(?:_[a-z]+)*)_\d+$")
_ANY_ID = re.compile(r"\b[a-z]+(?:_[a-z]+)*_\d+\b")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_PREPARATION = frozenset({"think", "calculate"})


@dataclass(frozen=True)
class ArgumentChange:
    """One argument that differs between the failed call and the fix."""

    path: str
    before: str
    after: str

    def describe(self) -> str:
        if self.before == "—":
            return f"{self.path} added ({self.after})"
        if self.after == "—":
            return f"{self.path} removed"
        return f"{self.path}: {self.before} → {self.after}"


@dataclass(frozen=True)
class Recovery:
    """What followed one failed step (see the module docstring)."""

    kind: RecoveryKind
    failed_index: int
    #: The step that fixed it (or was the last try), and its action.
    fix_index: int | None = None
    action: str | None = None
    changes: tuple[ArgumentChange, ...] = ()
    #: Calls of the same action that errored again before the fix.
    failed_retries: int = 0
    preparation: tuple[str, ...] = ()
    thought: str | None = None
    #: The fix call went through (no error).
    recovered: bool = False
    run_succeeded: bool = False
    switched_to: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def concrete(self) -> bool:
        """It names a fix that went through, with what it changed, the call it switched to, or
        the agent's reasoning: something another agent can act on."""
        if not self.recovered:
            return False
        if self.kind == "retry":
            return bool(self.changes) or self.thought is not None
        if self.kind == "switch":
            return True
        return self.thought is not None

    @property
    def text(self) -> str:
        """One line a person (or an agent) reads: never a bare placeholder."""
        outcome = "the run then succeeded" if self.run_succeeded else "the run still failed"
        if self.kind == "none" or self.action is None:
            return f"nothing was tried after this error; {'the run succeeded' if self.run_succeeded else 'the run failed'}"
        name = humanise_action(self.action)
        if self.kind == "retry":
            shown = [c.describe() for c in self.changes[:MAX_CHANGES_SHOWN]]
            if len(self.changes) > MAX_CHANGES_SHOWN:
                shown.append(f"and {len(self.changes) - MAX_CHANGES_SHOWN} more")
            head = f"retried {name} with " + ("; ".join(shown) if shown else "the same arguments")
        elif self.kind == "repeat":
            head = f"repeated {name} unchanged"
        else:
            head = f"switched to {self.switched_to or name}"
        if self.failed_retries:
            head += f" (after {self.failed_retries} more failed {'try' if self.failed_retries == 1 else 'tries'})"
        if not self.recovered:
            head += ", which failed too"
        if self.preparation:
            head += " after " + ", ".join(self.preparation)
        if self.thought:
            head += f' (thought: "{self.thought}")'
        return f"{head}; {outcome}"


# --------------------------------------------------------------------------- signatures


_QUOTED = re.compile(r"(['\"`]).*?\1")
_CODE = re.compile(r"#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_SPACES = re.compile(r"\s+")


def error_signature(action: str, error: str) -> str:
    """``action|error`` with every value masked (e-mails, quoted values, ids and codes, numbers),
    lower-cased: the same error on the same action, whatever the run's values."""
    text = EMAIL.sub("@", error)
    text = _QUOTED.sub("'…'", text)
    text = _CODE.sub("#", text)
    text = _NUMBER.sub("#", text)
    return f"{action.strip().lower()}|{_SPACES.sub(' ', text).strip().lower()[:300]}"


# --------------------------------------------------------------------------- argument changes


def _type_prefixes(trajectory: Trajectory) -> frozenset[str]:
    """Prefixes of the run's ids that are types, not people: shared by two or more distinct ids
    (``certificate_4856383``, ``certificate_7504069``), or named on their own as a value the tools
    returned (``"source": "gift_card"``). A user id's prefix (``mia_li``) is neither."""
    ids: set[str] = set()
    texts = [text for step in trajectory.steps for text in (repr(step.arguments), step.observation or "")]
    for text in texts:
        ids.update(_ANY_ID.findall(text))
    counts: dict[str, int] = {}
    for value in ids:
        match = _TYPE_PREFIX.match(value)
        if match:
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    named = {prefix for prefix in counts if any(f'"{prefix}"' in text or f"'{prefix}'" in text for text in texts)}
    return frozenset(prefix for prefix, n in counts.items() if n >= 2 or prefix in named)


def _identifying(path: str, value: Any) -> bool:
    key = re.split(r"[.\[]", path.rsplit(".", 1)[-1])[0]
    if IDENTIFYING.search(key):
        return True
    return isinstance(value, str) and (bool(_ID_LIKE.match(value)) or bool(EMAIL.fullmatch(value)))


def _shown(path: str, value: Any) -> str:
    """A value as a change shows it: kept when it teaches (numbers, dates, words), masked when it
    identifies."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, list | dict):
        return f"{len(value)} item(s)" if isinstance(value, list) else f"{len(value)} field(s)"
    text = str(value)
    if _identifying(path, text):
        return "{" + re.split(r"[.\[]", path.rsplit(".", 1)[-1])[0] + "}"
    return generalise_text(text)[:60]


def _diff(before: Any, after: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            inner = f"{path}.{key}" if path else str(key)
            if key not in before:
                yield inner, None, after[key]
            elif key not in after:
                yield inner, before[key], None
            else:
                yield from _diff(before[key], after[key], inner)
    elif isinstance(before, list) and isinstance(after, list):
        for i in range(max(len(before), len(after))):
            inner = f"{path}[{i}]"
            if i >= len(before):
                yield inner, None, after[i]
            elif i >= len(after):
                yield inner, before[i], None
            else:
                yield from _diff(before[i], after[i], inner)
    elif before != after:
        yield path, before, after


def argument_changes(before: dict[str, Any], after: dict[str, Any], prefixes: frozenset[str] = frozenset()) -> tuple[ArgumentChange, ...]:
    """The arguments that differ between two calls, values shown or masked (module docstring)."""
    changes: list[ArgumentChange] = []
    for path, old, new in _diff(before, after, ""):
        if old is not None and new is not None and (_identifying(path, old) or _identifying(path, new)):
            types = [m.group(1) if m and m.group(1) in prefixes else None
                     for m in (_TYPE_PREFIX.match(str(v)) for v in (old, new))]
            label = re.split(r"[.\[]", path.rsplit(".", 1)[-1])[0]
            if types[0] and types[1] and types[0] != types[1]:
                changes.append(ArgumentChange(path, f"{types[0]}_…", f"{types[1]}_…"))
            else:
                changes.append(ArgumentChange(path, f"one {label}", f"another {label}"))
            continue
        changes.append(ArgumentChange(path, "—" if old is None else _shown(path, old), "—" if new is None else _shown(path, new)))
    return tuple(changes)


# --------------------------------------------------------------------------- the recovery


def _thought_of(step: TrajectoryStep) -> str | None:
    if step.action == "think":
        value = step.arguments.get("thought")
        if isinstance(value, str) and value.strip():
            return value
    return step.thought if step.thought and step.thought.strip() else None


def trim_thought(text: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str | None:
    """The agent's words, generalised, cut at the last sentence end within THOUGHT_CHARS."""
    general = generalise_text(text, names, ids)
    general = " ".join(general.split())
    if not general:
        return None
    if len(general) <= THOUGHT_CHARS:
        return general
    cut = general[:THOUGHT_CHARS]
    ends = [m.start() for m in _SENTENCE_END.finditer(cut + " ")]
    return cut[: ends[-1]].strip() if ends and ends[-1] > 40 else cut.rstrip() + "…"


def _calculation(step: TrajectoryStep) -> str | None:
    expression = step.arguments.get("expression")
    if step.action != "calculate" or not isinstance(expression, str):
        return None
    result = f" = {step.observation.strip()[:20]}" if step.observation and not step.error else ""
    return f"calculate {expression.strip()[:60]}{result}"


def recovery_after(
    trajectory: Trajectory, failed_index: int, names: Collection[str] = (), ids: Collection[str] = ()
) -> Recovery:
    """What followed the failed step ``failed_index`` of ``trajectory`` (module docstring);
    ``names``/``ids`` are the run's (:func:`kbgraph.ingest.generalise.names_in_trajectory`)."""
    steps = trajectory.steps
    failed = steps[failed_index]
    thought: str | None = None
    preparation: list[str] = []
    failed_retries = 0
    for index in range(failed_index + 1, len(steps)):
        step = steps[index]
        if thought is None and _thought_of(step):
            thought = trim_thought(_thought_of(step) or "", names, ids)
        calculation = _calculation(step)
        if calculation:
            preparation.append(calculation)
        # Thinking and calculating prepare a fix. Looking things up does too, when what failed
        # changed something; when a look-up failed, the next look-up is its fix.
        if step.action in _PREPARATION or (verb_of(step.action) == "lookup" and verb_of(failed.action) != "lookup"):
            continue
        if step.action == failed.action and step.error and any(
            later.action == failed.action for later in steps[index + 1:]
        ):
            failed_retries += 1  # tried again and failed again; read on to the call that went through
            continue
        common = {"failed_index": failed_index, "fix_index": index, "action": step.action, "thought": thought,
                  "preparation": tuple(preparation[-2:]), "recovered": step.error is None,
                  "run_succeeded": trajectory.outcome.success, "failed_retries": failed_retries}
        if step.action == failed.action:
            changes = argument_changes(failed.arguments, step.arguments, _type_prefixes(trajectory))
            return Recovery(kind="retry" if changes else "repeat", changes=changes, **common)  # type: ignore[arg-type]
        return Recovery(kind="switch", switched_to=describe_step(step.action, step.arguments), **common)  # type: ignore[arg-type]
    return Recovery(kind="none", failed_index=failed_index, thought=thought, run_succeeded=trajectory.outcome.success)
