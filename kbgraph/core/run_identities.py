"""What in a run identifies a person or a record, read from the run itself: the person names it
names (:func:`names_in_trajectory`) and the values its tools took as identifiers
(:func:`ids_in_trajectory`). Generalisation (:mod:`kbgraph.core.generalise`) turns them into
``{name}`` and ``{id}``. There is no named-entity model offline: names come from values under keys
that name a person, in the arguments and in the tools' results (JSON, or JSON cut short, read as
text), and from a self-introduction in the task.

Pure functions, no state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbgraph.core.models import Trajectory

__all__ = ["ids_in_trajectory", "names_in_trajectory"]

# --- Person names ---------------------------------------------------------------------------------

# One word of a person's name as written: "Sophia", "Li", "Al-Hassan", "O'Brien", "McDonald",
# "Mei-Lin", "Joon-ho". All-caps words ("LA", "NOT") are not names.
_NAME_WORD = r"[A-Z][a-z]*(?:['’]?[A-Z])?[a-z]+(?:-[A-Za-z][a-z]+)*"
# Lower-case particles inside a full name ("Ahmad Razali bin Mohd Yusof", "Ludwig van Beethoven").
_PARTICLE = r"(?:bin|binti|ibn|van|von|der|den|de|da|del|della|di|du|la|le|al|el|dos|das)"
_NEXT_NAME_WORD = rf"(?:\s+(?:{_PARTICLE}\s+)*{_NAME_WORD})"
_NAME_SHAPE = re.compile(rf"^{_NAME_WORD}{_NEXT_NAME_WORD}{{0,4}}$")
# A self-introduction: "You are Sophia Silva", "My name is …", "I'm …", "Your character: Dmitri
# Volkov", "Your character is Kenji Tanaka", "- Name: Mei-Lin Chen", "Your full name: Fatima
# Al-Hassan". Two words at least: "You are French by birth" is no name.
_INTRODUCTION = re.compile(
    r"(?:\b(?i:you are|you're|my name is|your name is|i am|i'm|this is|your character is)"
    r"|\b(?i:full name|your name|my name|your character)\s*:"
    r"|(?:^|[-*•|\n])[ \t]*(?i:name)[ \t]*:)"  # not \s*: from each of n newlines it ran over the rest
    rf"[\s*_]*({_NAME_WORD}{_NEXT_NAME_WORD}{{1,3}})\b"
)
# "Your character is a power plant worker named Marcus": "named" about the user gives a name,
# one word being enough (unlike "a forum named Cyberpunk", which is not about the user).
_NAMED_CHARACTER = re.compile(
    rf"\b(?i:your character is|you are)\b[^.\n]{{0,80}}?\bnamed\s+({_NAME_WORD}{_NEXT_NAME_WORD}{{0,3}})\b")
# Keys whose value is a person's name, or a part of one, wherever they stand.
_PERSON_NAME_KEY = re.compile(
    r"^(?:first|last|full|middle|given|family|sur|customer|passenger|person|contact|card_?holder|"
    r"account_?holder|holder|travell?er|guest|recipient|beneficiary|patient|employee)_?name$",
    re.IGNORECASE)
_FIRST_NAME_KEYS = ("first_name", "firstname", "given_name")
_LAST_NAME_KEYS = ("last_name", "lastname", "family_name", "surname")
# A plain "name" is a person's only in a person's record: beside a person's other fields, or under a
# key that holds people. {"name": "Electric Kettle", "product_id": …} is a product's; an address
# alone does not make a person (a shop has one).
_PERSON_FIELDS = frozenset({"email", "phone", "phone_number", "dob", "date_of_birth", "birthday", "birth_date",
                            "user_id", "customer_id", "gender", "membership", "ssn"})
_PERSON_CONTAINER = re.compile(
    r"^(?:saved_)?(?:passengers?|users?|customers?|contacts?|travell?ers?|guests?|members?|companions?|"
    r"beneficiar(?:y|ies)|persons?|people|(?:card_?|account_?)?holders?|owners?|patients?|employees?)$",
    re.IGNORECASE)
# Words that are written like names but are not: a part "May" must not eat "May 20".
_NOT_NAMES = frozenset({
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"})
# For results that are not JSON (cut at 1,500 characters): read them object by object, as text.
_BRACKETS = re.compile(r"[{}\[\]]")
_JSON_STRING_FIELD = re.compile(r'"(\w+)"\s*:\s*"([^"\\]{1,80})"')
_JSON_KEY = re.compile(r'"(\w+)"\s*:')
_JSON_KEY_AT_END = re.compile(r'"(\w+)"\s*:\s*$')


def _is_person_record(keys: Collection[str], container: str) -> bool:
    return bool(_PERSON_FIELDS & {k.lower() for k in keys}) or bool(_PERSON_CONTAINER.match(container))


def _first_of(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((v for k, v in record.items() if str(k).lower() in keys), None)


def _names_in_value(value: Any, container: str = "") -> Iterator[str]:
    """Person names in a JSON-like value: under name keys (:data:`_PERSON_NAME_KEY`), a plain
    ``name`` in a person's record, and first + last name together as the full name."""
    if isinstance(value, list):
        for inner in value:
            yield from _names_in_value(inner, container)
    elif isinstance(value, dict):
        first, last = _first_of(value, _FIRST_NAME_KEYS), _first_of(value, _LAST_NAME_KEYS)
        if isinstance(first, str) and isinstance(last, str):
            yield f"{first} {last}"
        person = _is_person_record([str(k) for k in value], container)
        for key, inner in value.items():
            if isinstance(inner, str) and (_PERSON_NAME_KEY.match(str(key)) or person and str(key).lower() == "name"):
                yield inner
            else:
                yield from _names_in_value(inner, str(key))


def _names_in_result(text: str) -> Iterator[str]:
    """Person names in a tool's result: parsed when it is JSON, read as text when it is not (plain
    text, JSON cut short). Never raises."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        yield from _names_in_json_text(text)
    else:
        yield from _names_in_value(parsed)


def _names_in_json_text(text: str) -> Iterator[str]:
    """Each object's text between brackets read as a record of its string fields, under the key
    just before it: '{"name": {"first_name": "Mia", "last_name": "Li"}, "saved_passengers":
    [{"first_name": "Ra' still gives Mia Li."""
    container = ""
    for fragment in _BRACKETS.split(text):
        record: dict[str, Any] = {key: None for key in _JSON_KEY.findall(fragment)}
        record.update(_JSON_STRING_FIELD.findall(fragment))
        yield from _names_in_value(record, container)
        opening = _JSON_KEY_AT_END.search(fragment)
        if opening:
            container = opening.group(1)


def _name_and_parts(name: str) -> set[str]:
    """A full name and the words it is made of (hyphenated halves of three letters or more too):
    "Fatima Al-Hassan" is also written "Fatima" or "Al-Hassan"."""
    words = [w for w in name.split() if w[0].isupper()]
    halves = {half for w in words if "-" in w for half in w.split("-") if len(half) >= 3 and half[0].isupper()}
    parts = set(words) | halves
    return ({name} | {p for p in parts if len(p) >= 2}) - _NOT_NAMES


def names_in_trajectory(trajectory: Trajectory) -> frozenset[str]:
    """The person names a trajectory names: values of name arguments (``first_name``,
    ``last_name``, ``customer_name``, a ``name`` beside a person's e-mail …, nested anywhere, as
    in ``passengers[].first_name``), the same in the tools' results (JSON, or text that is not:
    a result cut mid-JSON still gives its names, plain text gives none), and a self-introduction
    in the task ("You are Sophia Silva", "My name is …", "Name: Mei-Lin Chen"). Full names and
    their parts; only words written as names count (capitalised, not all-caps, not a month)."""
    found: list[str] = []
    for step in trajectory.steps:
        found.extend(_names_in_value(step.arguments))
        for text in (step.observation, step.error):
            if text:
                found.extend(_names_in_result(text))
    found.extend(_INTRODUCTION.findall(trajectory.task))
    found.extend(_NAMED_CHARACTER.findall(trajectory.task))
    names: set[str] = set()
    for name in found:
        name = " ".join(str(name).split())
        if _NAME_SHAPE.match(name):
            names.update(_name_and_parts(name))
    return frozenset(names)

# Arguments that identify a person or a record: their values never survive generalisation.


# Arguments named as identifiers (``reservation_id``, ``payment_method_id``, ``promo_code``,
# ``email``, ``phone``, ``zip``): their values are ids wherever the run's texts quote them. Not
# ``card_type`` ("EcoCard"), ``city`` ("Denver") or a tool's name, which are words of the task.
_ID_KEY = re.compile(r"(?:^|_)(?:ids?|codes?|numbers?|no|key|token|email|phone|zip|postcode|iban|ssn|user|customer|"
                     r"account|card|password)$", re.IGNORECASE)


def ids_in_trajectory(trajectory: Trajectory) -> frozenset[str]:
    """Values the run's tools were called with as identifiers (arguments named as one,
    :data:`_ID_KEY`, nested anywhere): record codes without a digit (``HXDUBJ``) look like words,
    and only their use as an id gives them away."""
    found: set[str] = set()

    def visit(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for inner_key, inner in value.items():
                visit(inner, str(inner_key))
        elif isinstance(value, list):
            for inner in value:
                visit(inner, key)
        elif isinstance(value, str) and _ID_KEY.search(key) and len(value) >= 4:
            found.add(value.strip())

    for step in trajectory.steps:
        visit(step.arguments, "")
    return frozenset(v for v in found if v and " " not in v)
