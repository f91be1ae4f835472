"""The report's charts as inline SVG drawn by matplotlib (imported only when a chart is drawn).

Text stays text in the viewer's own font, nothing is embedded or fetched, and text from the graph
is escaped and never read as mathtext.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.report._model import ConceptMap, DomainSummary, MapPoint, UtilitySummary
from kbgraph.core.terminal import escape_controls

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

#: How many of the largest clusters are named on the map.
MAP_LABELLED_CLUSTERS = 8
# tab20's colours, in order: meta-concepts are coloured by rank of size, cycling after 20.
_PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)
_UNASSIGNED_COLOUR = "#d9d9d9"


# Here rather than in _html: the map's hover texts are escaped the same way as the tables.
def _e(value: object) -> str:
    """Escaped text; every value from the graph goes through here. Control characters are made
    visible too: a bidi override (U+202E) would otherwise reverse what the reader sees."""
    return html.escape(escape_controls("" if value is None else str(value)), quote=True)


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
