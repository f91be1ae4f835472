"""The usable part of a JSON object a model did not finish: every complete value, closed off.

A model that runs out of tokens stops mid-string (``{"steps": [{"action": "a"}, {"action": "b``);
one that chats puts text before or after the object. :func:`usable_json_object` keeps what is
certain — the first object from its opening brace, cut after the last value that was written to
its end — and closes the brackets still open: ``{"steps": [{"action": "a"}]}``. A value cut short
(a string, a number whose last digit may be missing) is dropped, never completed, so nothing in
the result is text the model did not write. Whether what is left is a usable answer is for the
caller's schema to say.
"""

from __future__ import annotations

import json
import re

_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_CLOSER = {"{": "}", "[": "]"}
_VALUE_STATES = ("value", "value_or_end")


def usable_json_object(text: str) -> str | None:
    """The first JSON object in ``text``, complete, or cut after its last complete value and
    closed; None when no value inside it was complete (not even an empty object can be made)."""
    start = text.find("{")
    if start < 0:
        return None
    # One entry per open container: its opening bracket, what may come next in it, and whether it
    # is an element of an array. object: key_or_end → colon → value → comma_or_end → key → …;
    # array: value_or_end → comma_or_end → value → …
    open_: list[list[str]] = []
    in_array: list[bool] = []
    best: str | None = None
    i, n = start, len(text)

    def cut_here(end: int) -> str | None:
        # An element of a list is kept whole or not at all: a half-written step is no step.
        if any(in_array):
            return best
        return text[start:end] + "".join(_CLOSER[bracket] for bracket, _ in reversed(open_))

    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
            continue
        state = open_[-1][1] if open_ else "value"
        if char in "{[":
            if state not in _VALUE_STATES:
                break
            in_array.append(bool(open_) and open_[-1][0] == "[")
            open_.append([char, "key_or_end" if char == "{" else "value_or_end"])
            i += 1
            best = cut_here(i)  # an empty container is a complete value
            continue
        if char in "}]":
            bracket, state = open_[-1] if open_ else ("", "")
            if not bracket or _CLOSER[bracket] != char or state not in ("key_or_end", "value_or_end", "comma_or_end"):
                break
            open_.pop()
            in_array.pop()
            i += 1
        elif char == ",":
            if state != "comma_or_end":
                break
            open_[-1][1] = "key" if open_[-1][0] == "{" else "value"
            i += 1
            continue
        elif char == ":":
            if state != "colon":
                break
            open_[-1][1] = "value"
            i += 1
            continue
        elif char == '"':
            end = _string_end(text, i)
            if end is None:
                break  # cut off inside the string
            i = end
            if state in ("key_or_end", "key"):
                open_[-1][1] = "colon"
                continue
            if state not in _VALUE_STATES:
                break
        else:
            match = _SCALAR.match(text, i)
            if match is None or match.end() == n or state not in _VALUE_STATES:
                break  # not JSON, or a number/literal that may have been cut short
            i = match.end()
        # A value ended at i.
        if not open_:
            return text[start:i]  # the whole object: anything after it is not ours
        open_[-1][1] = "comma_or_end"
        best = cut_here(i)
    return best


def _string_end(text: str, quote: int) -> int | None:
    """The index after the string opening at ``quote``, or None when the text ends inside it."""
    i = quote + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            try:
                json.loads(text[quote : i + 1])
            except json.JSONDecodeError:
                return None  # a bad escape or a raw control character: not a string we can keep
            return i + 1
        i += 1
    return None
