"""Rendering a report: one self-contained HTML page (inline CSS, charts as inline SVG, no script, no
external font, image or style sheet), so it opens on a machine without network. Every text from
the graph goes through :func:`_e`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kbgraph.core.files import write_whole
from kbgraph.report._model import Histogram, KbReport
from kbgraph.report._projection import UMAP_MIN_POINTS
from kbgraph.report._svg import (
    _UNASSIGNED_COLOUR,
    MAP_LABELLED_CLUSTERS,
    _e,
    distributions_svg,
    domains_svg,
    map_svg,
    meta_colours,
)

RELATION_TYPES = ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE")

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
    """Renders ``report`` into ``path`` (replaced whole, never left half-written, mode 0600 like an
    export: the page quotes the namespace's task texts); returns it absolute. A target that is not
    a regular file, or a write that fails, is a KbgraphError."""
    page = render_html(report)
    target = path.resolve()
    write_whole(target, lambda file: file.write(page), what="the report", mode=0o600)
    return target


def default_report_path(namespace: str) -> Path:
    """``kbgraph-report-<namespace>.html`` in the current folder (namespaces are file-name safe)."""
    return Path(f"kbgraph-report-{namespace}.html")
