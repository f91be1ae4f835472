"""The rows a student search reads, as typed records: each lists once the keys its query returns
(``QUERY``, a file of ``cypher/queries/``), and is made once, where the rows come back from the
store (``from_record``), so the stages read attributes, never a row's keys.

A field that the search adds to the row rather than the query (``share``, ``hands_off``) says so
in its metadata (:data:`DERIVED`); ``tests/search/test_rows.py`` checks that the other fields are
exactly the keys the query's RETURN lists, so the two cannot drift apart.

The records are frozen, with slots: they are built for every candidate of every search.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from kbgraph.core.models import RelationType

__all__ = ["DERIVED", "CandidateFacts", "ChannelHit", "Neighbour", "NodeFacts", "PastFailure", "WorkflowEdge"]

#: Field metadata of a value the search adds to a row (not one of the query's keys).
DERIVED: Final = {"derived": True}


@dataclass(frozen=True, slots=True)
class ChannelHit:
    """One experience a channel found, with the score its query gave it: a map ``{id, score}`` of
    the ``rows`` of each query of :data:`QUERIES` (``search_experience_scan`` returns them as rows).
    The lexical scan and the intent channel make theirs in the search."""

    QUERIES: ClassVar[tuple[str, ...]] = (
        "search_experience_vectors", "search_experience_scan", "search_experience_fulltext",
        "search_step_vectors", "search_step_scan",
    )

    id: str
    score: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ChannelHit:
        return cls(record["id"], record["score"])


@dataclass(frozen=True, slots=True)
class WorkflowEdge:
    """The ABSTRACTION edge from a concrete candidate to its workflow (``workflow`` of
    ``search_candidates_score``)."""

    id: str
    weight: float
    reason: str


@dataclass(frozen=True, slots=True)
class CandidateFacts:
    """The scoring facts of one candidate experience or of a candidate's workflow: one map of
    ``rows`` of ``search_candidates_score`` (see that file for what each value means). ``semantic``
    and ``structural`` are Neo4j cosine scores, ``(1 + cos) / 2``; ``outcomes`` are ``(score of the
    outcome's task against the query, outcome)``."""

    QUERY: ClassVar[str] = "search_candidates_score"

    id: str
    kind: str
    domain: str | None
    scope: str
    task_key: str | None
    operations: tuple[str, ...] | None
    text: str
    success_rate: float
    quality: float
    support: int
    runs: int
    remaining: int
    runs_left: int
    workflow: WorkflowEdge | None
    semantic: float | None
    structural: float | None
    has_steps: bool
    utility: float
    outcomes: tuple[tuple[float, float], ...]
    #: Its way's share of its task (kbgraph.search.task_ways.way_share); 1 for an abstract one.
    share: float = field(default=1.0, metadata=DERIVED)
    #: Its way hands the task to a human (kbgraph.search.handoff).
    hands_off: bool = field(default=False, metadata=DERIVED)

    @classmethod
    def from_record(
        cls, record: Mapping[str, Any], *, share: float = 1.0, hands_off: bool = False,
        semantic: float | None = None, structural: float | None = None,
    ) -> CandidateFacts:
        """The facts of one map of ``rows``. ``semantic`` / ``structural``: the scores a vector
        channel already returned, for the query leaves those out (null); ``structural`` counts only
        for an experience with steps."""
        # Positional, in the fields' order: this runs for every candidate of every search.
        r = record
        operations, workflow, outcomes = r["operations"], r["workflow"], r["outcomes"]
        own_semantic, own_structural, has_steps = r["semantic"], r["structural"], bool(r["has_steps"])
        return cls(
            r["id"], r["kind"], r["domain"], r["scope"], r["task_key"],
            None if operations is None else tuple(operations), str(r["text"]), float(r["success_rate"]),
            float(r["quality"]), int(r["support"]), int(r["runs"]), int(r["remaining"]), int(r["runs_left"]),
            WorkflowEdge(str(workflow["id"]), float(workflow["weight"]), str(workflow["reason"])) if workflow else None,
            own_semantic if own_semantic is not None else semantic,
            own_structural if own_structural is not None or not has_steps else structural,
            has_steps, float(r["utility"]),
            tuple([(float(score), float(outcome)) for score, outcome in outcomes]) if outcomes else (),
            share, hands_off,
        )


@dataclass(frozen=True, slots=True)
class Neighbour:
    """One experience a hop from a seed, with the edge that leads there and the reached node's
    scoring facts: one map of ``rows`` of ``search_neighbours``. ``outgoing``: the edge leaves the
    seed; ``semantic``: the node's Neo4j cosine score against the query."""

    QUERY: ClassVar[str] = "search_neighbours"

    seed: str
    relation: RelationType
    outgoing: bool
    weight: float
    reason: str
    id: str
    kind: str
    domain: str | None
    success_rate: float
    quality: float
    semantic: float | None
    support: int
    runs: int
    scope: str
    utility: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Neighbour:
        r = record  # positional, in the fields' order, as CandidateFacts
        return cls(
            r["seed"], RelationType(r["relation"]), bool(r["outgoing"]), float(r["weight"]), str(r["reason"]),
            r["id"], r["kind"], r["domain"], float(r["success_rate"]), float(r["quality"]), r["semantic"],
            int(r["support"]), int(r["runs"]), r["scope"], float(r["utility"]),
        )


@dataclass(frozen=True, slots=True)
class PastFailure:
    """An experience whose run failed the way the query's last executed step did (the same error
    signature), with the failure mode: whether the fix then went through (``recovered``) and
    whether that run succeeded. One row of ``search_recoveries``."""

    QUERY: ClassVar[str] = "search_recoveries"

    id: str
    failure: str
    description: str
    recovery: str
    recovered: bool
    run_succeeded: bool

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> PastFailure:
        r = record
        return cls(str(r["id"]), str(r["failure"]), str(r["description"]), str(r["recovery"]),
                   bool(r["recovered"]), bool(r["run_succeeded"]))


#: The scoring facts of anything a search may return: a candidate (or its workflow), or a node
#: reached by traversal. The attributes both have are what selection reads.
NodeFacts = CandidateFacts | Neighbour
