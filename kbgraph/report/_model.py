"""What a report holds: plain data (pydantic models), built by :mod:`kbgraph.report._summarise` and
drawn by :mod:`kbgraph.report._html`, so each side can be tested without the other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from kbgraph.kb import KbStats

Row = dict[str, Any]


class DomainSummary(BaseModel):
    """The experiences of one domain (every status) and their mean success rate and quality."""

    name: str
    experiences: int
    active: int
    concrete: int
    abstract: int
    mean_success_rate: float
    mean_quality: float


class DomainRelation(BaseModel):
    """Experience relations from one domain to another (or within one), by type."""

    source: str
    target: str
    by_type: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.by_type.values())


class MetaConceptSummary(BaseModel):
    id: str
    name: str
    version: int | None = Field(default=None)
    concepts: int
    experiences: int
    insights: int
    excerpt: str
    truncated: bool = Field(default=False)


class MapPoint(BaseModel):
    """One point of the concept map: a concept (or, in the fallback, an experience)."""

    id: str
    label: str
    meta_id: str | None = Field(default=None)
    meta_name: str | None = Field(default=None)
    x: float
    y: float


class ConceptMap(BaseModel):
    source: Literal["concepts", "experiences", "none"]
    method: Literal["umap", "pca", "none"]
    points: list[MapPoint] = Field(default_factory=list)
    # Candidates before the point limit, and rows left out for a missing or odd-sized embedding.
    candidates: int = Field(default=0)
    without_embedding: int = Field(default=0)
    notes: list[str] = Field(default_factory=list)


class Histogram(BaseModel):
    """Counts per bin; bin i is [edges[i], edges[i+1]), the last one closed."""

    edges: list[float]
    counts: list[int]

    @property
    def total(self) -> int:
        return sum(self.counts)


class ExperienceUtility(BaseModel):
    id: str
    problem: str
    domain: str | None = Field(default=None)
    kind: str | None = Field(default=None)
    utility: float
    quality: float
    maintenance_score: float
    retrieved: int
    used: int
    succeeded: int
    last_used_at: datetime | None = Field(default=None)


class UtilitySummary(BaseModel):
    """Utility (Agent KB D.3), quality and the AutoRefine maintenance score of the active experiences."""

    half_life_days: float
    active: int
    never_used: int
    mean_utility: float | None = Field(default=None)
    utility: Histogram
    quality: Histogram
    maintenance: Histogram
    lowest: list[ExperienceUtility] = Field(default_factory=list)


class KbReport(BaseModel):
    namespace: str
    generated_at: datetime
    stats: KbStats
    experiences_by_scope: dict[str, int]
    domains: list[DomainSummary]
    domain_relations: list[DomainRelation]
    meta_concepts: list[MetaConceptSummary]
    concept_map: ConceptMap
    utility: UtilitySummary

    @property
    def empty(self) -> bool:
        return self.stats.experiences == 0 and not any(self.stats.nodes.values())
