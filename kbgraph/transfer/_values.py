"""Property values as an export file holds them, and the conversions to and from the database.

Strings, numbers, booleans and lists of them are plain JSON; a temporal value is a one-key object
such as ``{"datetime": "…"}`` in the text Cypher's ``toString`` writes; a vector is base64 of its
little-endian float32 bytes. Export encodes what the database returns (:func:`_encoded_properties`),
the records check what a file brings (:func:`_checked_properties`), and import splits it back into
what its queries set (:func:`_value_rows`).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

import numpy as np

from kbgraph.core.value_bounds import vector_problem
from kbgraph.store.gateway import Row
from kbgraph.transfer._format import PLAIN_TYPES, TEMPORAL_TYPES, TransferError

_DATE = r"(?P<year>[+-]?\d{4,9})-(?P<month>\d{2})-(?P<day>\d{2})"
_TIME = r"(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.\d{1,9})?)?"
_OFFSET = r"(?:Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)"
_ZONE = r"\[[A-Za-z][A-Za-z0-9_/+\-]*\]"
# The texts toString writes for each temporal type (what an export holds); checked before writing
# so a bad one is refused with its line, not halfway through an import.
TEMPORAL_FORMATS: Final[dict[str, re.Pattern[str]]] = {
    "datetime": re.compile(rf"{_DATE}T{_TIME}(?:{_OFFSET}(?:{_ZONE})?|{_ZONE})"),
    "localdatetime": re.compile(rf"{_DATE}T{_TIME}"),
    "date": re.compile(_DATE),
    "time": re.compile(rf"{_TIME}{_OFFSET}"),
    "localtime": re.compile(_TIME),
    "duration": re.compile(r"P(?=.*\d)(?:-?\d+[YMWD])*(?:T(?:-?\d+(?:\.\d+)?[HMS])+)?"),
}
_EXAMPLES: Final = {
    "datetime": "2026-01-31T12:00:00.5Z", "localdatetime": "2026-01-31T12:00:00", "date": "2026-01-31",
    "time": "12:00:00Z", "localtime": "12:00:00", "duration": "P1DT2H",
}


def encode_vector(values: list[float]) -> str:
    """A float32 vector as base64 of its little-endian bytes: exact, and 4 bytes a value."""
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(value: Any) -> list[float]:
    """What :func:`encode_vector` wrote (or a list of numbers) as floats, each exactly a float32."""
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not base64 (of little-endian float32 values)") from None
        if not raw or len(raw) % 4:
            raise ValueError(f"{len(raw)} bytes of base64: not a whole number of float32 values")
        array_ = np.frombuffer(raw, dtype="<f4")
    elif isinstance(value, list) and value and all(_scalar_kind(v) in ("integer", "float") for v in value):
        try:
            # A value past float32 becomes inf, which vector_problem refuses below by line and
            # field; numpy's warning about it would only print beside that error.
            with np.errstate(over="ignore"):
                array_ = np.asarray(value, dtype=np.float64).astype(np.float32)
        except OverflowError:  # an integer past the largest float
            raise ValueError("holds a value too large for a float") from None
    else:
        raise ValueError("a vector is base64 of little-endian float32 values, or a non-empty list of numbers")
    values: list[float] = array_.astype(np.float64).tolist()
    if problem := vector_problem(values):
        raise ValueError(problem)
    return values


def _checked_properties(properties: dict[str, Any]) -> dict[str, Any]:
    problems = []
    for name, value in properties.items():
        if not name or name == "kb":
            problems.append(f"{name!r}: not a property an import may set")
            continue
        problem = _value_problem(value)
        if problem:
            problems.append(f"{name}: {problem}")
    if problems:
        raise ValueError("; ".join(problems))
    return properties


def _scalar_kind(value: Any) -> str | None:
    # bool before int: in Python a bool is an int, in Neo4j it is not.
    for kind, types in (("boolean", bool), ("integer", int), ("float", float), ("string", str)):
        if isinstance(value, types):
            return kind
    return None


def _value_problem(value: Any) -> str | None:
    if _scalar_kind(value) is not None:
        return None
    if isinstance(value, list):
        kinds = {_scalar_kind(item) for item in value}
        if None in kinds:
            return "a list may hold strings, numbers or booleans (or be a typed value's list)"
        if len(kinds) > 1:
            return f"a list holds one type of value, this one mixes {', '.join(sorted(str(k) for k in kinds))}"
        return None
    if isinstance(value, dict):
        if len(value) != 1 or next(iter(value)) not in TEMPORAL_FORMATS:
            return f"an object is a typed value with one key out of {', '.join(TEMPORAL_FORMATS)}"
        tag, text = next(iter(value.items()))
        texts = text if isinstance(text, list) else [text]
        if isinstance(text, list) and not text:
            return f"{tag}: an empty list (write [] for an empty list)"
        for item in texts:
            if not isinstance(item, str) or not _temporal_text_ok(tag, item):
                return f"{tag}: {item!r} is not a {tag} as an export writes it (like {_EXAMPLES[tag]})"
        return None
    return f"{type(value).__name__} is not a property value"


def _temporal_text_ok(tag: str, text: str) -> bool:
    match = TEMPORAL_FORMATS[tag].fullmatch(text)
    if match is None:
        return False
    parts = {k: int(v) for k, v in match.groupdict().items() if v is not None}
    limits = {"month": (1, 12), "day": (1, 31), "hour": (0, 23), "minute": (0, 59), "second": (0, 59)}
    return all(low <= parts[name] <= high for name, (low, high) in limits.items() if name in parts)


def _base_type(value_type: str) -> str:
    """``LIST<STRING NOT NULL> NOT NULL`` -> ``LIST<STRING>``."""
    return value_type.replace(" NOT NULL", "")


def _encoded_properties(
    encoded: list[Row], where: str, skip: str | None = None, vectors: tuple[str, ...] = (),
    derived: tuple[str, ...] = (),
) -> tuple[dict[str, Any], dict[str, str]]:
    properties: dict[str, Any] = {}
    vector_values: dict[str, str] = {}
    for item in sorted(encoded, key=lambda p: str(p["key"])):
        name, value_type, value = item["key"], _base_type(item["type"]), item["value"]
        if name == skip or name in derived:
            continue
        if name in vectors and value_type == "LIST<FLOAT>":
            vector_values[name] = encode_vector(value)
        elif value_type in PLAIN_TYPES or value_type == "LIST<NOTHING>" or (
                value_type.startswith("LIST<") and value_type[5:-1] in PLAIN_TYPES):
            properties[name] = value
        elif value_type in TEMPORAL_TYPES:
            properties[name] = {TEMPORAL_TYPES[value_type]: value}
        elif value_type.startswith("LIST<") and value_type[5:-1] in TEMPORAL_TYPES:
            properties[name] = {TEMPORAL_TYPES[value_type[5:-1]]: value}
        else:
            raise TransferError(f"{where}: property {name!r} holds a {value_type}, which the export format does not "
                                "carry (strings, numbers, booleans, temporal values and lists of them). Nothing was exported")
    return properties, vector_values


def _value_rows(properties: dict[str, Any]) -> tuple[dict[str, Any], list[Row]]:
    """Plain properties, and the temporal ones as {key, type, value} for import_*_values."""
    plain: dict[str, Any] = {}
    temporal: list[Row] = []
    for name, value in properties.items():
        if isinstance(value, dict):
            tag, text = next(iter(value.items()))
            temporal.append({"key": name, "type": f"{tag}[]" if isinstance(text, list) else tag, "value": text})
        else:
            plain[name] = value
    return plain, temporal
