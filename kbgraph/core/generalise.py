"""Generalisation: what identifies a person or a record becomes a placeholder, what carries the
task's meaning stays.

- **Replaced**: e-mails → ``{email}``, urls → ``{url}``, ids and record codes (tokens mixing
  letters and digits: ``#W6067464``, ``credit_card_4190576``, ``mia_li_3668``, ``SI5UKW``,
  ``HAT136``; and, given ``ids=``, codes the run's tools took as identifiers although they hold no
  digit: ``HXDUBJ``, see :func:`~kbgraph.core.run_identities.ids_in_trajectory`) → ``{id}``, and the person names a trajectory
  names (``names=``, see :func:`~kbgraph.core.run_identities.names_in_trajectory`) → ``{name}``.
- **Long digit strings** → ``{number}``: five digits or more (zip codes, item, phone, card and
  account numbers), phone numbers (``555-123-4567``, ``+1 (555) 123-4567``) and digit groups
  joined by dashes or spaces with five digits or more (``123-45-6789``, ``19122-1234``,
  ``4111 1111 1111 1111``). ``{number}`` rather than ``{id}``: without the key a tool would have
  given it, a bare digit run may be a zip code, a phone, a card or an item number, and the words
  around it ("zip", "call", "item") already say which; ``{id}`` is kept for what is visibly a
  record code.
- **Kept**: times (``11am``, ``3 pm``, ``10:30``, ``11:30 am``, ``11 am est``), dates
  (``2024-05-20``, ``5/20``, ``05-20-2024``, ``May 20th``, year ranges ``2020-2022``), amounts
  (``$305``, ``305 dollars``, ``12.50``), counts and other short numbers (``3 baggages``, ``two
  certificates``, ranges ``1-2``, a card's last four digits), measurements (``65cm``, ``16GB``,
  ``43-year-old``) and words (cabin classes, cities, product names). "You prefer flights departing
  after 11am and before 3pm" keeps its meaning; two runs of one workflow still read the same where
  they differ only in whose order it was.
- In tool arguments (:func:`describe_step`), values are named after their argument
  (``{order_id}``).
- :func:`generalise_task` also drops identity-only clauses ("You are {id}, …", "You are {name}
  (with ID: {id}). …"), which say who the user is, not what the task is.
- :func:`generalise` returns the placeholders as data (a :class:`~kbgraph.core.general_text.GeneralText`:
  the text and where each placeholder stands, of what kind); :func:`generalise_text` is its words.
  What reads a generalised text again (the identity clause, a leading contact, a rule that opens on
  a placeholder) asks those slots, never the braces: a task that writes "{id}" itself names nobody.

Person names: there is no named-entity model offline, so names come from the run itself
(:mod:`kbgraph.core.run_identities`):
values under keys that name a person, in the arguments and in the tools' results (JSON, or JSON cut
short, read as text), and a self-introduction in the task.

Pure functions, no state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from functools import lru_cache
from typing import Any

from kbgraph.core.general_text import GeneralText

# Bounded like real addresses (a local part of at most 64 characters, labels of at most 63, ten of
# them): tried from every position of "a.a.a.…", an unbounded local part walked to the end of the
# text from each one, O(n²) (a 98,000-character task took 207 s).
_EMAIL = r"\b[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,10}\b"
EMAIL = re.compile(_EMAIL)
URL = re.compile(r"\b(?:https?://|www\.)[^\s)>\]]*[^\s)>\].,;:!?'\"]", re.IGNORECASE)  # no trailing punctuation
# Tokens mixing letters and digits, or '#'-prefixed codes: order ids, reservation codes, card ids.
CODE = re.compile(r"#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b")
MONEY = re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?")
NUMBER = re.compile(r"(?<![\w{])\d[\d,]*(?:\.\d+)?(?![\w}])")
SPACES = re.compile(r"\s+")

# One pass over the text; the first alternative that matches at a position wins, so what must be
# kept (dates, times, amounts) is claimed before the id and number rules can see it.
_VALUES = re.compile(
    rf"(?P<email>{_EMAIL})"
    r"|(?P<url>\b(?:https?://|www\.)[^\s)>\]]*[^\s)>\].,;:!?'\"])"
    r"|(?P<date>\b\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b"
    r"|\b(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])-(?:19|20)\d{2}\b"  # 05-20-2024
    r"|\b(?:19|20)\d{2}[-/](?:0[1-9]|1[0-2])\b(?![-/]\d)|\b(?:0?[1-9]|1[0-2])/(?:19|20)\d{2}\b"  # 2023-05, 01/2023
    r"|(?<![\d-])(?:19|20)\d{2}\s?[-–]\s?(?:19|20)\d{2}(?![\d-]))"  # a year range, 2020-2022
    r"|(?P<time>\b\d{1,2}(?::\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)(?![a-z])|\b\d{1,2}:\d{2}(?::\d{2})?\b)"
    r"|(?P<money>[$€£]\s?\d[\d,]*(?:\.\d+)?)"
    r"|(?P<phone>(?<![\w-])(?:\+\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}\b)"
    r"|(?P<code>#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b)"
    # Digit groups: dashed (an ssn, a zip+4, a range) or a card number in fours; see _replace.
    r"|(?P<grouped>(?<![\w.,/-])\d+(?:-\d+)+(?![\w/-])|\b\d{4}(?: \d{4}){2,3}\b)"
    r"|(?P<long>(?<![\w.])\d{5,}(?![\w.]))",
    re.IGNORECASE,
)
# Letter+digit tokens that are not codes: a number with a short unit or ordinal suffix (a quantity,
# a time or a date: "65cm", "16GB", "20mins", "3rd", "12A"), and a short word with one digit, which
# names a version, a model or a quarter ("Q1", "PS4", "HTML5", "mp3"). Record codes are longer
# ("HAT136", "EUJUY6") or mix more digits in.
_NOT_A_CODE = re.compile(r"^(?:\d+(?:\.\d+)?(?:st|nd|rd|th|am|pm|[a-z]{1,5})|[a-z]{1,4}\d)$", re.IGNORECASE)
# Digit groups with fewer digits than this are ranges or scores ("1-2 days", "10-15"), not numbers
# that identify.
_IDENTIFYING_DIGITS = 5


def braced(kind: str) -> str:
    """How a placeholder is written: ``{id}``, ``{email}``; ``{order_id}`` for a tool's argument."""
    return "{" + kind + "}"


#: Every placeholder :func:`braced` writes into a stored text (its name holds no brace or space): what
#: search leaves out of a stored text's words, since nothing but the stored string is left of it there.
PLACEHOLDER = re.compile(r"\{[^{}\s]*\}")


def _slot(placeholder: Callable[[str], str], kind: str) -> GeneralText:
    return GeneralText.placeholder(placeholder(kind), kind)


_SPACE = GeneralText(" ")


def _replacer(placeholder: Callable[[str], str], text: GeneralText) -> Callable[[re.Match[str]], GeneralText]:
    def replace(match: re.Match[str]) -> GeneralText:
        kind = match.lastgroup
        value = match.group(0)
        if kind in ("date", "time", "money"):
            return text.kept(match)
        if kind == "code":
            return text.kept(match) if _NOT_A_CODE.match(value) else _slot(placeholder, "id")
        if kind == "grouped":
            return _slot(placeholder, "number") if sum(c.isdigit() for c in value) >= _IDENTIFYING_DIGITS else text.kept(match)
        return _slot(placeholder, {"email": "email", "url": "url", "phone": "number", "long": "number"}[kind or "long"])
    return replace


# Six-character record codes named as such ("reservation HXDUBJ", "reservation IDs IFOYYZ and
# NQNU5R", "(confirmation: H8Q05L)"): a code without a digit looks like a shouted word ("REFUND"),
# so only what introduces it gives it away when no tool was called with it.
_RECORD_CODES = re.compile(
    r"\b(?i:reservations?|confirmations?|bookings?|record locators?|pnr)(?:\s+(?i:ids?|numbers?|codes?))?"
    r"\s*(?:(?i:is|are)\s+|[:#(]\s*)?"
    r"(?P<codes>[A-Z0-9]{6}(?:(?:,\s*|\s+)(?:(?:and|or)\s+)?[A-Z0-9]{6})*)\b")
_RECORD_CODE = re.compile(r"\b[A-Z0-9]{6}\b")


def _generalise_values(text: GeneralText, placeholder: Callable[[str], str] = braced) -> GeneralText:
    def record_codes(match: re.Match[str]) -> GeneralText:
        codes = text.cut(match.start("codes"), match.end())
        return GeneralText.joined([text.cut(match.start(), match.start("codes")),
                                   codes.sub(_RECORD_CODE, lambda _: _slot(placeholder, "id"))])

    coded = text.sub(_RECORD_CODES, record_codes)
    return coded.sub(_VALUES, _replacer(placeholder, coded))


@lru_cache(maxsize=256)
def _words_pattern(words: frozenset[str]) -> re.Pattern[str] | None:
    """Whole-word, case-sensitive alternation of ``words``, longest first (so a full name wins over
    its parts); ``None`` when there is nothing to look for. Cached: a run's names and ids are
    reused for each of its steps."""
    parts = sorted({w.strip() for w in words if len(w.strip()) >= 2}, key=lambda w: (-len(w), w))
    if not parts:
        return None
    return re.compile(r"(?<![\w{])(?:" + "|".join(re.escape(p) for p in parts) + r")(?![\w}])")


def generalise_text(text: str, names: Collection[str] = (), ids: Collection[str] = (),
                    placeholder: Callable[[str], str] = braced) -> str:
    """``text`` with what identifies a person or a record as placeholders: the words of
    :func:`generalise` (which see)."""
    return generalise(text, names, ids, placeholder).text


def generalise(text: str, names: Collection[str] = (), ids: Collection[str] = (),
               placeholder: Callable[[str], str] = braced) -> GeneralText:
    """``text`` with what identifies a person or a record as placeholders (module docstring);
    ``names`` are the person names to replace by ``{name}``, ``ids`` values the tools were called
    with as identifiers (``HXDUBJ``: a record code without a digit) to replace by ``{id}`` (both
    whole words, as written). An id the value rules already replace (an e-mail, a phone number)
    is left to them, so it keeps its own placeholder. ``placeholder`` writes each one from its
    kind ("id", "number", "name", "email", "url"): an error quoted in a lesson writes them all
    ``#``, and a recovery's values (:mod:`kbgraph.core.recovery`) only count them: nobody reads
    them back out of the text. The placeholders come back as data too (:class:`GeneralText`'s
    slots): what reads the text afterwards asks them where each one stands."""
    own_ids = frozenset(i for i in ids if _generalise_values(GeneralText(i)).text == i)
    general = GeneralText(text)
    for values, kind in ((frozenset(names), "name"), (own_ids, "id")):
        pattern = _words_pattern(values)
        if pattern is not None:
            general = general.sub(pattern, lambda _, kind=kind: _slot(placeholder, kind))  # type: ignore[misc]
    return _generalise_values(general, placeholder).sub(SPACES, lambda _: _SPACE).stripped()


# "You are {name} (with ID: {id}), you want …", "You are '{id}'. You want …", "You {id} and you …":
# who the user is, not what the task is. The words around the placeholders are read here; the
# placeholders themselves are the generalised text's slots of these kinds.
_IDENTITY_KINDS = frozenset({"id", "name", "email"})
_YOU = re.compile(r"\s*you(?:\s+are)?\s+", re.IGNORECASE)
_QUOTE = re.compile(r"['\"]?")
_AFTER_WHO = re.compile(r"['\"]?\s*(?:\([^)]*\))?\s*(?:and\s+)?", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[,.;:]?\s*(?:and\s+)?", re.IGNORECASE)


def past(optional: re.Pattern[str], text: str, at: int) -> int:
    """Where ``optional`` (a pattern that may match nothing) ends when matched at ``at``."""
    match = optional.match(text, at)
    return at if match is None else match.end()


def _identity_clause_end(general: GeneralText) -> int:
    """Where a leading identity clause ends ("You are", then one or more placeholders of a person
    or a record, each maybe quoted, maybe followed by a parenthesis and "and"), 0 when there is none."""
    text = general.text
    you = _YOU.match(text)
    if you is None:
        return 0
    at, found = you.end(), False
    while (slot := general.slot_at(past(_QUOTE, text, at))) is not None and slot.kind in _IDENTITY_KINDS:
        at, found = past(_AFTER_WHO, text, slot.end), True
    return past(_CLAUSE_END, text, at) if found else 0


def general_task(task: str, names: Collection[str] = (), ids: Collection[str] = ()) -> GeneralText:
    """A task text generalised (:func:`generalise`), without a leading identity clause."""
    general = generalise(task, names, ids)
    end = _identity_clause_end(general)
    if 0 < end < len(general.text):
        return general.cut(end).capitalised()
    return general


def generalise_task(task: str, names: Collection[str] = (), ids: Collection[str] = ()) -> str:
    """The words of :func:`general_task`."""
    return general_task(task, names, ids).text


IDENTIFYING = re.compile(r"(^|_)(id|ids|name|first|last|email|phone|address|zip|postcode|city|street|"
                         r"customer|user|account|card|iban|ssn|password|token|key)($|_)", re.IGNORECASE)


def placeholder_for(name: str, value: Any) -> str:
    """The placeholder an argument's value becomes: named after the argument for ids and codes."""
    if IDENTIFYING.search(name) and not isinstance(value, list | dict | bool):
        return braced(name)
    if isinstance(value, bool):
        return braced("flag")
    if isinstance(value, int | float):
        return braced("number")
    if isinstance(value, str):
        if EMAIL.fullmatch(value):
            return braced("email")
        if URL.match(value):
            return braced("url")
        if CODE.search(value) or NUMBER.search(value):
            return braced(name)
        return generalise_text(value) if len(value) <= 60 else braced(name)
    if isinstance(value, list):
        inner = placeholder_for(name.rstrip("s") or name, value[0]) if value else "…"
        return f"[{inner}, …]" if len(value) > 1 else f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {placeholder_for(k, v)}" for k, v in sorted(value.items())) + "}"
    return braced(name)


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


@lru_cache(maxsize=65536)  # linking names every workflow's actions, again on every ingest
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
