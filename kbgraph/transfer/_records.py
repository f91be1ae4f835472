"""The records of an export file (header, node, relationship) as pydantic models.

Validating a record checks everything one line can show: known labels and types, values the
format can carry, vectors that decode, and every property kbgraph reads back against its rule
(:mod:`kbgraph.transfer._rules`). What needs the whole file (order, duplicates, counts, ends of
relationships) is :mod:`kbgraph.transfer._check`'s job.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from kbgraph.transfer._format import (FORMAT_NAME, FORMAT_VERSION, INGESTED_KEY, LABELS, READABLE_VERSIONS,
                                      RELATIONSHIP_TYPES)
from kbgraph.transfer._models import key_problems, model_problems
from kbgraph.transfer._rules import NODE_RULES, RELATIONSHIP_RULES, counter_problems, property_problems
from kbgraph.transfer._values import _checked_properties, decode_vector

class ExportCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodes: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    relationships: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)


class ExportHeader(BaseModel):
    """Line 1 of an export file."""

    model_config = ConfigDict(extra="forbid")

    record: Literal["header"] = Field(default="header")
    format: Literal["kbgraph-export"] = Field(default=FORMAT_NAME)
    version: int = Field(default=FORMAT_VERSION)
    namespace: str
    kbgraph_version: str
    embedding_dimension: int | None = Field(default=None, ge=1, le=8192)
    counts: ExportCounts

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value not in READABLE_VERSIONS:
            raise ValueError(f"this kbgraph reads versions {', '.join(map(str, READABLE_VERSIONS))} of the format, "
                             f"the file is version {value}")
        return value


class NodeRef(BaseModel):
    """One end of a relationship: a node by label and key (null for a label without one)."""

    model_config = ConfigDict(extra="forbid")

    label: str
    key: Annotated[str, Field(min_length=1)] | None = None


class NodeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    record: Literal["node"]
    label: str
    key: Annotated[str, Field(min_length=1)] | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    # Each vector as base64 of little-endian float32 (what export writes) or a list of numbers;
    # validated into a list of floats.
    vectors: dict[str, Any] = Field(default_factory=dict)

    @field_validator("label")
    @classmethod
    def _known_label(cls, value: str) -> str:
        if value not in LABELS:
            raise ValueError(f"unknown label {value!r} (known: {', '.join(LABELS)})")
        return value

    @field_validator("properties")
    @classmethod
    def _property_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _checked_properties(value)

    @model_validator(mode="after")
    def _values_kbgraph_can_read(self) -> NodeRecord:
        problems = [f"properties.{p}" for p in property_problems(NODE_RULES.get(self.label, {}), self.properties)]
        if self.label == "Experience":
            problems += [f"properties.{p}" for p in counter_problems(self.properties)]
        problems += model_problems(self.label, self.key, self.properties)
        if self.label == "IngestedRecord" and self.key is not None and not INGESTED_KEY.fullmatch(self.key):
            problems.append(f"key: {self.key!r:.80} is not an ingest marker (trajectory:<id> or experience:<id>)")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @field_validator("vectors")
    @classmethod
    def _vector_values(cls, value: dict[str, Any]) -> dict[str, list[float]]:
        vectors, problems = {}, []
        for name, vector in value.items():
            try:
                vectors[name] = decode_vector(vector)
            except ValueError as error:
                problems.append(f"{name}: {error}")
        if problems:
            raise ValueError("; ".join(problems))
        return vectors


class RelationshipRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    record: Literal["relationship"]
    type: str
    start: NodeRef
    end: NodeRef
    properties: dict[str, Any] = Field(default_factory=dict)

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in RELATIONSHIP_TYPES:
            raise ValueError(f"unknown relationship type {value!r} (known: {', '.join(RELATIONSHIP_TYPES)})")
        return value

    @field_validator("properties")
    @classmethod
    def _property_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _checked_properties(value)

    @model_validator(mode="after")
    def _values_kbgraph_can_read(self) -> RelationshipRecord:
        problems = [f"properties.{p}" for p in property_problems(RELATIONSHIP_RULES.get(self.type, {}), self.properties)]
        # An end whose key the models refuse names the bad id here, not as a node missing from the file.
        problems += key_problems(self.start.label, self.start.key, "start.key")
        problems += key_problems(self.end.label, self.end.key, "end.key")
        if problems:
            raise ValueError("; ".join(problems))
        return self


DataRecord = Annotated[NodeRecord | RelationshipRecord, Field(discriminator="record")]
_DATA_RECORD: Final[TypeAdapter[NodeRecord | RelationshipRecord]] = TypeAdapter(DataRecord)
