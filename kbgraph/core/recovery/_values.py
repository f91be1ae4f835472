"""How a recovery shows one argument value: what teaches as it is, what identifies masked.

The rules are in :mod:`kbgraph.core.recovery`'s docstring; the diff (:mod:`._changes`) and the
preparation (:mod:`._thoughts`) both show values through :func:`shown` and :func:`field`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

from kbgraph.core.generalise import IDENTIFYING, braced, generalise_text
from kbgraph.core.models import Trajectory

#: Longest free-text argument value shown (a transfer's summary), cut at a word.
VALUE_CHARS = 100

# Dates of birth are dates, but a person's: never shown.
_PERSONAL = re.compile(r"(?:^|_)(?:dob|birth|birthday|birthdate)(?:$|_)", re.IGNORECASE)
# Arguments whose id values name a person or an account: their prefixes are never shown.
_PERSON_ARGUMENT = re.compile(r"user|customer|account|holder|name|email", re.IGNORECASE)
_TYPED_ID = re.compile(r"^([a-z]+(?:_[a-z]+)*)_\d+$")
_ANY_TYPED_ID = re.compile(r"\b[a-z]+(?:_[a-z]+)*_\d+\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass(frozen=True)
class Run:
    """What showing a value needs to know about its run."""

    names: frozenset[str] = frozenset()
    ids: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()

    def general(self, text: str) -> str:
        return generalise_text(text, names=self.names, ids=self.ids)

    def identifies(self, text: str) -> bool:
        """Whether generalisation puts a placeholder in ``text``: counted as it writes them, not
        read back out of what it wrote."""
        written: list[str] = []

        def counted(kind: str) -> str:
            written.append(kind)
            return braced(kind)

        generalise_text(text, names=self.names, ids=self.ids, placeholder=counted)
        return bool(written)


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
    """The id prefixes of a run that name a type, not a person (rule in the package docstring)."""
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


def decoded(value: Any) -> Any:
    """A string that holds a JSON object or list, decoded (tool-calling APIs nest them)."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def key_of(path: str) -> str:
    """The argument name a path ends in: ``payment_methods[1].amount`` → ``amount``."""
    return re.sub(r"\[\d+\]$", "", path.rsplit(".", 1)[-1]) or path


def identifying(key: str, value: Any, run: Run) -> bool:
    """An id, a code, an e-mail, a name or a date of birth: never shown as it is."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        return False
    if IDENTIFYING.search(key) or _PERSONAL.search(key):
        return True
    text = str(value).strip()
    return isinstance(value, str) and " " not in text and run.identifies(text)


def type_of(value: Any, run: Run) -> str | None:
    match = _TYPED_ID.match(value.strip()) if isinstance(value, str) else None
    return match.group(1) if match and match.group(1) in run.prefixes else None


def short(text: str, limit: int = VALUE_CHARS) -> str:
    """A text cut to its first sentence, or at a word, within ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    first = SENTENCE_END.split(text, maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return text[: limit - 1].rsplit(" ", 1)[0] + "…"


def scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}" if math.isfinite(value) else str(value)
    return str(value)


def shown(key: str, value: Any, run: Run) -> str:
    """A value as a recovery shows it: what teaches as it is, what identifies masked (its type
    prefix, or "a <key>"), a record as its fields, a list as its length."""
    value = decoded(value)
    if isinstance(value, dict):
        fields = [field(str(k), v, run) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                  if not isinstance(decoded(v), dict | list)]
        return ", ".join(fields[:3]) + (", …" if len(fields) > 3 else "") if fields else f"{len(value)} field(s)"
    if isinstance(value, list):
        return f"{len(value)} item{'' if len(value) == 1 else 's'}"
    if identifying(key, value, run):
        prefix = type_of(value, run)
        return f"{prefix}_…" if prefix else f"a {key}"
    if isinstance(value, str):
        text = short(run.general(value))
        # Free text is quoted ("no seats left"), a short value is not (economy, 3 pm).
        return f'"{text}"' if len(text.split()) > 3 or not text else text
    return scalar(value)


def field(key: str, value: Any, run: Run) -> str:
    """``amount: 60``; an id by its type (``payment_id: gift_card_…``) or, without one, by its
    name alone (``reservation_id``): "reservation_id: a reservation_id" says nothing more."""
    value = decoded(value)
    if identifying(key, value, run) and type_of(value, run) is None:
        return key
    return f"{key}: {shown(key, value, run)}"

