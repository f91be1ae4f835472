"""The HTML report of one namespace (``kbgraph report``, issue 6): counts, domains, meta-concepts
with their sizes and documents, a 2-D map of concept clusters and the utility distribution.

Two steps, kept apart so each can be tested on its own:

1. :func:`build_report` reads the namespace through named queries (``cypher/queries/report_*``)
   and :meth:`KnowledgeBase.stats`, computes utility and the maintenance score in Python with the
   learning loop's own formulas (:mod:`kbgraph.search.utility`), and projects concept embeddings
   to 2-D. The result is a :class:`KbReport`, plain data.
2. :func:`render_html` turns a :class:`KbReport` into one self-contained HTML page: inline CSS,
   charts as inline SVG drawn by matplotlib, no script, no external font, image or style sheet, so
   it opens on a machine without network. Every text that comes from the graph is escaped: problem
   texts, concept labels and domain names are user input. Control characters and bidi overrides in
   them are shown as ``\\x1b`` / ``\\u202e`` (:func:`kbgraph.terminal.escape_controls`), in the
   tables and in the charts' text alike.

The map projects ``Concept.embedding`` (every concept gets its label's embedding at ingestion)
with UMAP, coloured by meta-concept. When no concept has an embedding, it falls back to the
problem+goal embeddings of the experiences exhibiting each meta-concept. UMAP needs neighbours:
under :data:`UMAP_MIN_POINTS` points the projection is PCA.
"""

from __future__ import annotations

import html
import math
import os
import re
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from kbgraph.errors import KbgraphError
from kbgraph.kb import KbStats, KnowledgeBase
from kbgraph.experience_store import aware_datetime
from kbgraph.feedback import row_utility
from kbgraph.search.utility import maintenance_score
from kbgraph.terminal import escape_controls

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

#: Below this many points the map is a PCA projection: UMAP's 15-neighbour graph would span the set.
UMAP_MIN_POINTS = 15
UMAP_NEIGHBORS = 15
#: Fixed seed: the same graph gives the same map.
MAP_RANDOM_STATE = 42
#: The map projects at most this many points (evenly spaced in id order) to keep UMAP within seconds.
DEFAULT_MAP_LIMIT = 5_000
#: How many of the largest clusters are named on the map.
MAP_LABELLED_CLUSTERS = 8
DEFAULT_LOWEST = 20
HISTOGRAM_BINS = 10
DOCUMENT_EXCERPT_CHARS = 400
PROBLEM_CHARS = 300
RELATION_TYPES = ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE")
# tab20's colours, in order: meta-concepts are coloured by rank of size, cycling after 20.
_PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)
_UNASSIGNED_COLOUR = "#d9d9d9"

Row = dict[str, Any]
Points = npt.NDArray[np.float64]


# -- the data -------------------------------------------------------------------------------------


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


# -- gathering ------------------------------------------------------------------------------------



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


def _pca_2d(vectors: Points) -> Points:
    """The first two principal components (zeros where there are fewer), signs fixed so the
    largest loading of each component is positive: the same input always gives the same picture."""
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    coordinates = np.zeros((len(vectors), 2))
    if len(vectors) < 2 or not np.any(centred):
        return coordinates
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    for axis in range(min(2, len(components))):
        component = components[axis]
        component = component * (1.0 if component[np.argmax(np.abs(component))] >= 0 else -1.0)
        coordinates[:, axis] = centred @ component
    return coordinates


def project_2d(
    vectors: npt.ArrayLike, random_state: int = MAP_RANDOM_STATE, umap_min_points: int = UMAP_MIN_POINTS
) -> tuple[Points, Literal["umap", "pca", "none"], list[str]]:
    """2-D coordinates of ``vectors`` (cosine UMAP, or PCA for small sets), the method used, and
    notes (UMAP failing falls back to PCA and says why)."""
    rows = np.asarray(vectors, dtype=np.float64)
    if rows.size == 0:
        return np.zeros((0, 2)), "none", []
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = rows / np.where(norms == 0, 1.0, norms)
    if len(rows) < umap_min_points:
        return _pca_2d(rows), "pca", []
    try:
        import umap

        from kbgraph.ingest.dedupe import nearest_neighbours

        neighbours = min(UMAP_NEIGHBORS, len(rows) - 1)
        with warnings.catch_warnings():
            # A fixed random_state makes UMAP single-threaded and it says so (intended: a reproducible map).
            warnings.simplefilter("ignore")
            # Exact neighbours from numpy spare UMAP compiling its own k-NN: measured 17 s instead of
            # 42 s for a first call in a process on the busy 2-core machine.
            reducer = umap.UMAP(n_neighbors=neighbours, n_components=2, metric="cosine", min_dist=0.1,
                                random_state=random_state, n_jobs=1,
                                precomputed_knn=nearest_neighbours(rows, neighbours))
            embedded = np.asarray(reducer.fit_transform(rows.astype(np.float32)), dtype=np.float64)
        if embedded.shape != (len(rows), 2) or not np.isfinite(embedded).all():
            raise ValueError(f"UMAP returned an unusable projection of shape {embedded.shape}")
        return embedded, "umap", []
    except Exception as error:  # a broken UMAP install or degenerate data still gets a map
        return _pca_2d(rows), "pca", [f"UMAP failed ({type(error).__name__}: {error}); projected with PCA instead"]


def concept_map(
    concept_rows: Sequence[Row], experience_rows: Callable[[], Sequence[Row]],
    limit: int = DEFAULT_MAP_LIMIT, random_state: int = MAP_RANDOM_STATE,
) -> ConceptMap:
    """The map's points: concepts with an embedding; when none has one, the experiences (lazily
    read) exhibiting a meta-concept. Rows need id, label, embedding, meta_id, meta_name."""
    source: Literal["concepts", "experiences"] = "concepts"
    rows = list(concept_rows)
    if not any(r["embedding"] for r in rows):
        fallback = list(experience_rows())
        if fallback:
            source, rows = "experiences", fallback
    if not rows:
        return ConceptMap(source="none", method="none")
    sizes = Counter(len(r["embedding"]) for r in rows if r["embedding"])
    dimension = sizes.most_common(1)[0][0] if sizes else 0
    usable = [r for r in rows if r["embedding"] and len(r["embedding"]) == dimension]
    notes: list[str] = []
    if source == "experiences":
        notes.append("no concept carries an embedding: the map shows experiences (problem+goal embedding) "
                     "coloured by the meta-concept they exhibit")
    if len(usable) > limit:
        keep = sorted(set(np.linspace(0, len(usable) - 1, limit).round().astype(int).tolist()))
        notes.append(f"{len(usable)} points: showing {len(keep)}, evenly spaced in id order")
        chosen = [usable[i] for i in keep]
    else:
        chosen = usable
    if not chosen:
        return ConceptMap(source=source, method="none", candidates=len(rows), without_embedding=len(rows),
                          notes=notes)
    coordinates, method, projection_notes = project_2d([r["embedding"] for r in chosen], random_state)
    points = [
        MapPoint(id=str(r["id"]), label=str(r["label"] or ""), meta_id=r["meta_id"], meta_name=r["meta_name"],
                 x=round(float(x), 5), y=round(float(y), 5))
        for r, (x, y) in zip(chosen, coordinates, strict=True)
    ]
    return ConceptMap(source=source, method=method, points=points, candidates=len(usable),
                      without_embedding=len(rows) - len(usable), notes=notes + projection_notes)


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


# -- charts ---------------------------------------------------------------------------------------


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    # A bare Figure (no pyplot): no global state, no GUI backend, safe in any thread.
    return Figure(figsize=(width, height), layout="constrained")


def _svg(figure: Figure, element_id: str, title: str) -> str:
    """The figure as an inline ``<svg>`` element with id ``element_id``. Text stays text (the
    viewer's sans-serif font, nothing embedded or fetched); ids inside are salted per chart so two
    charts on one page never share one; no metadata (no date), so the same data gives the same bytes."""
    import io

    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": element_id, "svg.id": element_id}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    text = buffer.getvalue()
    svg = text[text.index("<svg"):]
    svg = svg.replace("<svg", f'<svg role="img" aria-label="{html.escape(title)}"', 1)
    return _prefix_group_ids(svg, element_id)


_SVG_ID = re.compile(r'\bid="([^"]+)"')
_SVG_REFERENCE = re.compile(r'#([^")\s]+)')


def _prefix_group_ids(svg: str, prefix: str) -> str:
    """Matplotlib names groups ``figure_1``, ``axes_1``, … afresh in every chart; prefixed with the
    chart's id they stay unique on a page of several charts. Ids that are referenced (clip paths,
    markers: already salted per chart) and the root's keep their names."""
    keep = set(_SVG_REFERENCE.findall(svg)) | {prefix}

    def rename(match: re.Match[str]) -> str:
        name = match.group(1)
        return match.group(0) if name in keep else f'id="{prefix}-{name}"'

    return _SVG_ID.sub(rename, svg)


# Text from the graph is never read as mathtext ("$5 off" stays "$5 off", "$x$" cannot fail to parse).
_RC: dict[RcKeyType, Any] = {"text.parse_math": False, "font.family": "sans-serif", "font.size": 9.0, "axes.spines.top": False,
       "axes.spines.right": False}


def meta_colours(points: Sequence[MapPoint]) -> dict[str, str]:
    """Colour of each meta-concept on the map: by rank of its number of points (ties by name)."""
    counts = Counter(p.meta_id for p in points if p.meta_id)
    names = {p.meta_id: p.meta_name or p.meta_id for p in points if p.meta_id}
    ranked = sorted(counts, key=lambda m: (-counts[m], names[m], m))
    return {meta: _PALETTE[rank % len(_PALETTE)] for rank, meta in enumerate(ranked)}


_POINT_LINK = re.compile(r'<a xlink:href="#map-point-(\d+)" target="_blank">')


def map_svg(cmap: ConceptMap) -> str:
    """The concept map. Every point links to its row of the data table (``#map-point-<n>``)."""
    import matplotlib

    colours = meta_colours(cmap.points)
    with matplotlib.rc_context(_RC):
        figure = _figure(9.0, 6.5)
        axes = figure.add_subplot()
        xs = [p.x for p in cmap.points]
        ys = [p.y for p in cmap.points]
        scatter = axes.scatter(xs, ys, s=36, c=[colours.get(p.meta_id or "", _UNASSIGNED_COLOUR) for p in cmap.points],
                               edgecolors="white", linewidths=0.6)
        scatter.set_urls([f"#map-point-{n}" for n in range(len(cmap.points))])
        scatter.set_gid("points")  # the group of point links: "concept-map-svg-points" on the page
        counts = Counter(p.meta_id for p in cmap.points if p.meta_id)
        # A cluster of one point is no cluster: only groups of two or more are named.
        largest = sorted((m for m in counts if counts[m] > 1), key=lambda m: (-counts[m], m))[:MAP_LABELLED_CLUSTERS]
        for meta in largest:
            members = [p for p in cmap.points if p.meta_id == meta]
            axes.annotate(
                escape_controls(f"{members[0].meta_name or meta} ({len(members)})"),
                (float(np.mean([p.x for p in members])), float(np.mean([p.y for p in members]))),
                ha="center", va="bottom", fontsize=8, xytext=(0, 6), textcoords="offset points",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": colours[meta], "alpha": 0.85},
            )
        axes.set_xticks([])
        axes.set_yticks([])
        what = "concepts" if cmap.source == "concepts" else "experiences"
        axes.set_title(f"{len(cmap.points)} {what}, {cmap.method.upper()} of their embeddings, coloured by meta-concept",
                       fontsize=9)
        svg = _svg(figure, "concept-map-svg", "2-D map of concept clusters")

    def with_tooltip(match: re.Match[str]) -> str:
        # A <title> is the browser's hover text: the point's label and meta-concept, without script.
        point = cmap.points[int(match.group(1))]
        tip = f"{point.label} — {point.meta_name or 'no meta-concept'}"
        return f'<a xlink:href="#map-point-{match.group(1)}"><title>{_e(tip)}</title>'

    # Matplotlib opens every link in a new tab; these are anchors within the page.
    return _POINT_LINK.sub(with_tooltip, svg)


def domains_svg(domains: Sequence[DomainSummary]) -> str:
    import matplotlib

    with matplotlib.rc_context(_RC):
        figure = _figure(8.0, 1.0 + 0.35 * len(domains))
        axes = figure.add_subplot()
        names = [escape_controls(d.name) for d in reversed(domains)]
        concrete = [d.concrete for d in reversed(domains)]
        abstract = [d.abstract for d in reversed(domains)]
        axes.barh(names, concrete, color=_PALETTE[0], label="concrete")
        axes.barh(names, abstract, left=concrete, color=_PALETTE[1], label="abstract")
        axes.set_xlabel("experiences")
        axes.legend(loc="lower right", frameon=False)
        return _svg(figure, "domains-svg", "experiences per domain")


def distributions_svg(summary: UtilitySummary) -> str:
    import matplotlib

    with matplotlib.rc_context(_RC):
        figure = _figure(11.0, 3.2)
        charts = (("utility (now)", summary.utility, _PALETTE[2]), ("quality", summary.quality, _PALETTE[0]),
                  ("maintenance score s/(u+ε)·log(1+u)·(1+u/(r+ε))", summary.maintenance, _PALETTE[4]))
        for axes, (title, hist, colour) in zip(figure.subplots(1, 3), charts, strict=True):
            widths = np.diff(hist.edges)
            axes.bar(hist.edges[:-1], hist.counts, width=widths, align="edge", color=colour, edgecolor="white")
            axes.set_title(title, fontsize=9)
            axes.set_xlabel("value")
            axes.set_ylabel("active experiences")
        return _svg(figure, "distributions-svg", "distributions of utility, quality and maintenance score")


# -- HTML -----------------------------------------------------------------------------------------


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#1d2330;
  margin:0;background:#f6f7f9}
header,main{max-width:1180px;margin:0 auto;padding:0 24px}
header{padding-top:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid #d8dce3;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
nav a{margin-right:14px}a{color:#1f5fbf}
.muted{color:#5b6473}.notice{background:#fff6d6;border:1px solid #e7d38b;padding:10px 14px;border-radius:6px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:10px 16px;min-width:120px}
.card b{display:block;font-size:22px}
.tables{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
table{border-collapse:collapse;background:#fff;margin:6px 0 12px}
th,td{border:1px solid #dde1e7;padding:4px 8px;text-align:left;vertical-align:top}
thead th{background:#eef1f5}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:4px 0}
pre.doc{white-space:pre-wrap;margin:0;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;max-width:520px}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.swatch{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:6px;vertical-align:baseline}
figure{margin:8px 0;background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:8px}
figure svg{max-width:100%;height:auto}
.scroll{max-height:420px;overflow:auto;display:inline-block}
"""


def _e(value: object) -> str:
    """Escaped text; every value from the graph goes through here. Control characters are made
    visible too: a bidi override (U+202E) would otherwise reverse what the reader sees."""
    return html.escape(escape_controls("" if value is None else str(value)), quote=True)


def _num(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:.{digits}f}"


def _table(
    table_id: str, caption: str, headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = (),
    empty: str = "none",
) -> str:
    """A table; ``rows`` hold cells already escaped (or built from escaped parts)."""
    numeric_class = ' class="num"'
    head = "".join(f'<th scope="col"{numeric_class if i in numeric else ""}>{_e(h)}</th>'
                   for i, h in enumerate(headers))
    body = []
    for row in rows:
        cells = "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="muted">{_e(empty)}</td></tr>')
    return (f'<table id="{table_id}"><caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def _counts_table(table_id: str, caption: str, what: str, counts: Mapping[str, int]) -> str:
    rows = [(_e(k), _num(v)) for k, v in sorted(counts.items())]
    return _table(table_id, caption, (what, "count"), rows, numeric=(1,))


def _counts_section(report: KbReport) -> str:
    s = report.stats
    cards = [("experiences", _num(s.experiences)), ("active", _num(report.utility.active)),
             ("domains", _num(len(report.domains))), ("meta-concepts", _num(len(report.meta_concepts))),
             ("concepts", _num(s.nodes.get("Concept", 0))),
             ("mean utility", _num(report.utility.mean_utility, 2))]
    card_html = "".join(f'<div class="card"><b>{value}</b><span class="muted">{_e(name)}</span></div>'
                        for name, value in cards)
    tables = "".join((
        _counts_table("nodes-by-label", "Nodes by label", "label", s.nodes),
        _counts_table("relationships-by-type", "Relationships by type", "type", s.relationships),
        _counts_table("experiences-by-status", "Experiences by status", "status", s.experiences_by_status),
        _counts_table("experiences-by-kind", "Experiences by kind", "kind", s.experiences_by_kind),
        _counts_table("experiences-by-scope", "Experiences by scope", "scope", report.experiences_by_scope),
    ))
    return (f'<section id="counts"><h2>Counts</h2><div class="cards">{card_html}</div>'
            f'<div class="tables">{tables}</div></section>')


def _domains_section(report: KbReport) -> str:
    rows = [(_e(d.name), _num(d.experiences), _num(d.active), _num(d.concrete), _num(d.abstract),
             _num(d.mean_success_rate, 2), _num(d.mean_quality, 2)) for d in report.domains]
    table = _table("domain-table", "Experiences per domain (every status)",
                   ("domain", "experiences", "active", "concrete", "abstract", "mean success rate", "mean quality"),
                   rows, numeric=(1, 2, 3, 4, 5, 6), empty="no domains")
    chart = f"<figure>{domains_svg(report.domains)}</figure>" if report.domains else ""
    relation_rows = [
        (_e(r.source), _e(r.target), *(_num(r.by_type.get(t, 0)) for t in RELATION_TYPES), _num(r.total))
        for r in report.domain_relations
    ]
    relations = _table("domain-relations", "Experience relations between domains (source → target)",
                       ("source domain", "target domain", *RELATION_TYPES, "total"), relation_rows,
                       numeric=(2, 3, 4, 5, 6), empty="no relations")
    cross = sum(r.total for r in report.domain_relations if r.source != r.target)
    note = (f'<p class="muted">{_num(cross)} of {_num(sum(r.total for r in report.domain_relations))} relations '
            "join two different domains.</p>")
    return f'<section id="domains"><h2>Domains</h2>{chart}{table}<h3>Relations between domains</h3>{note}{relations}</section>'


def _meta_concepts_section(report: KbReport) -> str:
    colours = meta_colours(report.concept_map.points)
    rows = []
    for m in report.meta_concepts:
        swatch = f'<span class="swatch" style="background:{colours.get(m.id, _UNASSIGNED_COLOUR)}"></span>'
        excerpt = _e(m.excerpt) + ("…" if m.truncated else "")
        rows.append((swatch + _e(m.name), _num(m.concepts), _num(m.experiences), _num(m.insights),
                     _num(m.version), f'<pre class="doc">{excerpt}</pre>'))
    table = _table("meta-concept-table", "Meta-concepts, largest first (the colour is the map's)",
                   ("meta-concept", "concepts", "experiences", "insights", "version", "document (excerpt)"),
                   rows, numeric=(1, 2, 3, 4), empty="no meta-concepts")
    return f'<section id="meta-concepts"><h2>Meta-concepts</h2>{table}</section>'


def _map_section(report: KbReport) -> str:
    cmap = report.concept_map
    if not cmap.points:
        return ('<section id="concept-map"><h2>Concept map</h2><p class="muted">No concepts with an embedding to '
                "map.</p></section>")
    method = ("UMAP (cosine, 15 neighbours, fixed seed)" if cmap.method == "umap"
              else f"PCA (under {UMAP_MIN_POINTS} points UMAP has too few neighbours)")
    what = "concept" if cmap.source == "concepts" else "experience"
    intro = (f"<p>One point per {what}, projected to 2-D with {_e(method)}; points of one colour belong to one "
             f"meta-concept (grey: none). The {MAP_LABELLED_CLUSTERS} largest clusters are named; hover over a point "
             "for its label, click it for its row in the table below.</p>")
    notes = "".join(f'<p class="notice">{_e(n)}</p>' for n in cmap.notes)
    if cmap.without_embedding:
        notes += f'<p class="muted">{_num(cmap.without_embedding)} left out: no embedding, or one of another size.</p>'
    colours = meta_colours(cmap.points)
    rows = [
        (f'<span id="map-point-{n}">{n}</span>', _e(p.label),
         f'<span class="swatch" style="background:{colours.get(p.meta_id or "", _UNASSIGNED_COLOUR)}"></span>'
         + (_e(p.meta_name) if p.meta_id else '<span class="muted">—</span>'), _num(p.x, 3), _num(p.y, 3))
        for n, p in enumerate(cmap.points)
    ]
    table = _table("map-points", f"The map's {len(cmap.points)} points", ("#", what, "meta-concept", "x", "y"),
                   rows, numeric=(0, 3, 4))
    return (f'<section id="concept-map"><h2>Concept map</h2>{intro}{notes}<figure>{map_svg(cmap)}</figure>'
            f'<div class="scroll">{table}</div></section>')


def _histogram_table(table_id: str, caption: str, hist: Histogram, digits: int = 1) -> str:
    rows = []
    for n, count in enumerate(hist.counts):
        closing = "]" if n == len(hist.counts) - 1 else ")"
        rows.append((f"[{hist.edges[n]:.{digits}f}, {hist.edges[n + 1]:.{digits}f}{closing}", _num(count)))
    rows.append(("<b>total</b>", f"<b>{_num(hist.total)}</b>"))
    return _table(table_id, caption, ("bin", "experiences"), rows, numeric=(1,))


def _utility_section(report: KbReport) -> str:
    u = report.utility
    intro = (f"<p>Over the {_num(u.active)} active experiences. Utility (Agent KB D.3) is "
             "quality·exp(−λ·days since last use, or creation) + usage impact·exp(−λ·days since it was last "
             f"updated), clipped to [0, 1], with a half-life of {_num(u.half_life_days, 1)} days; it falls unless "
             "an experience is used. The AutoRefine maintenance score is s/(u+0.01)·log(1+u)·(1+u/(r+0.01)) of "
             f"succeeded s, used u and retrieved r; {_num(u.never_used)} have never been used (score 0).</p>")
    if not u.active:
        return f'<section id="utility"><h2>Utility</h2>{intro}<p class="muted">No active experiences.</p></section>'
    chart = f"<figure>{distributions_svg(u)}</figure>"
    tables = "".join((_histogram_table("utility-histogram", "Utility", u.utility),
                      _histogram_table("quality-histogram", "Quality", u.quality),
                      _histogram_table("maintenance-histogram", "Maintenance score", u.maintenance)))
    lowest = [
        (f"<code>{_e(e.id)}</code>", _e(e.domain), _e(e.kind), _num(e.utility), _num(e.quality),
         _num(e.maintenance_score), f"{e.retrieved}/{e.used}/{e.succeeded}",
         _e(e.last_used_at.strftime("%Y-%m-%d %H:%M") if e.last_used_at else "never"), _e(e.problem))
        for e in u.lowest
    ]
    low_table = _table("lowest-utility", f"The {len(u.lowest)} active experiences of lowest utility",
                       ("id", "domain", "kind", "utility", "quality", "maintenance", "r/u/s", "last used", "problem"),
                       lowest, numeric=(3, 4, 5))
    return (f'<section id="utility"><h2>Utility</h2>{intro}{chart}<div class="tables">{tables}</div>'
            f"{low_table}</section>")


def render_html(report: KbReport) -> str:
    """The report as one self-contained HTML page (no script, no external resource)."""
    ns = _e(report.namespace)
    generated = _e(report.generated_at.strftime("%Y-%m-%d %H:%M:%S %Z"))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>kbgraph report — {ns}</title><style>{_CSS}</style></head><body>",
        f'<header><h1>kbgraph report: namespace <code>{ns}</code></h1>'
        f'<p class="muted">generated {generated}</p>'
        '<nav><a href="#counts">Counts</a><a href="#domains">Domains</a><a href="#meta-concepts">Meta-concepts</a>'
        '<a href="#concept-map">Concept map</a><a href="#utility">Utility</a></nav></header><main>',
    ]
    if report.empty:
        parts.append(f'<p class="notice" id="empty-notice">Namespace <code>{ns}</code> is empty: it holds no '
                     "experiences, concepts or other nodes yet. Ingest trajectories (<code>kbgraph ingest</code>) "
                     "or add experiences (<code>kbgraph add</code>) and run the report again.</p>")
    elif report.stats.experiences == 0:
        parts.append(f'<p class="notice" id="empty-notice">Namespace <code>{ns}</code> holds no experiences.</p>')
    parts += [_counts_section(report), _domains_section(report), _meta_concepts_section(report),
              _map_section(report), _utility_section(report), "</main></body></html>"]
    return "\n".join(parts) + "\n"


def write_report(report: KbReport, path: Path) -> Path:
    """Renders ``report`` into ``path`` (replaced whole, never left half-written); returns it absolute."""
    page = render_html(report)
    target = path.resolve()
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:  # a folder you may not write in, /proc, a full disk: one line, not a traceback
        raise KbgraphError(f"cannot write the report to {target}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(page)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise KbgraphError(f"cannot write the report to {target}: {error.strerror or error}") from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def default_report_path(namespace: str) -> Path:
    """``kbgraph-report-<namespace>.html`` in the current folder (namespaces are file-name safe)."""
    return Path(f"kbgraph-report-{namespace}.html")
