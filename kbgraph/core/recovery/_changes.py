"""A retry's changes: a recursive diff of two calls' arguments, each value shown or masked
(:mod:`._values`), and a switch's call described by its arguments."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from kbgraph.core.generalise import humanise_action
from kbgraph.core.recovery._values import Run, decoded, field, identifying, key_of, shown, type_of

#: Changes (and a switch's arguments) listed in a recovery's text; the rest are counted.
MAX_CHANGES_SHOWN = 5
#: Nesting read by the diff; deeper values are compared whole (arguments are never that deep).
MAX_DEPTH = 12


@dataclass(frozen=True)
class ArgumentChange:
    """One argument that differs between the failed call and the fix, as shown (never a raw id).
    ``before`` is None when the fix added it, ``after`` None when the fix dropped it;
    ``identifying`` when the value is an id shown only as "another …" (``masked``) or by its type
    prefix."""

    path: str
    before: str | None
    after: str | None
    identifying: bool = False
    masked: bool = False

    def describe(self) -> str:
        if self.before is None:
            return f"{self.path} added ({self.after})"
        if self.after is None:
            return f"{self.path} removed ({self.before})"
        if self.masked:
            return f"{self.path}: {self.after}"
        return f"{self.path}: {self.before} → {self.after}"


def _diff(before: Any, after: Any, path: str, depth: int = 0) -> Iterator[tuple[str, Any, Any, bool, bool]]:
    """(path, before, after, present before, present after) for each leaf that differs."""
    before, after = decoded(before), decoded(after)
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


def _change(path: str, old: Any, new: Any, run: Run) -> ArgumentChange:
    key = key_of(path)
    if identifying(key, old, run) or identifying(key, new, run):
        types = (type_of(old, run), type_of(new, run))
        if types[0] and types[1] and types[0] != types[1]:
            return ArgumentChange(path, f"{types[0]}_…", f"{types[1]}_…", identifying=True)
        label = f"{types[1]}_…" if types[0] and types[0] == types[1] else key
        return ArgumentChange(path, f"one {label}", f"another {label}", identifying=True, masked=True)
    return ArgumentChange(path, shown(key, old, run), shown(key, new, run))


def argument_changes(
    before: dict[str, Any], after: dict[str, Any], names: Collection[str] = (), ids: Collection[str] = (),
    prefixes: Collection[str] = (),
) -> tuple[ArgumentChange, ...]:
    """The arguments that differ between two calls, values shown or masked (package docstring);
    ``names``/``ids`` are the run's, ``prefixes`` the id prefixes that may be shown
    (:func:`type_prefixes`)."""
    run = Run(frozenset(names), frozenset(ids), frozenset(prefixes))
    changes: list[ArgumentChange] = []
    for path, old, new, had, has in _diff(before, after, ""):
        if not had:
            changes.append(ArgumentChange(path, None, shown(key_of(path), new, run)))
        elif not has:
            changes.append(ArgumentChange(path, shown(key_of(path), old, run), None))
        else:
            changes.append(_change(path, old, new, run))
    return tuple(changes)


def describe_call(action: str, arguments: dict[str, Any], run: Run) -> str:
    """A switch's call: its arguments as fields (:func:`field`)."""
    parts = [field(str(key), value, run) for key, value in sorted(arguments.items(), key=lambda kv: str(kv[0]))]
    if len(parts) > MAX_CHANGES_SHOWN:
        parts = parts[:MAX_CHANGES_SHOWN] + [f"and {len(parts) - MAX_CHANGES_SHOWN} more"]
    name = humanise_action(action)
    return f"{name} ({', '.join(parts)})" if parts else name

