"""Stable content-hash ids: the same normalised content always gets the same id."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

_SPACES = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """NFC, collapsed white space, trimmed. Case is kept: 'US' and 'us' can differ in a task."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(payload: Any, prefix: str, length: int = 24) -> str:
    """A short hex digest of a JSON-serialisable payload, prefixed by what it identifies."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"{prefix}_{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:length]}"


def text_hash(text: str) -> str:
    """Full sha256 of a text, for caches keyed by exact content."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
