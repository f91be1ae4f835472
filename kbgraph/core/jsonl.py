"""Reads JSON Lines files record by record, naming the file and line of every problem."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kbgraph.core.value_bounds import MAX_NESTING_DEPTH, value_problem

MAX_LINE_BYTES = 16 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024
#: Python converts at most this many digits to an integer (sys.get_int_max_str_digits(): longer
#: ones take quadratic time); json.loads fails past it with a ValueError that says not where.
MAX_INT_DIGITS = 4_300


class LongIntegerError(json.JSONDecodeError):
    """Valid JSON holding an integer too long to read: the message says where (a client can still
    be answered by its request's id, unlike for text that is not JSON)."""


class _LongInteger(ValueError):
    def __init__(self, digits: str):
        super().__init__(digits)
        self.digits = digits


def _parse_int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS:
        raise _LongInteger(digits)
    return int(digits)


def loads(text: str) -> Any:
    """``json.loads(text)``, except that an integer too long for Python to read is a
    json.JSONDecodeError at its position, like any other JSON problem."""
    try:
        return json.loads(text, parse_int=_parse_int)
    except _LongInteger as exc:
        digits = len(exc.digits.lstrip("-"))
        raise LongIntegerError(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS:,} are read)",
                                   text, max(text.find(exc.digits), 0)) from None


def json_problem(exc: json.JSONDecodeError) -> str:
    """What is wrong with one line or argument of JSON, and where: ``invalid JSON at column N:
    reason``, or that it ends too soon (an unclosed object, list or string) rather than "column 1"
    of the line after it."""
    text = exc.doc.rstrip()
    if exc.pos >= len(text):
        return f"invalid JSON: it ends after {len(text)} characters, before the value is complete ({exc.msg})"
    line = f"line {exc.lineno} " if exc.lineno > 1 else ""
    return f"invalid JSON at {line}column {exc.colno}: {exc.msg}"


@dataclass(frozen=True)
class JsonlRecord:
    where: str  # "path:line"
    value: dict[str, Any] | None  # None when the line is not a JSON object
    problem: str | None = None
    line: int = 0  # the line's number in its file (``where`` says it to people)


def read_bounded_line(handle: IO[bytes], limit: int) -> tuple[bytes, int]:
    """One line cut at ``limit + 1`` bytes, and its full length: the rest of an overlong line is
    skipped in bounded chunks, so a huge line without a newline never sits in memory whole.
    (b"", 0) at the end of the stream."""
    raw = handle.readline(limit + 1)
    length = len(raw)
    if length > limit and not raw.endswith(b"\n"):
        while (rest := handle.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
            length += len(rest)
        length += len(rest)
    return raw, length


def _lines(handle: IO[bytes]) -> Iterator[tuple[bytes, int]]:
    while (line := read_bounded_line(handle, MAX_LINE_BYTES))[0]:
        yield line


def read_jsonl(path: Path) -> Iterator[JsonlRecord]:
    """Yields one record per non-blank line. Lines that are not UTF-8, not JSON or not an object,
    too long or nested too deep come back with a ``problem`` instead of a value; reading goes on
    (streaming, memory bounded by MAX_LINE_BYTES)."""
    with open(path, "rb") as handle:
        yield from read_jsonl_stream(handle, str(path))


def read_jsonl_stream(handle: IO[bytes], name: str) -> Iterator[JsonlRecord]:
    """:func:`read_jsonl` over an open binary stream (standard input), lines named ``name:line``."""
    for number, (raw, length) in enumerate(_lines(handle), start=1):
        where = f"{name}:{number}"
        if length > MAX_LINE_BYTES:
            yield JsonlRecord(where, None, f"line is {length:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit", line=number)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield JsonlRecord(where, None, f"not UTF-8 (byte {exc.start + 1} is 0x{raw[exc.start]:02x})", line=number)
            continue
        if not text.strip():
            continue
        try:
            value = loads(text)
        except json.JSONDecodeError as exc:
            yield JsonlRecord(where, None, json_problem(exc), line=number)
            continue
        except RecursionError:
            yield JsonlRecord(where, None, f"nested deeper than {MAX_NESTING_DEPTH} levels", line=number)
            continue
        if not isinstance(value, dict):
            yield JsonlRecord(where, None, f"expected a JSON object, got {type(value).__name__}", line=number)
            continue
        if problem := value_problem(value):
            yield JsonlRecord(where, None, problem, line=number)
            continue
        yield JsonlRecord(where, value, line=number)
