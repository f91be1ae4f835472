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


@dataclass(frozen=True)
class JsonlRecord:
    where: str  # "path:line"
    value: dict[str, Any] | None  # None when the line is not a JSON object
    problem: str | None = None


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
            yield JsonlRecord(where, None, f"line is {length:,} bytes, over the {MAX_LINE_BYTES:,}-byte limit")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield JsonlRecord(where, None, f"not UTF-8 (byte {exc.start + 1} is 0x{raw[exc.start]:02x})")
            continue
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            yield JsonlRecord(where, None, f"invalid JSON at column {exc.colno}: {exc.msg}")
            continue
        except RecursionError:
            yield JsonlRecord(where, None, f"nested deeper than {MAX_NESTING_DEPTH} levels")
            continue
        if not isinstance(value, dict):
            yield JsonlRecord(where, None, f"expected a JSON object, got {type(value).__name__}")
            continue
        if problem := value_problem(value):
            yield JsonlRecord(where, None, problem)
            continue
        yield JsonlRecord(where, value)
