"""`kbgraph report`: one self-contained HTML page per namespace — counts, domains, meta-concepts with
their sizes, a 2-D map of concept clusters and the utility distribution — read back with
html.parser against a real Neo4j holding the bundled samples."""

from __future__ import annotations

import json
import math
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import neo4j
import numpy as np
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import KbgraphError
from kbgraph.kb import KnowledgeBase
from kbgraph.report import (
    RELATION_TYPES,
    KbReport,
    build_report,
    concept_map,
    histogram,
    project_2d,
    render_html,
    summarise_utility,
    write_report,
)
from kbgraph.core.utility import maintenance_score
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget

SAMPLES = Path(__file__).resolve().parents[3] / "kbgraph" / "samples"
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Page(HTMLParser):
    """What a test needs to know about a report: its tables (by id), every tag and id, the points
    of the concept map, and whether every element that was opened was closed in order."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.headers: dict[str, list[str]] = {}
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.ids: list[str] = []
        self.map_links: list[str] = []
        self.texts: dict[str, str] = {}
        self.unbalanced: list[str] = []
        self._stack: list[tuple[str, str | None]] = []
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_head = False
        self.feed(text)
        self.close()
        if self._stack:
            self.unbalanced.append(f"never closed: {[t for t, _ in self._stack]}")

    def _inside(self, element_id: str) -> bool:
        return any(i == element_id for _, i in self._stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.tags.append((tag, attributes))
        if "id" in attributes:
            self.ids.append(attributes["id"])
        if tag == "a" and self._inside("concept-map-svg-points"):
            self.map_links.append(attributes.get("xlink:href", ""))
        if tag == "table":
            self._table = attributes.get("id", "")
            self.tables[self._table] = []
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        if tag not in VOID:
            self._stack.append((tag, attributes.get("id")))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self._stack or self._stack[-1][0] != tag:
            self.unbalanced.append(f"</{tag}> closes {self._stack[-1][0] if self._stack else 'nothing'}")
            return
        _, element_id = self._stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._in_head:
                self.headers[self._table] = self._row
            else:
                self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "thead":
            self._in_head = False
        elif tag == "table":
            self._table = None
        if element_id:
            self.texts.setdefault(element_id, "")

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        for _, element_id in self._stack:
            if element_id:
                self.texts[element_id] = self.texts.get(element_id, "") + data

    def counts(self, table_id: str) -> dict[str, int]:
        """A two-column (name, count) table as a dict."""
        return {row[0]: int(row[1].replace(",", "")) for row in self.tables[table_id] if row[0] != "none"}

    def column(self, table_id: str, name: str) -> list[str]:
        index = self.headers[table_id].index(name)
        return [row[index] for row in self.tables[table_id]]


def assert_self_contained(page: Page) -> None:
    assert not page.unbalanced, page.unbalanced
    assert len(page.ids) == len(set(page.ids)), "duplicate ids"
    for tag, attributes in page.tags:
        assert tag not in ("script", "link", "iframe", "object", "img"), tag
        assert not any(name.startswith("on") for name in attributes), (tag, attributes)
        for name in ("src", "href", "xlink:href"):
            value = attributes.get(name, "")
            assert not value or value.startswith("#"), (tag, name, value)
        assert "url(http" not in attributes.get("style", "")


@pytest.fixture(scope="module")
def sample_kb(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> Iterator[KnowledgeBase]:
    """The bundled samples (36 trajectories, 30 experiences, six domains) through the whole pipeline."""
    kb = KnowledgeBase(driver, embedder, namespace=f"test-report-{uuid.uuid4().hex[:8]}",
                       database=neo4j_target.database)
    kb.ingest([SAMPLES / "trajectories.jsonl", SAMPLES / "experiences.jsonl"])
    yield kb
    kb.clear()


@pytest.fixture(scope="module")
def sample_report(sample_kb: KnowledgeBase) -> tuple[KbReport, str, Page]:
    report = build_report(sample_kb)
    text = render_html(report)
    return report, text, Page(text)


def hand_made(problem: str, **fields: Any) -> dict[str, Any]:
    return {"problem": problem, "goal": f"goal of {problem}", "domain": "support",
            "steps": [{"action": "lookup_account", "text": "Find the account."}], **fields}


# -- the samples -------------------------------------------------------------------------------------


def test_the_page_is_one_self_contained_balanced_document(sample_report: tuple[KbReport, str, Page]) -> None:
    _, text, page = sample_report
    assert text.startswith("<!DOCTYPE html>")
    assert_self_contained(page)
    assert {"counts", "domains", "meta-concepts", "concept-map", "utility"} <= set(page.ids)
    assert {"concept-map-svg", "domains-svg", "distributions-svg"} <= set(page.ids)
    assert "empty-notice" not in page.ids


def test_counts_equal_kb_stats(sample_kb: KnowledgeBase, sample_report: tuple[KbReport, str, Page]) -> None:
    _, _, page = sample_report
    stats = sample_kb.stats()
    assert stats.experiences > 66 and stats.nodes["Concept"] > 0
    assert page.counts("nodes-by-label") == stats.nodes
    assert page.counts("relationships-by-type") == stats.relationships
    assert page.counts("experiences-by-status") == stats.experiences_by_status
    assert page.counts("experiences-by-kind") == stats.experiences_by_kind
    assert page.counts("experiences-by-scope") == {"shared": stats.experiences}


def test_every_domain_is_listed_with_its_experiences_and_the_relations_between_domains(
    sample_kb: KnowledgeBase, sample_report: tuple[KbReport, str, Page]
) -> None:
    _, _, page = sample_report
    stats = sample_kb.stats()
    domains = page.column("domain-table", "domain")
    assert len(domains) == len(stats.experiences_by_domain) == 6
    assert dict(zip(domains, map(int, page.column("domain-table", "experiences")), strict=True)) == \
        stats.experiences_by_domain
    assert all(0.0 <= float(v) <= 1.0 for v in page.column("domain-table", "mean success rate"))
    # Every relation of the four types joins two experiences of the namespace, so the domain pairs
    # account for all of them, type by type.
    for relation in RELATION_TYPES:
        assert sum(map(int, page.column("domain-relations", relation))) == stats.relationships.get(relation, 0)
    assert any(s != t for s, t in zip(page.column("domain-relations", "source domain"),
                                      page.column("domain-relations", "target domain"), strict=True))


def test_every_meta_concept_is_listed_with_its_sizes(
    sample_kb: KnowledgeBase, sample_report: tuple[KbReport, str, Page]
) -> None:
    _, _, page = sample_report
    stored = sample_kb.gateway.read("meta_concepts_top", kb=sample_kb.namespace, limit=10_000)
    assert len(stored) == sample_kb.stats().nodes["MetaConcept"]
    listed = {row[0]: row for row in page.tables["meta-concept-table"]}
    assert len(page.tables["meta-concept-table"]) == len(stored)
    headers = page.headers["meta-concept-table"]
    for meta in stored:
        row = listed[meta["name"]]
        assert int(row[headers.index("concepts")]) == meta["concepts"]
        assert int(row[headers.index("experiences")]) == meta["experiences"]
        assert row[headers.index("document (excerpt)")][:40] == meta["document"][:40]
    # Each insight is about one meta-concept: the column adds up to the ABOUT relationships.
    assert sum(map(int, page.column("meta-concept-table", "insights"))) == sample_kb.stats().relationships["ABOUT"]


def test_the_map_has_one_point_per_concept_in_the_svg_and_the_table(
    sample_kb: KnowledgeBase, sample_report: tuple[KbReport, str, Page]
) -> None:
    report, _, page = sample_report
    concepts = sample_kb.stats().nodes["Concept"]
    assert report.concept_map.source == "concepts" and report.concept_map.method == "umap"
    assert len(page.map_links) == concepts
    assert page.map_links == [f"#map-point-{n}" for n in range(concepts)]
    assert len(page.tables["map-points"]) == concepts
    assert {f"map-point-{n}" for n in range(concepts)} <= set(page.ids)
    labels = {row["label"] for row in sample_kb.gateway.read("insights_all", kb=sample_kb.namespace)}
    assert set(page.column("map-points", "concept")) == labels
    # Coloured by meta-concept: every concept belongs to one, and the table names it.
    metas = {m.name for m in report.meta_concepts}
    assert set(page.column("map-points", "meta-concept")) <= metas


def test_the_map_is_the_same_for_the_same_graph(sample_report: tuple[KbReport, str, Page], sample_kb: KnowledgeBase) -> None:
    report, _, _ = sample_report
    again = build_report(sample_kb)
    assert [(p.id, p.x, p.y) for p in again.concept_map.points] == [(p.id, p.x, p.y) for p in report.concept_map.points]


def test_the_utility_histogram_counts_every_active_experience(
    sample_kb: KnowledgeBase, sample_report: tuple[KbReport, str, Page]
) -> None:
    _, _, page = sample_report
    active = sample_kb.stats().experiences_by_status["active"]
    for table in ("utility-histogram", "quality-histogram", "maintenance-histogram"):
        rows = page.tables[table]
        assert rows[-1][0] == "total" and int(rows[-1][1]) == active
        assert sum(int(count) for _, count in rows[:-1]) == active
    lowest = [float(v) for v in page.column("lowest-utility", "utility")]
    assert len(lowest) == min(20, active) and lowest == sorted(lowest)


# -- hand-made experiences -----------------------------------------------------------------------------


def test_utility_quality_and_maintenance_score_of_active_experiences_only(kb: KnowledgeBase) -> None:
    kb.add_experiences([
        # Values sit inside bins, away from their edges.
        hand_made("stale", quality=0.95, created_at=NOW - timedelta(days=60)),  # two half-lives: 0.2375
        hand_made("used a month ago", quality=0.75, created_at=NOW - timedelta(days=90),
                  last_used_at=NOW - timedelta(days=30), retrieved=4, used=2, succeeded=1),  # 0.375
        hand_made("fresh", quality=1.0, created_at=NOW, scope="private", owner_agent="agent-a"),  # 1.0
        hand_made("archived", quality=0.1, created_at=NOW, status="archived"),
        hand_made("rejected", quality=0.1, created_at=NOW, status="rejected"),
    ])
    report = build_report(kb, now=NOW)
    page = Page(render_html(report))
    assert_self_contained(page)
    assert report.utility.active == 3
    assert report.utility.utility.counts == [0, 0, 1, 1, 0, 0, 0, 0, 0, 1]
    assert report.utility.quality.counts == [0, 0, 0, 0, 0, 0, 0, 1, 0, 2]
    assert [e.problem for e in report.utility.lowest] == ["stale", "used a month ago", "fresh"]
    assert [round(e.utility, 6) for e in report.utility.lowest] == [0.2375, 0.375, 1.0]
    used = report.utility.lowest[1]
    assert used.maintenance_score == pytest.approx(maintenance_score(1, 2, 4))
    assert report.utility.never_used == 2
    assert page.column("lowest-utility", "problem") == ["stale", "used a month ago", "fresh"]
    assert page.column("lowest-utility", "r/u/s")[1] == "4/2/1"
    assert int(page.tables["utility-histogram"][-1][1]) == 3
    assert page.counts("experiences-by-scope") == {"private": 1, "shared": 4}
    assert page.counts("experiences-by-status") == {"active": 3, "archived": 1, "rejected": 1}
    # No concepts yet: the map says so instead of drawing an empty chart.
    assert report.concept_map.points == [] and "concept-map-svg" not in page.ids
    assert "No concepts with an embedding" in page.texts["concept-map"]


def test_feedback_shows_in_the_utility_section(kb: KnowledgeBase) -> None:
    ids = kb.add_experiences([hand_made("first"), hand_made("second")]).ids
    kb.record_feedback(retrieved=ids, used=[ids[0]], outcome=True)
    report = build_report(kb)
    by_id = {e.id: e for e in report.utility.lowest}
    assert (by_id[ids[0]].retrieved, by_id[ids[0]].used, by_id[ids[0]].succeeded) == (1, 1, 1)
    assert by_id[ids[0]].maintenance_score > 0 and by_id[ids[0]].last_used_at is not None
    assert by_id[ids[1]].maintenance_score == 0 and report.utility.never_used == 1


def test_an_empty_namespace_gives_a_valid_report_saying_it_is_empty(kb: KnowledgeBase, tmp_path: Path) -> None:
    report = build_report(kb)
    assert report.empty
    path = write_report(report, tmp_path / "empty.html")
    page = Page(path.read_text(encoding="utf-8"))
    assert_self_contained(page)
    assert f"Namespace {kb.namespace} is empty" in page.texts["empty-notice"]
    assert page.counts("nodes-by-label") == {} and page.counts("experiences-by-status") == {}
    assert page.tables["domain-table"] == [["no domains"]] and page.tables["meta-concept-table"] == [["no meta-concepts"]]
    assert not [tag for tag, _ in page.tags if tag == "svg"]
    assert "No active experiences" in page.texts["utility"]


def test_html_in_texts_from_the_graph_is_escaped(kb: KnowledgeBase) -> None:
    problem = '<script>alert("x")</script> & <img src=x onerror=alert(1)> refund'
    domain = "<i onclick=alert(2)>support</i>"
    kb.add_experiences([hand_made(problem, domain=domain)])
    text = render_html(build_report(kb))
    page = Page(text)
    assert_self_contained(page)  # no script, no img, no on* attribute anywhere
    assert "<script" not in text and "<img" not in text and "<i onclick" not in text
    assert page.column("lowest-utility", "problem") == [problem]
    assert page.column("domain-table", "domain") == [domain]
    assert "&lt;i onclick=alert(2)&gt;support&lt;/i&gt;" in text  # the domain chart's label, as SVG text


def test_control_characters_from_the_graph_are_shown_as_escapes_in_tables_and_charts(kb: KnowledgeBase) -> None:
    # A bidi override would reverse what the reader sees; ESC and C1 codes have no business in a page.
    hostile = "refund\x1b[31m \x9b2J \u202eevil\u2066x\u2069 \x07"
    kb.add_experiences([hand_made(f"problem {hostile}", domain=f"support {hostile}")])
    text = render_html(build_report(kb))
    assert not any(c in text for c in "\x1b\x07\x9b\u202e\u2066\u2069")
    page = Page(text)
    shown = "refund\\x1b[31m \\x9b2J \\u202eevil\\u2066x\\u2069 \\x07"
    assert page.column("lowest-utility", "problem") == [f"problem {shown}"]
    assert page.column("domain-table", "domain") == [f"support {shown}"]
    assert text.count(f"support {shown}") >= 2  # the table and the domain chart's SVG label


def test_a_report_that_cannot_be_written_is_one_clear_error(kb: KnowledgeBase, tmp_path: Path) -> None:
    with pytest.raises(KbgraphError, match="cannot write the report to .*missing/report.html: No such file"):
        write_report(build_report(kb), tmp_path / "missing" / "report.html")
    assert not list(tmp_path.iterdir())


def test_another_namespaces_data_never_appears(
    kb: KnowledgeBase, sample_kb: KnowledgeBase, sample_report: tuple[KbReport, str, Page]
) -> None:
    kb.add_experiences([hand_made("zebra-isolation-marker problem", domain="zebra-isolation-domain")])
    samples = render_html(build_report(sample_kb))
    assert "zebra-isolation" not in samples
    assert Page(samples).counts("nodes-by-label") == sample_report[2].counts("nodes-by-label")
    mine = Page(render_html(build_report(kb)))
    assert mine.column("domain-table", "domain") == ["zebra-isolation-domain"]
    assert mine.counts("nodes-by-label") == kb.stats().nodes
    assert mine.tables["meta-concept-table"] == [["no meta-concepts"]]


# -- the command line ----------------------------------------------------------------------------------


def kbgraph(target: Neo4jTarget, namespace: str, embedder: CachedEmbedder, *args: str, cwd: Path
            ) -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` in this process, in ``cwd`` (tests/cli_in_process.py), sharing the session's MiniLM."""
    return run_kbgraph(target.env(namespace), *args, embedder=embedder, cwd=cwd)


def test_the_cli_writes_the_file_and_prints_its_path(kb: KnowledgeBase, neo4j_target: Neo4jTarget,
                                                     embedder: CachedEmbedder, tmp_path: Path) -> None:
    kb.add_experiences([hand_made("one"), hand_made("two", domain="billing")])
    result = kbgraph(neo4j_target, kb.namespace, embedder, "report", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    default = tmp_path / f"kbgraph-report-{kb.namespace}.html"
    assert result.stdout.strip() == str(default.resolve())
    page = Page(default.read_text(encoding="utf-8"))
    assert_self_contained(page)
    assert sorted(page.column("domain-table", "domain")) == ["billing", "support"]

    chosen = tmp_path / "out" / "kb.html"
    chosen.parent.mkdir()
    as_json = kbgraph(neo4j_target, kb.namespace, embedder, "report", "-o", str(chosen), "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    summary = json.loads(as_json.stdout)
    assert summary["path"] == str(chosen.resolve()) and chosen.is_file() and summary["bytes"] == chosen.stat().st_size
    assert (summary["namespace"], summary["experiences"], summary["active"], summary["domains"]) == \
        (kb.namespace, 2, 2, 2)


def test_the_cli_refuses_an_output_it_cannot_write_before_connecting(
    neo4j_target: Neo4jTarget, namespace: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    for output, reason in ((tmp_path / "missing" / "r.html", "no folder"), (tmp_path, "is a folder")):
        result = kbgraph(neo4j_target, namespace, embedder, "report", "-o", str(output), cwd=tmp_path)
        assert result.returncode == 2
        assert reason in result.stderr and "Traceback" not in result.stderr


# -- the pieces, without a database --------------------------------------------------------------------


def test_histogram_counts_every_value_clipping_outliers_into_the_end_bins() -> None:
    result = histogram([-0.5, 0.0, 0.05, 0.5, 0.99, 1.0, 7.0])
    assert result.edges[0] == 0.0 and result.edges[-1] == 1.0 and len(result.counts) == 10
    assert result.counts[0] == 3 and result.counts[5] == 1 and result.counts[-1] == 3
    assert result.total == 7 and histogram([]).total == 0


def test_utility_decays_with_the_half_life_and_usage_impact_adds_to_it() -> None:
    row = {"id": "e", "problem": "p", "domain": "d", "kind": "concrete", "quality": 0.8, "retrieved": 0,
           "used": 0, "succeeded": 0, "usage_impact": 0.1, "usage_impact_at": NOW - timedelta(days=10),
           "last_used_at": None, "created_at": NOW - timedelta(days=10)}
    summary = summarise_utility([row], NOW, half_life_days=10.0)
    assert summary.lowest[0].utility == pytest.approx(0.45)
    assert summarise_utility([row], NOW, half_life_days=0.0).lowest[0].utility == pytest.approx(0.9)
    assert summary.mean_utility == pytest.approx(0.45) and summarise_utility([], NOW, 30.0).mean_utility is None


def test_small_sets_are_projected_with_pca_and_always_the_same_way() -> None:
    vectors = np.random.default_rng(7).normal(size=(6, 384))
    first, method, notes = project_2d(vectors)
    assert method == "pca" and notes == [] and first.shape == (6, 2)
    assert np.array_equal(first, project_2d(vectors)[0])
    assert project_2d(vectors[:1])[0].tolist() == [[0.0, 0.0]]
    assert project_2d(np.zeros((0, 384)))[1] == "none"


def test_a_failing_umap_falls_back_to_pca_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import umap

    class BrokenUMAP:
        def __init__(self, **_options: Any):
            raise RuntimeError("numba is not available")

    monkeypatch.setattr(umap, "UMAP", BrokenUMAP)
    points, method, notes = project_2d(np.random.default_rng(1).normal(size=(20, 8)))
    assert method == "pca" and points.shape == (20, 2) and np.isfinite(points).all()
    assert notes and "numba is not available" in notes[0]


def _rows(count: int, embedding: bool = True, size: int = 4) -> list[dict[str, Any]]:
    rng = np.random.default_rng(3)
    return [{"id": f"c{n:03d}", "label": f"concept {n}", "embedding": rng.normal(size=size).tolist() if embedding else None,
             "meta_id": f"m{n % 3}", "meta_name": f"meta {n % 3}"} for n in range(count)]


def test_the_map_falls_back_to_experiences_when_concepts_have_no_embedding() -> None:
    with_vectors = concept_map(_rows(5), lambda: pytest.fail("experiences read although concepts have vectors"))
    assert with_vectors.source == "concepts" and len(with_vectors.points) == 5

    fallback = concept_map(_rows(5, embedding=False), lambda: _rows(4))
    assert fallback.source == "experiences" and len(fallback.points) == 4
    assert "no concept carries an embedding" in fallback.notes[0]
    assert concept_map([], lambda: []).source == "none"


def test_the_map_leaves_out_odd_sized_embeddings_and_samples_above_its_limit() -> None:
    rows = _rows(8) + _rows(1, size=3)
    rows[-1]["id"] = "odd"
    odd = concept_map(rows, lambda: [])
    assert odd.without_embedding == 1 and "odd" not in {p.id for p in odd.points}

    sampled = concept_map(_rows(12), lambda: [], limit=4)
    assert [p.id for p in sampled.points] == ["c000", "c004", "c007", "c011"] and sampled.candidates == 12
    assert "showing 4" in sampled.notes[0]
    assert all(math.isfinite(p.x) and math.isfinite(p.y) for p in sampled.points)
