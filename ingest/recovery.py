"""Recoveries that teach: for a step that errored, what the agent did next to get past it.

:func:`recovery_after` reads a trajectory on from a failed step and returns a :class:`Recovery`.

**The fix.** ``think`` and ``calculate`` are always preparation. When the failed step changed
something, look-ups are preparation too, and the fix is the first later step that is none of
these: the same action again (the next call of it), or else the first state-changing step. When
a look-up failed, the next look-up is its fix (another way to find the same thing). Its kind:

- **retry** — the same action with changed arguments; **repeat** — the same arguments again;
- **switch** — another action; **none** — nothing followed but look-ups, or the run ended.

Only the next attempt is the fix. When it errored too, ``recovered`` is False and the text says
whether it failed the same way or got past this error into another one; that later failure has
its own recovery when it is read.

**Changes** (a retry): a recursive diff of the two calls' arguments — dicts by key (added and
removed keys too), lists by index, strings holding JSON decoded first — as
``payment_methods[1].amount: 5 → 55``. What teaches is shown: amounts, counts, dates, times,
cabin classes, words. What identifies is not (argument names matched by
:data:`~kbgraph.ingest.generalise.IDENTIFYING`, dates of birth, and values that
:func:`~kbgraph.ingest.generalise.generalise_text` turns into a placeholder: codes, ids, e-mails,
the run's person names): a changed one reads "another payment_id", or shows its **type prefix**
when the type changed (``certificate_… → credit_card_…``). A prefix — the lower-case words
before an id's final digits — is shown only when it names a type, not a person:

- two or more distinct ids of the run share it (``certificate_4856383``, ``certificate_7504069``),
  or a tool wrote it as a value of its own (``"source": "gift_card"``); and
- none of its words is a word of a person name of the run (``mia_li_3668``: "Mia"); and
- no id with that prefix was passed under a user/customer/account/name argument (``user_id``).

**Preparation**: the look-ups and calculations between the failure and the fix, briefly
(``get user details``, ``calculate 305 - 250 = 55``: a calculation's expression and result are
meaning). **Thought**: the agent's words from the failure to the fix (``think`` steps' thought,
the ``thought`` of each step up to and including the fix), generalised (ids, codes, e-mails and
names become placeholders; amounts, dates, times, counts and cabins stay), without sentences said
to the user ("I apologize for the confusion."), cut at a sentence end within 300 characters; a
blank thought is absent.

A recovery is **concrete** when its fix went through and it names something to act on: a retry's
changes, a switch's arguments, or the agent's thought (a bare repeat is not).

:func:`error_signature` names "the same error on the same action", so identical failure modes of
many runs are one group. Pure functions, no state; odd arguments and results never raise.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from kbgraph.ingest.generalise import (
    CODE,
    EMAIL,
    IDENTIFYING,
    SPACES,
    generalise_text,
    humanise_action,
    ids_in_trajectory,
    names_in_trajectory,
)
from kbgraph.ingest.shapes import verb_of
from kbgraph.models import RecoveryKind, Trajectory, TrajectoryStep

__all__ = [
    "ArgumentChange",
    "Recovery",
    "RecoveryKind",
    "argument_changes",
    "error_signature",
    "recovery_after",
    "trim_thought",
    "type_prefixes",
]

#: Changes (and a switch's arguments) listed in a recovery's text; the rest are counted.
MAX_CHANGES_SHOWN = 5
#: Longest thought kept (cut at the last sentence end before it).
THOUGHT_CHARS = 300
#: Longest free-text argument value shown (a transfer's summary), cut at a word.
VALUE_CHARS = 100
#: Preparation steps listed (the last ones: nearest the fix).
MAX_PREPARATION = 3
#: Nesting read by the diff; deeper values are compared whole (arguments are never that deep).
MAX_DEPTH = 12

_PREPARATION = frozenset({"think", "calculate"})
# Dates of birth are dates, but a person's: never shown.
_PERSONAL = re.compile(r"(?:^|_)(?:dob|birth|birthday|birthdate)(?:$|_)", re.IGNORECASE)
# Arguments whose id values name a person or an account: their prefixes are never shown.
_PERSON_ARGUMENT = re.compile(r"user|customer|account|holder|name|email", re.IGNORECASE)
_TYPED_ID = re.compile(r"^([a-z]+(?:_[a-z]+)*)_\d+$")
_ANY_TYPED_ID = re.compile(r"\b[a-z]+(?:_[a-z]+)*_\d+\b")
_PLACEHOLDER = re.compile(r"\{\w+\}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
# Sentences said to the user, not reasoning: "I apologize for the confusion earlier."
_CHATTER = re.compile(r"^(?:I apologi[sz]e|(?:I'm |I am )?sorry|thank you|thanks)\b[^.!?]*[.!?]?$", re.IGNORECASE)
_ERROR_PREFIX = re.compile(r"^\s*error\s*:\s*", re.IGNORECASE)


# --------------------------------------------------------------------------- the records


@dataclass(frozen=True)
class ArgumentChange:
    """One argument that differs between the failed call and the fix, as shown (never a raw id).
    ``before`` is None when the fix added it, ``after`` None when the fix dropped it;
    ``identifying`` when the value is an id shown only as "another …" or by its type prefix."""

    path: str
    before: str | None
    after: str | None
    identifying: bool = False

    def describe(self) -> str:
        if self.before is None:
            return f"{self.path} added ({self.after})"
        if self.after is None:
            return f"{self.path} removed ({self.before})"
        if self.identifying and self.after.startswith("another "):
            return f"{self.path}: {self.after}"
        return f"{self.path}: {self.before} → {self.after}"


@dataclass(frozen=True)
class Recovery:
    """What followed one failed step (see the module docstring)."""

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


def error_signature(action: str, error: str) -> str:
    """``action|error`` with every value masked (e-mails, quoted values, ids and codes, numbers
    as ``#``), lower-cased, white space collapsed: the same error on the same action, whatever the
    run's values (``payment method certificate_7504069 not found`` and ``… certificate_4856383 …``
    share one)."""
    text = EMAIL.sub("@", error)
    text = _QUOTED.sub("'…'", text)
    text = CODE.sub("#", text)
    text = _NUMBER.sub("#", text)
    return f"{action.strip().lower()}|{SPACES.sub(' ', text).strip().lower()[:300]}"


# --------------------------------------------------------------------------- showing values


@dataclass(frozen=True)
class _Run:
    """What showing a value needs to know about its run."""

    names: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()

    def general(self, text: str) -> str:
        return generalise_text(text, names=self.names, ids=self.ids)


def _walk(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every (argument name, scalar value) in a nested value."""
    if isinstance(value, dict):
        for inner_key, inner in value.items():
            yield from _walk(inner, str(inner_key))
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner, key)
    else:
        yield key, value


def type_prefixes(trajectory: Trajectory, names: Collection[str] = ()) -> frozenset[str]:
    """The id prefixes of a run that name a type, not a person (rule in the module docstring)."""
    texts = [text for step in trajectory.steps for text in (json.dumps(step.arguments, default=str),
                                                            step.observation or "", step.error or "")]
    ids = {value for text in texts for value in _ANY_TYPED_ID.findall(text)}
    counts: dict[str, int] = {}
    for value in ids:
        match = _TYPED_ID.match(value)
        if match:
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    named = {prefix for prefix in counts if any(f'"{prefix}"' in text for text in texts)}
    name_words = {word.lower() for name in names for word in re.split(r"[\s_-]+", name) if word}
    personal = {match.group(1) for step in trajectory.steps for key, value in _walk(step.arguments)
                if _PERSON_ARGUMENT.search(key) and isinstance(value, str)
                for match in [_TYPED_ID.match(value)] if match}
    return frozenset(
        prefix for prefix, n in counts.items()
        if (n >= 2 or prefix in named) and prefix not in personal and not set(prefix.split("_")) & name_words)


def _decoded(value: Any) -> Any:
    """A string that holds a JSON object or list, decoded (tool-calling APIs nest them)."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _key_of(path: str) -> str:
    """The argument name a path ends in: ``payment_methods[1].amount`` → ``amount``."""
    return re.sub(r"\[\d+\]$", "", path.rsplit(".", 1)[-1]) or path


def _identifying(key: str, value: Any, run: _Run) -> bool:
    """An id, a code, an e-mail, a name or a date of birth: never shown as it is."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return False
    if IDENTIFYING.search(key) or _PERSONAL.search(key):
        return True
    text = str(value).strip()
    return isinstance(value, str) and " " not in text and bool(_PLACEHOLDER.search(run.general(text)))


def _type_of(value: Any, run: _Run) -> str | None:
    match = _TYPED_ID.match(value.strip()) if isinstance(value, str) else None
    return match.group(1) if match and match.group(1) in run.prefixes else None


def _short(text: str, limit: int = VALUE_CHARS) -> str:
    """A text cut to its first sentence, or at a word, within ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    return str(value)


def _shown(key: str, value: Any, run: _Run) -> str:
    """A value as a recovery shows it: what teaches as it is, what identifies masked (its type
    prefix, or "a <key>"), a record as its fields, a list as its length."""
    value = _decoded(value)
    if isinstance(value, dict):
        fields = [_field(str(k), v, run) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                  if not isinstance(_decoded(v), dict | list)]
        return ", ".join(fields[:3]) + (", …" if len(fields) > 3 else "") if fields else f"{len(value)} field(s)"
    if isinstance(value, list):
        return f"{len(value)} item{'' if len(value) == 1 else 's'}"
    if _identifying(key, value, run):
        prefix = _type_of(value, run)
        return f"{prefix}_…" if prefix else f"a {key}"
    if isinstance(value, str):
        text = _short(run.general(value))
        # Free text is quoted ("no seats left"), a short value is not (economy, 3 pm).
        return f'"{text}"' if len(text.split()) > 3 or not text else text
    return _scalar(value)


def _field(key: str, value: Any, run: _Run) -> str:
    """``amount: 60``; an id by its type (``payment_id: gift_card_…``) or, without one, by its
    name alone (``reservation_id``): "reservation_id: a reservation_id" says nothing more."""
    value = _decoded(value)
    if _identifying(key, value, run) and _type_of(value, run) is None:
        return key
    return f"{key}: {_shown(key, value, run)}"


# --------------------------------------------------------------------------- argument changes


def _diff(before: Any, after: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any, Any, bool, bool]]:
    """(path, before, after, present before, present after) for each leaf that differs."""
    before, after = _decoded(before), _decoded(after)
    if depth < MAX_DEPTH and isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            inner = f"{path}.{key}" if path else str(key)
            if key not in before:
                yield inner, None, after[key], False, True
            elif key not in after:
                yield inner, before[key], None, True, False
            else:
                yield from _diff(before[key], after[key], inner, depth + 1)
    elif depth < MAX_DEPTH and isinstance(before, list) and isinstance(after, list):
        for i in range(max(len(before), len(after))):
            inner = f"{path}[{i}]"
            if i >= len(after):
                yield inner, before[i], None, True, False
            elif i >= len(before):
                yield inner, None, after[i], False, True
            else:
                yield from _diff(before[i], after[i], inner, depth + 1)
    elif before != after or isinstance(before, bool) != isinstance(after, bool):  # 305 == 305.0, True != 1
        yield path or "arguments", before, after, True, True


def _change(path: str, old: Any, new: Any, run: _Run) -> ArgumentChange:
    key = _key_of(path)
    if _identifying(key, old, run) or _identifying(key, new, run):
        types = (_type_of(old, run), _type_of(new, run))
        if types[0] and types[1] and types[0] != types[1]:
            return ArgumentChange(path, f"{types[0]}_…", f"{types[1]}_…", identifying=True)
        label = f"{types[1]}_…" if types[0] and types[0] == types[1] else key
        return ArgumentChange(path, f"one {label}", f"another {label}", identifying=True)
    return ArgumentChange(path, _shown(key, old, run), _shown(key, new, run))


def argument_changes(
    before: dict[str, Any], after: dict[str, Any], names: Collection[str] = (), ids: Collection[str] = (),
    prefixes: Collection[str] = (),
) -> tuple[ArgumentChange, ...]:
    """The arguments that differ between two calls, values shown or masked (module docstring);
    ``names``/``ids`` are the run's, ``prefixes`` the id prefixes that may be shown
    (:func:`type_prefixes`)."""
    run = _Run(frozenset(names), frozenset(ids), frozenset(prefixes))
    changes: list[ArgumentChange] = []
    for path, old, new, had, has in _diff(before, after, ""):
        if not had:
            changes.append(ArgumentChange(path, None, _shown(_key_of(path), new, run)))
        elif not has:
            changes.append(ArgumentChange(path, _shown(_key_of(path), old, run), None))
        else:
            changes.append(_change(path, old, new, run))
    return tuple(changes)


def _call(action: str, arguments: dict[str, Any], run: _Run) -> str:
    """A switch's call: its arguments as fields (:func:`_field`)."""
    parts = [_field(str(key), value, run) for key, value in sorted(arguments.items(), key=lambda kv: str(kv[0]))]
    if len(parts) > MAX_CHANGES_SHOWN:
        parts = parts[:MAX_CHANGES_SHOWN] + [f"and {len(parts) - MAX_CHANGES_SHOWN} more"]
    name = humanise_action(action)
    return f"{name} ({', '.join(parts)})" if parts else name


# --------------------------------------------------------------------------- the recovery


def _thoughts_of(step: TrajectoryStep) -> Iterator[str]:
    """What the agent wrote at a step: a ``think`` call's thought, and the text before any call."""
    if step.action == "think":
        value = step.arguments.get("thought")
        if isinstance(value, str | int | float) and str(value).strip():
            yield str(value)
    if step.thought and step.thought.strip():
        yield step.thought


def trim_thought(text: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str | None:
    """The agent's words, generalised, cut at the last sentence end within THOUGHT_CHARS (or at a
    word, when no sentence ends early enough); None when there are none."""
    general = " ".join(generalise_text(text, names=names, ids=ids).split())
    general = " ".join(s for s in _SENTENCE_END.split(general) if not _CHATTER.match(s))
    if not general:
        return None
    if len(general) <= THOUGHT_CHARS:
        return general
    cut = general[:THOUGHT_CHARS]
    ends = [m.start() for m in _SENTENCE_END.finditer(cut + " ")]
    if ends and ends[-1] > 40:
        return cut[: ends[-1]].strip()
    return cut[: THOUGHT_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _calculation(step: TrajectoryStep, run: _Run) -> str:
    """``calculate 305 - 250 = 55``: the expression and its result are meaning."""
    expression = step.arguments.get("expression")
    shown = _short(run.general(str(expression)), 60) if isinstance(expression, str | int | float) else ""
    result = ""
    if step.observation and not step.error:
        try:
            number = float(step.observation.strip())
            result = f"= {_scalar(int(number) if number.is_integer() else number)}"
        except (ValueError, OverflowError):
            result = f"= {_short(run.general(step.observation), 20)}"
    return " ".join(part for part in ("calculate", shown, result) if part)


def _preparation(steps: list[TrajectoryStep], run: _Run) -> tuple[str, ...]:
    """The look-ups (by name) and calculations (with their result) among ``steps``, in order, each
    once, the last MAX_PREPARATION of them."""
    items: list[str] = []
    for step in steps:
        if step.action == "think":
            continue
        item = _calculation(step, run) if step.action == "calculate" else humanise_action(step.action)
        if step.error and step.action != "calculate":
            item += " (failed)"
        if item not in items:
            items.append(item)
    return tuple(items[-MAX_PREPARATION:])


def _fix_index(steps: list[TrajectoryStep], failed_index: int) -> int | None:
    """The next attempt after a failed step (rule in the module docstring)."""
    failed = steps[failed_index]
    failed_looks_up = verb_of(failed.action) == "lookup"
    for index in range(failed_index + 1, len(steps)):
        action = steps[index].action
        if action == failed.action:
            return index
        if action in _PREPARATION:
            continue
        if failed_looks_up or verb_of(action) != "lookup":
            return index
    return None


def recovery_after(
    trajectory: Trajectory, failed_index: int, names: Collection[str] | None = None, ids: Collection[str] | None = None
) -> Recovery:
    """What followed the failed step ``failed_index`` of ``trajectory`` (module docstring).
    ``names``/``ids`` are the run's person names and identifiers
    (:func:`~kbgraph.ingest.generalise.names_in_trajectory`, ``ids_in_trajectory``); read from the
    trajectory when not given (pass them to save reading it again for each failed step)."""
    steps = trajectory.steps
    if not 0 <= failed_index < len(steps):
        raise IndexError(f"failed_index {failed_index} is not a step of {trajectory.id} ({len(steps)} steps)")
    names = names_in_trajectory(trajectory) if names is None else frozenset(names)
    run = _Run(frozenset(names), ids_in_trajectory(trajectory) if ids is None else frozenset(ids),
               type_prefixes(trajectory, names))
    failed = steps[failed_index]
    fix_index = _fix_index(steps, failed_index)
    end = len(steps) if fix_index is None else fix_index + 1
    written = list(dict.fromkeys(t for step in steps[failed_index + 1:end] for t in _thoughts_of(step)))
    thought = trim_thought(" ".join(written), run.names, run.ids)
    preparation = _preparation(steps[failed_index + 1:fix_index if fix_index is not None else end], run)
    if fix_index is None:
        return Recovery(kind="none", failed_index=failed_index, preparation=preparation, thought=thought,
                        run_succeeded=trajectory.outcome.success)
    fix = steps[fix_index]
    fix_error = _ERROR_PREFIX.sub("", _short(run.general(fix.error), 120)) if fix.error else None
    same_way = fix.error is not None and failed.error is not None and (
        error_signature(fix.action, fix.error) == error_signature(failed.action, failed.error))
    changes: tuple[ArgumentChange, ...] = ()
    switched_to = None
    if fix.action == failed.action:
        changes = argument_changes(failed.arguments, fix.arguments, run.names, run.ids, run.prefixes)
        kind: RecoveryKind = "retry" if changes else "repeat"
    else:
        kind = "switch"
        switched_to = _call(fix.action, fix.arguments, run)
    return Recovery(
        kind=kind, failed_index=failed_index, fix_index=fix_index, action=fix.action, changes=changes,
        preparation=preparation, thought=thought, recovered=fix.error is None,
        run_succeeded=trajectory.outcome.success, switched_to=switched_to, fix_error=fix_error,
        fix_failed_same_way=same_way,
    )
