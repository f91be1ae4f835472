"""The HTML report of one namespace (``kbgraph report``, issue 6): counts, domains, meta-concepts
with their sizes and documents, a 2-D map of concept clusters and the utility distribution.

Two steps, kept apart so each can be tested on its own:

1. :func:`build_report` reads the namespace through named queries (``cypher/queries/report_*``)
   and :meth:`KnowledgeBase.stats`, computes utility and the maintenance score in Python with the
   learning loop's own formulas (:mod:`kbgraph.core.utility`), and projects concept embeddings
   to 2-D. The result is a :class:`KbReport`, plain data.
2. :func:`render_html` turns a :class:`KbReport` into one self-contained HTML page: inline CSS,
   charts as inline SVG drawn by matplotlib, no script, no external font, image or style sheet, so
   it opens on a machine without network. Every text that comes from the graph is escaped: problem
   texts, concept labels and domain names are user input. Control characters and bidi overrides in
   them are shown as ``\\x1b`` / ``\\u202e`` (:func:`kbgraph.core.terminal.escape_controls`), in the
   tables and in the charts' text alike.

The map projects ``Concept.embedding`` (every concept gets its label's embedding at ingestion)
with UMAP, coloured by meta-concept. When no concept has an embedding, it falls back to the
problem+goal embeddings of the experiences exhibiting each meta-concept. UMAP needs neighbours:
under :data:`UMAP_MIN_POINTS` points the projection is PCA.

The package's modules: ``_model`` (the data), ``_summarise`` (step 1), ``_projection`` (the map's
2-D coordinates), ``_svg`` (the charts) and ``_html`` (step 2, and writing the file).
"""

from __future__ import annotations

from kbgraph.report._html import RELATION_TYPES, default_report_path, render_html, write_report
from kbgraph.report._model import (
    ConceptMap,
    DomainRelation,
    DomainSummary,
    ExperienceUtility,
    Histogram,
    KbReport,
    MapPoint,
    MetaConceptSummary,
    Row,
    UtilitySummary,
)
from kbgraph.report._projection import (
    DEFAULT_MAP_LIMIT,
    MAP_RANDOM_STATE,
    UMAP_MIN_POINTS,
    UMAP_NEIGHBORS,
    Points,
    concept_map,
    project_2d,
)
from kbgraph.report._summarise import (
    DEFAULT_LOWEST,
    DOCUMENT_EXCERPT_CHARS,
    HISTOGRAM_BINS,
    PROBLEM_CHARS,
    STAGES,
    build_report,
    histogram,
    summarise_domains,
    summarise_relations,
    summarise_utility,
)
from kbgraph.report._svg import MAP_LABELLED_CLUSTERS, distributions_svg, domains_svg, map_svg, meta_colours

__all__ = [
    "ConceptMap",
    "DEFAULT_LOWEST",
    "DEFAULT_MAP_LIMIT",
    "DOCUMENT_EXCERPT_CHARS",
    "DomainRelation",
    "DomainSummary",
    "ExperienceUtility",
    "HISTOGRAM_BINS",
    "Histogram",
    "KbReport",
    "MAP_LABELLED_CLUSTERS",
    "MAP_RANDOM_STATE",
    "MapPoint",
    "MetaConceptSummary",
    "PROBLEM_CHARS",
    "Points",
    "RELATION_TYPES",
    "Row",
    "STAGES",
    "UMAP_MIN_POINTS",
    "UMAP_NEIGHBORS",
    "UtilitySummary",
    "build_report",
    "concept_map",
    "default_report_path",
    "distributions_svg",
    "domains_svg",
    "histogram",
    "map_svg",
    "meta_colours",
    "project_2d",
    "render_html",
    "summarise_domains",
    "summarise_relations",
    "summarise_utility",
    "write_report",
]
