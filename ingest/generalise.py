"""Generalisation: concrete values become placeholders, so two runs of the same workflow read the same.

``#W6067464`` → ``{order_id}`` (named after the argument when known), ``jane@x.com`` → ``{email}``,
``https://…`` → ``{url}``, ``42.5`` → ``{number}``, ``credit_card_4190576`` → ``{id}``.
Pure functions, no state.
"""

from __future__ import annotations

import re
from typing import Any

EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
URL = re.compile(r"\b(?:https?://|www\.)[^\s)>\]]*[^\s)>\].,;:!?'\"]", re.IGNORECASE)  # no trailing punctuation
# Tokens mixing letters and digits, or '#'-prefixed codes: order ids, reservation codes, card ids.
CODE = re.compile(r"#\w+|\b(?=[A-Za-z_]*\d)(?=\w*[A-Za-z])\w*[_\d]\w*\b")
MONEY = re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?")
NUMBER = re.compile(r"(?<![\w{])\d[\d,]*(?:\.\d+)?(?![\w}])")
SPACES = re.compile(r"\s+")


def generalise_text(text: str) -> str:
    """Replaces emails, urls, id-like codes, amounts and numbers by placeholders."""
    text = EMAIL.sub("{email}", text)
    text = URL.sub("{url}", text)
    text = MONEY.sub("{amount}", text)
    text = CODE.sub("{id}", text)
    text = NUMBER.sub("{number}", text)
    return SPACES.sub(" ", text).strip()


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
