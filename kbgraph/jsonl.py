"""Reads JSON Lines files record by record, naming the file and line of every problem."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class JsonlRecord:
    where: str  # "path:line"
    value: dict[str, Any] | None  # None when the line is not a JSON object
    problem: str | None = None


def read_jsonl(path: Path) -> Iterator[JsonlRecord]:
    """Yields one record per non-blank line. Lines that are not UTF-8, not JSON or not an object
    come back with a ``problem`` instead of a value; reading goes on (streaming, constant memory)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            if len(raw) > MAX_LINE_BYTES:
                yield JsonlRecord(where, None, f"line is {len(raw):,} bytes, over the {MAX_LINE_BYTES:,}-byte limit")
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
            if not isinstance(value, dict):
                yield JsonlRecord(where, None, f"expected a JSON object, got {type(value).__name__}")
                continue
            yield JsonlRecord(where, value)
