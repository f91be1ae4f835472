"""The models' own checks for what an import brings in: keys and properties the reads rebuild.

Search, ``get`` and the skills export rebuild experiences, steps, failure modes and concepts with
the models (:mod:`kbgraph.core.models`). A value the models refuse would be imported as given and
then fail every read of its namespace (an experience id holding ``../`` or a terminal escape
failed each search with "id: String should match pattern"), so an import checks each property
that is a model field with that field's own type and constraints, and each key that is an id with
the models' id type, before anything is written. The ranges of :mod:`kbgraph.transfer._rules`
stay: they cover the properties no model describes, and temporal values are checked there.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Annotated, Any, Final, cast

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from kbgraph.core.models import (
    Concept,
    ConceptDocument,
    Experience,
    FailureMode,
    IdText,
    Insight,
    MetaConcept,
    Step,
    stored_record,
)

# Labels whose nodes the reads turn back into a model, with the models that describe their
# properties (a meta-concept's document sentences are stored as properties of its node).
_MODELS: Final[dict[str, tuple[type[BaseModel], ...]]] = {
    "Experience": (Experience,), "Step": (Step,), "FailureMode": (FailureMode,), "Concept": (Concept,),
    "MetaConcept": (MetaConcept, ConceptDocument), "Insight": (Insight,),
}
# Fields that are not properties of their node: other nodes (steps, relations), vectors (the
# file's "vectors"), a document kept as its sentences, and args_schema, stored as JSON text.
_NOT_PROPERTIES: Final = frozenset({"steps", "failure_modes", "relations", "document", "args_schema", "record",
                                    "embedding", "pg_embedding", "structure_embedding", "context_embedding"})
# What the models themselves are strict about (kbgraph.core.models._base._Strict).
_STRICT: Final = ConfigDict(strict=True, allow_inf_nan=False)
_ID: Final[TypeAdapter[str]] = TypeAdapter(IdText, config=_STRICT)
_STEP_TEXT_KEY: Final = re.compile(r"[0-9a-f]{64}")
_ARGS_SCHEMA: Final[TypeAdapter[dict[str, str]]] = TypeAdapter(dict[str, str], config=_STRICT)


def _field_adapter(info: FieldInfo) -> TypeAdapter[Any]:
    # The field's FieldInfo carries its constraints (pattern, lengths, bounds) as the model has them.
    # Built at run time from the field, so typed as Any (a static checker cannot follow it).
    annotated: Any = cast(Any, Annotated)[info.annotation, info]
    return TypeAdapter(annotated, config=_STRICT)


@cache
def _property_adapters(label: str) -> dict[str, TypeAdapter[Any]]:
    adapters: dict[str, TypeAdapter[Any]] = {}
    for model in _MODELS.get(label, ()):
        for name, info in model.model_fields.items():
            # A field left out of dumps (FailureMode.signature_action) has its rule (_rules.py) alone.
            if name not in _NOT_PROPERTIES and name != "id" and not info.exclude:
                adapters.setdefault(name, _field_adapter(info))
    if label in ("Step", "FailureMode"):  # the experience a step or failure mode belongs to
        adapters["experience_id"] = _ID
    return adapters


def _problems(path: str, adapter: TypeAdapter[Any], value: Any) -> list[str]:
    try:
        adapter.validate_python(value)
    except ValidationError as error:
        # The first problem is enough to fix the line; repr shows terminal escapes and bidi
        # controls instead of obeying them.
        item = error.errors(include_url=False)[0]
        where = ".".join([path, *(str(part) for part in item["loc"])])
        return [f"{where}: {item['input']!r:.80} is refused: {item['msg'].removeprefix('Value error, ')}"]
    return []


def key_problems(label: str, key: str | None, where: str = "key") -> list[str]:
    """A problem when ``key`` is the id of a node the models rebuild and the models refuse it, or
    a step text's key is not a sha256 (what kbgraph.core.ids.text_hash gives)."""
    if label == "StepText":
        return [] if key is not None and _STEP_TEXT_KEY.fullmatch(key) else [
            f"{where}: {key!r:.80} is refused: a step text's key is the sha256 of its text, 64 hex digits"]
    if label not in _MODELS or key is None:
        return []
    return _problems(where, _ID, key)


def model_problems(label: str, key: str | None, properties: dict[str, Any]) -> list[str]:
    """``field: reason`` for the key and each property of a ``label`` node that its model refuses."""
    problems = key_problems(label, key)
    adapters = _property_adapters(label)
    for name, value in properties.items():
        # None is an absent value; a one-key object is a temporal value (checked by _values/_rules).
        if value is None or isinstance(value, dict):
            continue
        if name == "args_schema" and label == "Step":
            problems += _args_schema_problems(value)
        elif name == "record" and label == "FailureMode":
            problems += _record_problems(value)
        elif (adapter := adapters.get(name)) is not None:
            problems += _problems(f"properties.{name}", adapter, value)
    return problems


def _args_schema_problems(value: Any) -> list[str]:
    # Stored as JSON text of {argument: placeholder}; reads parse it (store.experiences).
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None:
        return [f"properties.args_schema: {value!r:.80} is not JSON text of an object of strings"]
    return _problems("properties.args_schema", _ARGS_SCHEMA, parsed)


def _record_problems(value: Any) -> list[str]:
    # A failure mode's record is stored as JSON text of a StatementRecord (store.experiences).
    try:
        stored_record(value if isinstance(value, str) else None)
    except ValidationError as error:
        item = error.errors(include_url=False)[0]
        return [f"properties.record: {value!r:.80} is refused: {item['msg']}"]
    return [] if isinstance(value, str) else [f"properties.record: {value!r:.80} is not JSON text of a record"]
