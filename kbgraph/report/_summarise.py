"""Gathering a report: the namespace read through named queries (``cypher/queries/report_*``) and
summarised in Python with the learning loop's own formulas (:mod:`kbgraph.core.utility`).
Nothing is written.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

import numpy as np

from kbgraph.store.experiences import aware_datetime
from kbgraph.learning.feedback import row_utility
from kbgraph.kb import KnowledgeBase
from kbgraph.report._model import (
    DomainRelation,
    DomainSummary,
    ExperienceUtility,
    Histogram,
    KbReport,
    MetaConceptSummary,
    Row,
    UtilitySummary,
)
from kbgraph.report._projection import DEFAULT_MAP_LIMIT, concept_map
from kbgraph.core.utility import maintenance_score

DEFAULT_LOWEST = 20
HISTOGRAM_BINS = 10
DOCUMENT_EXCERPT_CHARS = 400
PROBLEM_CHARS = 300


def summarise_domains(rows: Iterable[Row]) -> tuple[list[DomainSummary], dict[str, int]]:
    """Per-domain summaries and counts by scope from ``report_experience_groups`` rows."""
    totals: dict[str, dict[str, float]] = {}
    by_scope: Counter[str] = Counter()
    for row in rows:
        count = int(row["count"])
        by_scope[str(row["scope"])] += count
        domain = totals.setdefault(str(row["domain"]), {
            "experiences": 0, "active": 0, "concrete": 0, "abstract": 0, "success": 0.0, "quality": 0.0})
        domain["experiences"] += count
        domain["active"] += count if row["status"] == "active" else 0
        if row["kind"] in ("concrete", "abstract"):
            domain[str(row["kind"])] += count
        domain["success"] += float(row["success_sum"] or 0.0)
        domain["quality"] += float(row["quality_sum"] or 0.0)
    domains = [
        DomainSummary(
            name=name, experiences=int(t["experiences"]), active=int(t["active"]), concrete=int(t["concrete"]),
            abstract=int(t["abstract"]), mean_success_rate=t["success"] / max(t["experiences"], 1),
            mean_quality=t["quality"] / max(t["experiences"], 1),
        )
        for name, t in totals.items()
    ]
    domains.sort(key=lambda d: (-d.experiences, d.name))
    return domains, dict(sorted(by_scope.items()))


def summarise_relations(rows: Iterable[Row]) -> list[DomainRelation]:
    pairs: dict[tuple[str, str], dict[str, int]] = {}
    for row in rows:
        by_type = pairs.setdefault((str(row["source"]), str(row["target"])), {})
        by_type[str(row["type"])] = by_type.get(str(row["type"]), 0) + int(row["count"])
    relations = [DomainRelation(source=s, target=t, by_type=by_type) for (s, t), by_type in pairs.items()]
    relations.sort(key=lambda r: (-r.total, r.source, r.target))
    return relations


def histogram(values: Sequence[float], upper: float = 1.0, bins: int = HISTOGRAM_BINS) -> Histogram:
    """Counts of ``values`` over ``bins`` equal bins of [0, upper]; values outside are clipped
    into the first or last bin, so the counts always add up to ``len(values)``."""
    clipped = np.clip(np.asarray(values, dtype=np.float64), 0.0, upper)
    counts, edges = np.histogram(clipped, bins=bins, range=(0.0, upper))
    return Histogram(edges=[round(float(e), 6) for e in edges], counts=[int(c) for c in counts])


def summarise_utility(
    rows: Iterable[Row], now: datetime, half_life_days: float, lowest: int = DEFAULT_LOWEST
) -> UtilitySummary:
    """Utility, quality and maintenance score of each active experience (``report_active_experiences``
    rows), their histograms and the ``lowest`` experiences by utility (ties by id)."""
    scored: list[ExperienceUtility] = []
    for row in rows:
        quality = float(row["quality"])
        retrieved, used, succeeded = (max(int(row[k]), 0) for k in ("retrieved", "used", "succeeded"))
        scored.append(ExperienceUtility(
            id=row["id"], problem=row["problem"] or "", domain=row["domain"], kind=row["kind"],
            utility=row_utility(row, half_life_days, now),
            quality=quality, maintenance_score=maintenance_score(succeeded, used, retrieved),
            retrieved=retrieved, used=used, succeeded=succeeded, last_used_at=aware_datetime(row["last_used_at"]),
        ))
    scores = [e.maintenance_score for e in scored]
    # The score is unbounded above (it grows with log(1 + used)); its bins span [0, max] (at least 1).
    top = max([1.0, *scores])
    return UtilitySummary(
        half_life_days=half_life_days, active=len(scored), never_used=sum(e.used == 0 for e in scored),
        mean_utility=sum(e.utility for e in scored) / len(scored) if scored else None,
        utility=histogram([e.utility for e in scored]), quality=histogram([e.quality for e in scored]),
        maintenance=histogram(scores, upper=math.ceil(top * 10) / 10),
        lowest=sorted(scored, key=lambda e: (e.utility, e.id))[:max(lowest, 0)],
    )


STAGES = ("counting", "domains", "meta-concepts", "concept map", "utility")


def build_report(
    kb: KnowledgeBase, *, now: datetime | None = None, lowest: int = DEFAULT_LOWEST,
    map_limit: int = DEFAULT_MAP_LIMIT, on_stage: Callable[[str], None] | None = None,
) -> KbReport:
    """Reads everything the report shows from ``kb``'s namespace (nothing is written).
    ``on_stage`` is called with each name of :data:`STAGES` as that stage starts."""
    stage = on_stage or (lambda _name: None)
    gateway, namespace = kb.gateway, kb.namespace
    now = now or datetime.now(UTC)
    stage("counting")
    stats = kb.stats()
    stage("domains")
    domains, by_scope = summarise_domains(gateway.read("report_experience_groups", kb=namespace))
    relations = summarise_relations(gateway.read("report_domain_relations", kb=namespace))
    stage("meta-concepts")
    metas = [
        MetaConceptSummary(
            id=r["id"], name=r["name"] or r["id"], version=r["version"], concepts=r["concepts"],
            experiences=r["experiences"], insights=r["insights"], excerpt=r["excerpt"],
            truncated=r["document_chars"] > len(r["excerpt"]),
        )
        for r in gateway.read("report_meta_concepts", kb=namespace, excerpt=DOCUMENT_EXCERPT_CHARS)
    ]
    stage("concept map")
    points = concept_map(gateway.read("report_concept_points", kb=namespace),
                         lambda: gateway.read("report_experience_points", kb=namespace), limit=map_limit)
    stage("utility")
    summary = summarise_utility(gateway.read("report_active_experiences", kb=namespace, problem_chars=PROBLEM_CHARS),
                                now, kb.settings.learning.utility_half_life_days, lowest)
    return KbReport(
        namespace=namespace, generated_at=now, stats=stats, experiences_by_scope=by_scope,
        domains=domains, domain_relations=relations, meta_concepts=metas, concept_map=points, utility=summary,
    )
