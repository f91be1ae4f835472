"""Generalisation: what identifies a person or a record becomes a placeholder, what carries the
task's meaning stays.

- **Replaced**: e-mails → ``{email}``, urls → ``{url}``, ids and record codes (tokens mixing
  letters and digits: ``#W6067464``, ``credit_card_4190576``, ``mia_li_3668``, ``SI5UKW``,
  ``HAT136``) → ``{id}``, long digit runs and phone numbers (zip codes, item and phone numbers:
  five digits or more) → ``{number}``, and the person names a trajectory names (``names=``, see
  :func:`names_in_trajectory`) → ``{name}``. In tool arguments, values are named after their
  argument (``{order_id}``).
- **Kept**: times (``11am``, ``3 pm``, ``10:30``), dates (``2024-05-20``, ``5/20``, ``May 20th``),
  amounts (``$305``, ``12.50``), counts and other short numbers (``3 baggages``), measurements
  (``65cm``, ``16GB``) and words (cabin classes, cities, product names). "You prefer flights
  departing after 11am and before 3pm" keeps its meaning; two runs of one workflow still read the
  same where they differ only in whose order it was.
- :func:`generalise_task` also drops identity-only clauses ("You are {id}, …", "You are {name}
  (with ID: {id}). …"), which say who the user is, not what the task is.

Pure functions, no state.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbgraph.models import Trajectory

EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
URL = re.compile(r"\b(?:https?://|www\.)[^\s)>\]]*[^\s)>\].,;:!?'\"]", re.IGNORECASE)  # no trailing punctuation
# Tokens mixing letters and digits, or '#'-prefixed codes: order ids, reservation codes, card ids.
CODE = re.compile(r"#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b")
MONEY = re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?")
NUMBER = re.compile(r"(?<![\w{])\d[\d,]*(?:\.\d+)?(?![\w}])")
SPACES = re.compile(r"\s+")

# One pass over the text; the first alternative that matches at a position wins, so what must be
# kept (dates, times, amounts) is claimed before the id and number rules can see it.
_VALUES = re.compile(
    r"(?P<email>\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b)"
    r"|(?P<url>\b(?:https?://|www\.)[^\s)>\]]*[^\s)>\].,;:!?'\"])"
    r"|(?P<date>\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b)"
    r"|(?P<time>\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)(?![a-z])|\b\d{1,2}:\d{2}(?::\d{2})?\b)"
    r"|(?P<money>[$€£]\s?\d[\d,]*(?:\.\d+)?)"
    r"|(?P<phone>(?<![\w-])\+?\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b)"
    r"|(?P<code>#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b)"
    r"|(?P<long>(?<![\w.])\d{5,}(?![\w.]))",
    re.IGNORECASE,
)
# A number with a short unit or ordinal suffix is a quantity, a time or a date, not a code.
_MEASURE = re.compile(r"^\d+(?:\.\d+)?(?:st|nd|rd|th|am|pm|[a-z]{1,3})$", re.IGNORECASE)


def _replace(match: re.Match[str]) -> str:
    kind = match.lastgroup
    value = match.group(0)
    if kind in ("date", "time", "money"):
        return value
    if kind == "code":
        return value if _MEASURE.match(value) else "{id}"
    return {"email": "{email}", "url": "{url}", "phone": "{number}", "long": "{number}"}[kind or "long"]


def _name_pattern(names: Collection[str]) -> re.Pattern[str] | None:
    parts = sorted({n.strip() for n in names if len(n.strip()) >= 2}, key=lambda n: (-len(n), n))
    if not parts:
        return None
    return re.compile(r"(?<![\w{])(?:" + "|".join(re.escape(p) for p in parts) + r")(?![\w}])")


def generalise_text(text: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str:
    """``text`` with what identifies a person or a record as placeholders (module docstring);
    ``names`` are the person names to replace by ``{name}``, ``ids`` values the tools were called
    with as identifiers (``HXDUBJ``: a record code without a digit) to replace by ``{id}`` (both
    whole words, as written)."""
    for values, placeholder in ((names, "{name}"), (ids, "{id}")):
        pattern = _name_pattern(values)
        if pattern is not None:
            text = pattern.sub(placeholder, text)
    return SPACES.sub(" ", _VALUES.sub(_replace, text)).strip()


# "You are {name} (with ID: {id}), you want …", "You are '{id}'. You want …", "You {id} and you …":
# who the user is, not what the task is.
_IDENTITY_CLAUSE = re.compile(
    r"^\s*you(?:\s+are)?\s+(?:['\"]?\{(?:id|name|email)\}['\"]?\s*(?:\([^)]*\))?\s*(?:and\s+)?)+[,.;:]?\s*"
    r"(?:and\s+)?",
    re.IGNORECASE,
)


def generalise_task(task: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str:
    """A task text generalised (:func:`generalise_text`), without a leading identity clause."""
    text = generalise_text(task, names, ids)
    stripped = _IDENTITY_CLAUSE.sub("", text, count=1)
    if stripped != text and stripped:
        return stripped[0].upper() + stripped[1:]
    return text


_NAME_KEY = re.compile(r"^(?:first|last|full|middle|given|family|sur)_?name$", re.IGNORECASE)
_NAME_IN_JSON = re.compile(r'"((?:first|last|full|middle|given|family|sur)_?name)"\s*:\s*"([^"]{2,60})"', re.IGNORECASE)
_NAME_WORDS = re.compile(r"^[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+){0,3}$")
_INTRODUCTION = re.compile(
    r"\b(?i:you are|my name is|i am|i'm|this is)\s+([A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+){1,2})\b")


_FULL_NAME_IN_JSON = re.compile(r'"first_?name"\s*:\s*"([^"]{2,40})"\s*,\s*"last_?name"\s*:\s*"([^"]{2,40})"',
                                re.IGNORECASE)


def _values_named(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        first = next((v for k, v in value.items() if str(k).lower() in ("first_name", "firstname")), None)
        last = next((v for k, v in value.items() if str(k).lower() in ("last_name", "lastname")), None)
        if isinstance(first, str) and isinstance(last, str):
            yield f"{first} {last}"
        for key, inner in value.items():
            if isinstance(inner, str) and _NAME_KEY.match(str(key)):
                yield inner
            else:
                yield from _values_named(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _values_named(inner)


def names_in_trajectory(trajectory: Trajectory) -> frozenset[str]:
    """The person names a trajectory names: values of name arguments (``first_name``,
    ``last_name``, …, nested anywhere), the same keys in tool results (read as text, so a result
    cut mid-JSON still gives its names), and a self-introduction in the task ("You are Sophia
    Silva", "my name is …"). Full names and their parts; only capitalised words count."""
    found: set[str] = set()
    for step in trajectory.steps:
        found.update(_values_named(step.arguments))
        for text in (step.observation, step.error):
            if text:
                found.update(value for _, value in _NAME_IN_JSON.findall(text))
                found.update(f"{first} {last}" for first, last in _FULL_NAME_IN_JSON.findall(text))
    found.update(_INTRODUCTION.findall(trajectory.task))
    names: set[str] = set()
    for name in found:
        name = " ".join(name.split())
        if _NAME_WORDS.match(name):
            names.add(name)
            names.update(part for part in name.split() if len(part) >= 2)
    return frozenset(names)


# Arguments that identify a person or a record: their values never survive generalisation.
IDENTIFYING = re.compile(r"(^|_)(id|ids|name|first|last|email|phone|address|zip|postcode|city|street|"
                         r"customer|user|account|card|iban|ssn|password|token|key)($|_)", re.IGNORECASE)


def placeholder_for(name: str, value: Any) -> str:
    """The placeholder an argument's value becomes: named after the argument for ids and codes."""
    if IDENTIFYING.search(name) and not isinstance(value, list | dict | bool):
        return "{" + name + "}"
    if isinstance(value, bool):
        return "{flag}"
    if isinstance(value, int | float):
        return "{number}"
    if isinstance(value, str):
        if EMAIL.fullmatch(value):
            return "{email}"
        if URL.match(value):
            return "{url}"
        if CODE.search(value) or NUMBER.search(value):
            return "{" + name + "}"
        return generalise_text(value) if len(value) <= 60 else "{" + name + "}"
    if isinstance(value, list):
        inner = placeholder_for(name.rstrip("s") or name, value[0]) if value else "…"
        return f"[{inner}, …]" if len(value) > 1 else f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {placeholder_for(k, v)}" for k, v in sorted(value.items())) + "}"
    return "{" + name + "}"


def type_name(value: Any) -> str:
    """A JSON-ish type name for an argument's schema."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return f"list[{type_name(value[0])}]" if value else "list"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else type(value).__name__


def humanise_action(action: str) -> str:
    """``return_delivered_order_items`` → ``return delivered order items``."""
    words = re.sub(r"([a-z])([A-Z])", r"\1 \2", action).replace("_", " ").replace("-", " ").replace(".", " ")
    return SPACES.sub(" ", words).strip().lower()


def describe_step(action: str, arguments: dict[str, Any]) -> str:
    """A generalised, readable description of a tool call."""
    if not arguments:
        return humanise_action(action)
    args = ", ".join(f"{name}={placeholder_for(name, value)}" for name, value in sorted(arguments.items()))
    return f"{humanise_action(action)} ({args})"


def ids_in_trajectory(trajectory: Trajectory) -> frozenset[str]:
    """Values the run's tools were called with as identifiers (arguments whose name identifies a
    record, :data:`IDENTIFYING`, other than person names): record codes without a digit
    (``HXDUBJ``) look like words, and only their use as an id gives them away."""
    found: set[str] = set()

    def visit(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for inner_key, inner in value.items():
                visit(inner, str(inner_key))
        elif isinstance(value, list):
            for inner in value:
                visit(inner, key)
        elif isinstance(value, str) and IDENTIFYING.search(key) and not _NAME_KEY.match(key) and len(value) >= 4:
            found.add(value.strip())

    for step in trajectory.steps:
        visit(step.arguments, "")
    return frozenset(v for v in found if v and " " not in v)
