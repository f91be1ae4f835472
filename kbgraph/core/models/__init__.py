"""Typed records of the knowledge graph (docs/design.md §1).

- :mod:`~kbgraph.core.models.experience`: the :class:`Experience` ⟨π, γ, S, C, μ, F, R⟩ of Agent KB
  with its :class:`Step`, :class:`FailureMode` and :class:`Relation` records;
- :mod:`~kbgraph.core.models.concepts`: what reflection learns (BREW) — :class:`Concept`,
  :class:`Insight`, :class:`ConceptInsight`, :class:`MetaConcept` and its :class:`ConceptDocument`;
- :mod:`~kbgraph.core.models.statements`: what an insight or a document's statement says, as a
  :class:`StatementRecord`;
- :mod:`~kbgraph.core.models.trajectory`: a raw run as an agent recorded it, the input format;
- :mod:`~kbgraph.core.models._base`: the limits, field types and strict base they share.

Models are strict: wrong types, unknown fields, NaN/infinite numbers and oversized texts are
rejected with the field's name. Ids are content hashes (see :mod:`kbgraph.core.ids`), so the same
content written twice is the same node.
"""

from __future__ import annotations

from kbgraph.core.models._base import (
    MAX_EMBEDDING_DIM,
    MAX_FAILURE_MODES,
    MAX_NAME_CHARS,
    MAX_OBSERVATION_CHARS,
    MAX_PROBLEM_CHARS,
    MAX_RELATIONS,
    MAX_STEPS,
    MAX_TASK_CHARS,
    MAX_TEXT_CHARS,
    STORED,
    STORED_OBSERVATION_CHARS,
    STORED_OUTCOME_TASK_CHARS,
    Count,
    Difficulty,
    Embedding,
    IdText,
    Kind,
    Name,
    RecoveryKind,
    RelationType,
    Reward,
    Scope,
    ShortText,
    Status,
    Unit,
)
from kbgraph.core.models.concepts import Concept, ConceptDocument, ConceptInsight, Insight, MetaConcept
from kbgraph.core.models.experience import Experience, FailureMode, Relation, Step
from kbgraph.core.models.statements import StatementKind, StatementRecord, stored_record
from kbgraph.core.models.trajectory import RAW_ARGUMENTS, Outcome, Trajectory, TrajectoryStep

__all__ = [
    "MAX_EMBEDDING_DIM", "MAX_FAILURE_MODES", "MAX_NAME_CHARS", "MAX_OBSERVATION_CHARS", "MAX_PROBLEM_CHARS",
    "MAX_RELATIONS", "MAX_STEPS", "MAX_TASK_CHARS", "MAX_TEXT_CHARS", "RAW_ARGUMENTS", "STORED",
    "STORED_OBSERVATION_CHARS", "STORED_OUTCOME_TASK_CHARS",
    "Concept", "ConceptDocument", "ConceptInsight", "Count", "Difficulty", "Embedding", "Experience",
    "FailureMode", "IdText", "Insight", "Kind", "MetaConcept", "Name", "Outcome", "RecoveryKind", "Relation",
    "RelationType", "Reward", "Scope", "ShortText", "StatementKind", "StatementRecord", "Status", "stored_record", "Step", "Trajectory", "TrajectoryStep", "Unit",
]
