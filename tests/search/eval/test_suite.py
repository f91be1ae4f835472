"""The development suite (``kbgraph eval --suite``): every set in one table, kbgraph next to every
baseline and to itself with each mechanism switched off; leave-one-domain-out sets answered from a
namespace that never saw the query's domain."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.settings import NAMESPACE_PATTERN
from kbgraph.embedders import Embedder
from kbgraph.kb import KnowledgeBase
from kbgraph.search.eval.cached_namespace import fingerprint_of, stamp, stamped
from kbgraph.search.eval.evaluate import eval_namespace
from kbgraph.search.eval.recipes import Recipes
from kbgraph.search.eval.suite import ABLATIONS, BASELINES, SuiteReport, SuiteSet, corpus_files, discover_sets, run_suite
from kbgraph.search.params import SearchWeights
from tests.conftest import SHARED_DATA, Neo4jTarget

SAMPLES = resources.files("kbgraph") / "samples"


def _write(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _sample_runs(domain: str) -> list[dict[str, object]]:
    rows = [json.loads(line) for name in ("trajectories.jsonl", "real_runs.jsonl")
            for line in (SAMPLES / name).read_text().splitlines() if line.strip()]
    return [row for row in rows if row["domain"] == domain]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Three single-domain files of the bundled samples: hotel runs, airline and retail trajectories."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for domain in ("hotel", "airline", "retail"):
        _write(folder / f"{domain}.jsonl", _sample_runs(domain))
    return folder


@pytest.fixture
def suite_kbs(driver: neo4j.Driver, embedder: Embedder, neo4j_target: Neo4jTarget) -> Iterator[Callable[[str], Any]]:
    """The suite's way of opening a namespace, on the test's server; every namespace it opened is
    cleared afterwards."""
    opened: list[str] = []

    @contextmanager
    def open_kb(name: str) -> Iterator[KnowledgeBase]:
        opened.append(name)
        yield KnowledgeBase(driver, embedder, namespace=name, database=neo4j_target.database)

    yield open_kb
    for name in set(opened):
        KnowledgeBase(driver, embedder, namespace=name, database=neo4j_target.database, ensure_schema=False).clear()


def test_every_ablation_names_real_weights() -> None:
    for name, recipe in ABLATIONS.items():
        SearchWeights().merged(recipe.changes)  # an unknown or out-of-range weight raises
        assert recipe.changes and recipe.name == name, name


def test_ablations_are_chosen_by_name_and_an_unknown_one_is_refused() -> None:
    assert list(ABLATIONS.chosen(["lexical_off", "traversal_off"])) == ["lexical_off", "traversal_off"]
    assert ABLATIONS.chosen(None) is ABLATIONS and len(ABLATIONS.chosen([])) == 0
    assert ABLATIONS.chosen(["intent_off"]).changes() == {"intent_off": {"intent.weight": 0.0}}
    with pytest.raises(InvalidInputError, match="unknown nope"):
        ABLATIONS.chosen(["nope"])
    with pytest.raises(InvalidInputError, match="weights of lexical_off"):
        ABLATIONS["lexical_off"].checked({"no_such_weight": 1})


def test_the_suite_finds_the_shared_sets_and_the_projects_own(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("short_retail", "lodo", "alternative", "transient"):
        (dev / f"{name}_queries.jsonl").write_text("")
        (dev / f"{name}_qrels.jsonl").write_text("")
    found = {s.name: s for s in discover_sets(SHARED_DATA, dev, cache_dir=tmp_path / "cache")}
    assert {"retail", "webarena", "real_same", "real_other", "short_retail", "lodo", "alternative", "transient"} <= set(found)
    assert found["real_same"].corpus == SHARED_DATA / "real_runs"
    assert found["short_retail"].corpus == SHARED_DATA / "trajectories"
    # What worked after a failed step: only the real runs hold failed steps.
    assert found["alternative"].corpus == SHARED_DATA / "real_runs"
    assert found["lodo"].hold_out_domain and not found["short_retail"].hold_out_domain
    # Calls retried after a transient error: the gold runs so changed, made in the cache.
    transient = found["transient"].corpus
    assert transient.parent == tmp_path / "cache" / "dev-corpora"
    assert sorted(p.name for p in transient.glob("*.jsonl")) == sorted(p.name for p in (SHARED_DATA / "trajectories").glob("*.jsonl"))
    assert [s.name for s in discover_sets(SHARED_DATA, dev, ["lodo", "retail"])] == ["retail", "lodo"]
    with pytest.raises(InvalidInputError, match="unknown set nope"):
        discover_sets(SHARED_DATA, dev, ["nope"])


def test_holding_out_a_domain_drops_its_files_and_names_a_namespace_of_its_own(corpus: Path, tmp_path: Path) -> None:
    assert [p.name for p in corpus_files(corpus, "hotel")] == ["airline.jsonl", "retail.jsonl"]
    assert len(corpus_files(corpus)) == 3
    whole, minus = eval_namespace(corpus), eval_namespace(corpus, "hotel")
    assert minus != whole and "minus-hotel" in minus and re.fullmatch(NAMESPACE_PATTERN, minus)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    _write(mixed / "both.jsonl", _sample_runs("hotel") + _sample_runs("airline"))
    with pytest.raises(InvalidInputError, match="mixes airline, hotel; cannot hold out 'hotel'"):
        corpus_files(mixed, "hotel")


@pytest.mark.neo4j
def test_one_table_of_every_set_baseline_and_ablation_and_held_out_domains_stay_unseen(
    corpus: Path, tmp_path: Path, driver: neo4j.Driver, embedder: Embedder, neo4j_target: Neo4jTarget,
    suite_kbs: Callable[[str], Any],
) -> None:
    hotel = [str(row["id"]) for row in _sample_runs("hotel")]
    airline = [str(row["id"]) for row in _sample_runs("airline")]
    queries = [{"qid": "h1", "query": "A guest's card payment for two nights failed; book the room anyway", "domain": "hotel"},
               {"qid": "a1", "query": "Cancel my flight reservation and refund me", "domain": "airline"}]
    # The held-out set judges the hotel runs relevant to a hotel request: answered from a
    # namespace without the hotel file, no system may rank one of them (nDCG 0 for all).
    held_out = SuiteSet("lodo_test", _write(tmp_path / "lodo_queries.jsonl", queries[:1]),
                        _write(tmp_path / "lodo_qrels.jsonl", [{"qid": "h1", "doc_id": h, "rel": 1} for h in hotel]),
                        corpus, hold_out_domain=True)
    plain = SuiteSet("plain", _write(tmp_path / "plain_queries.jsonl", queries[1:]),
                     _write(tmp_path / "plain_qrels.jsonl", [{"qid": "a1", "doc_id": a, "rel": 1} for a in airline]),
                     corpus)
    report = run_suite(suite_kbs, embedder, [held_out, plain], on_progress=lambda *_: None)
    assert [row.set for row in report.rows] == ["lodo_test", "plain"]
    for row in report.rows:
        assert set(row.baselines) == set(BASELINES) and set(row.ablations) == set(ABLATIONS)
        assert row.margin == pytest.approx(row.kbgraph - max(row.baselines.values()), abs=1e-4)
        # No query excludes a run here, so no experience shows a query's own text.
        assert row.own_text_hidden == row.kbgraph and row.own_text_queries == 0
        assert row.per_query == {}, "figures query by query only when asked for"
    lodo, whole = report.rows
    assert lodo.kbgraph == 0 and all(v == 0 for v in [*lodo.baselines.values(), *lodo.ablations.values()])
    assert whole.kbgraph > 0, "the plain set is answered from the whole corpus"
    assert lodo.namespaces == [eval_namespace(corpus, "hotel")] and whole.namespaces == [eval_namespace(corpus)]
    records, _, _ = driver.execute_query("MATCH (e:Experience {kb: $kb}) RETURN DISTINCT e.domain AS domain",
                                         kb=lodo.namespaces[0], database_=neo4j_target.database)
    domains = {r["domain"] for r in records}
    assert domains and "hotel" not in domains
    assert report.worst_set in {"lodo_test", "plain"}


@pytest.mark.neo4j
def test_held_out_a_set_is_answered_from_a_namespace_that_never_held_its_queries_sources(
    corpus: Path, tmp_path: Path, driver: neo4j.Driver, embedder: Embedder, neo4j_target: Neo4jTarget,
    suite_kbs: Callable[[str], Any],
) -> None:
    airline = [str(row["id"]) for row in _sample_runs("airline")]
    source, others = airline[0], airline[1:]
    leave_one_out = SuiteSet(
        "loo", _write(tmp_path / "loo_queries.jsonl", [{"qid": "a1", "query": "Cancel my flight reservation and refund me",
                                                          "domain": "airline", "exclude": [source]}]),
        _write(tmp_path / "loo_qrels.jsonl", [{"qid": "a1", "doc_id": a, "rel": 1} for a in others]), corpus)
    plain = SuiteSet("plain", _write(tmp_path / "plain_queries.jsonl", [{"qid": "p1", "query": "Book a hotel room",
                                                                          "domain": "hotel"}]),
                     _write(tmp_path / "plain_qrels.jsonl", [{"qid": "p1", "doc_id": "none", "rel": 1}]), corpus)
    report = run_suite(suite_kbs, embedder, [leave_one_out, plain], ablations=Recipes(), on_progress=lambda *_: None,
                       held_out=True, cache_dir=tmp_path / "cache", per_query=True)
    loo, whole = report.rows
    # Asked for, every figure comes query by query too: one query here, so each equals the set's.
    assert set(loo.per_query) == {"a1"}
    assert set(loo.per_query["a1"]) == {"kbgraph", *BASELINES}
    assert loo.per_query["a1"]["kbgraph"] == loo.kbgraph
    assert all(loo.per_query["a1"][name] == loo.baselines[name] for name in BASELINES)
    assert whole.held_out is None, "a set that excludes nothing has nothing to hold out"
    held = loo.held_out
    assert held is not None and held.runs_left_out == 1 and held.namespace not in loo.namespaces
    assert set(held.baselines) == set(BASELINES)
    assert held.margin == pytest.approx(held.kbgraph - max(held.baselines.values()), abs=1e-4)
    assert held.per_query == {"a1": {"kbgraph": held.kbgraph, **held.baselines}}
    records, _, _ = driver.execute_query(
        "MATCH (e:Experience {kb: $kb}) UNWIND coalesce(e.source_ids, []) AS run RETURN collect(DISTINCT run) AS runs",
        kb=held.namespace, database_=neo4j_target.database)
    runs = set(records[0]["runs"])
    assert runs and source not in runs and set(others) <= runs



def test_a_report_saved_before_the_rows_shared_one_type_still_reads() -> None:
    # A row as the suite wrote it before (set first, per_query last; held_out with its own fields).
    old = {"k": 10, "weights": {}, "ablations": {"lexical_off": {"alpha": 0.0}}, "worst_set": "loo", "worst_margin": -0.1,
           "rows": [{"set": "loo", "queries": 1, "kbgraph": 0.5, "baselines": {"tfidf": 0.6}, "best_baseline": "tfidf",
                     "margin": -0.1, "ablations": {"lexical_off": 0.4}, "own_text_hidden": 0.5, "own_text_margin": -0.1,
                     "own_text_queries": 0, "held_out": {"kbgraph": 0.2, "baselines": {"tfidf": 0.1}, "best_baseline": "tfidf",
                                                          "margin": 0.1, "namespace": "eval-x", "runs_left_out": 1,
                                                          "queries": 1, "per_query": {"a1": {"kbgraph": 0.2}}},
                     "seconds": 1.0, "namespaces": ["eval-y"], "per_query": {"a1": {"kbgraph": 0.5}}}]}
    report = SuiteReport.model_validate_json(json.dumps(old))
    row = report.rows[0]
    assert row.held_out is not None and row.held_out.per_query == {"a1": {"kbgraph": 0.2}}
    # Nothing it held is lost; it has no own-text view of its own (written before 2026-12-04).
    assert row.own_text is None
    assert json.loads(report.model_dump_json()) == {**old, "rows": [{**old["rows"][0], "own_text": None}]}


@pytest.mark.neo4j
def test_runs_merged_under_a_querys_own_text_are_left_out_for_every_system_in_the_own_text_view(
    tmp_path: Path, embedder: Embedder, suite_kbs: Callable[[str], Any],
) -> None:
    # retail-train-55 is merged under retail-train-491's text (tests/search/eval/test_shown_text.py).
    # A request written from 491 can reach 55 through no text but its own; a baseline, ranking runs
    # one by one, could. In the own-text view no system may: 55 is left out for all, and the
    # request, whose one relevant run it was, is judged by none there, as it still is in the plain view.
    wanted = {"retail-train-491", "retail-train-55"}
    rows = [line for line in (SHARED_DATA / "trajectories" / "retail_train.jsonl").read_text().splitlines()
            if line.strip() and json.loads(line)["id"] in wanted]
    assert len(rows) == 2, "the shared data is missing its retail gold runs"
    folder = tmp_path / "pair"
    folder.mkdir()
    (folder / "retail.jsonl").write_text("\n".join(rows) + "\n")
    request = {"qid": "r1", "query": "Cancel one order I placed by mistake and change an item of another",
               "domain": "retail", "exclude": ["retail-train-491"]}
    own = SuiteSet("own", _write(tmp_path / "own_queries.jsonl", [request]),
                   _write(tmp_path / "own_qrels.jsonl", [{"qid": "r1", "doc_id": "retail-train-55", "rel": 1}]), folder)
    (row,) = run_suite(suite_kbs, embedder, [own], ablations=Recipes(), on_progress=lambda *_: None,
                       per_query=True).rows
    assert set(row.per_query) == {"r1"} and row.queries == 1
    view = row.own_text
    assert view is not None and (view.hiding, view.unjudged, view.runs_left_out) == (1, 1, 1)
    assert view.queries == 0 and view.per_query == {} and set(view.baselines) == set(BASELINES)
    assert row.own_text_queries == 1 and row.own_text_hidden == view.kbgraph == 0.0


@pytest.mark.neo4j
def test_a_kept_namespace_gives_the_figures_of_the_day_it_was_built_whatever_day_the_suite_runs_on(
    corpus: Path, tmp_path: Path, driver: neo4j.Driver, embedder: Embedder, neo4j_target: Neo4jTarget,
    suite_kbs: Callable[[str], Any],
) -> None:
    queries = [{"qid": "a1", "query": "Cancel my flight reservation and refund me", "domain": "airline"},
               {"qid": "r1", "query": "Return the items of a delivered order", "domain": "retail"}]
    qrels = [{"qid": "a1", "doc_id": str(row["id"]), "rel": 1} for row in _sample_runs("airline")]
    qrels += [{"qid": "r1", "doc_id": str(row["id"]), "rel": 1} for row in _sample_runs("retail")]
    aging = SuiteSet("aging", _write(tmp_path / "aging_queries.jsonl", queries), _write(tmp_path / "aging_qrels.jsonl", qrels),
                     corpus)
    # Utility in full, and a floor a search of a namespace 100 days old clears with no hit.
    weights = {"outcomes.utility_weight": 1.0, "selection.threshold": 0.1}

    def figures() -> dict[str, dict[str, float]]:
        notes: list[str] = []
        (row,) = run_suite(suite_kbs, embedder, [aging], weights=weights, ablations=Recipes(),
                           on_progress=lambda *_: None, per_query=True, note=notes.append).rows
        assert notes == [], "the namespace is built once, then reused"
        return row.per_query

    fresh = figures()
    assert fresh["a1"]["kbgraph"] > 0 and fresh["r1"]["kbgraph"] > 0
    # 100 days pass: every time the namespace holds, and when it was built, move back 100 days (it
    # is stamped again with what it then holds, as if it had been built then).
    namespace = eval_namespace(corpus)
    with suite_kbs(namespace) as kb:
        driver.execute_query("MATCH (n {kb: $kb}) WHERE n.created_at IS NOT NULL "
                             "SET n.created_at = n.created_at - duration({days: 100})",
                             kb=namespace, database_=neo4j_target.database)
        built = stamped(kb.gateway, namespace)
        assert built is not None and built.built_at is not None
        stamp(kb.gateway, namespace, fingerprint_of(kb.gateway, namespace, corpus_files(corpus)).model_copy(
            update={"built_at": built.built_at - timedelta(days=100)}))
        # Searched by the clock, it has aged: no hit clears the floor.
        assert kb.search("Cancel my flight reservation and refund me", domain="airline", weights=weights).hits == []
    assert figures() == fresh, "searched as of the day it was built, it ranks as it did then"
