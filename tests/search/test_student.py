"""Student-phase search on a real Neo4j with the real MiniLM: what an agent gets back, and why."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from importlib import resources

import neo4j
import numpy as np
import pytest

from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.settings import Settings
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, Relation, Step
from kbgraph.search.student import retriever
from kbgraph.search.explain import explain_results
from kbgraph.search.candidates import index_query
from kbgraph.search.params import MAX_QUERY_CHARS, SearchWeights
from kbgraph.search.scoring import path_score
from tests.one_utc_day import on_one_utc_day, utc_today
from tests.search.test_vector_model import kept_current


def steps(*actions: str) -> list[Step]:
    return [Step(action=a, text=a.replace("_", " ")) for a in actions]


CANCEL = Experience(
    problem="Cancel order {id} because it was ordered by mistake.", goal="Get done: cancel pending order",
    domain="retail", steps=steps("find_user_id_by_name_zip", "get_order_details", "cancel_pending_order"),
    source_ids=["t-cancel-1", "t-cancel-2"],
)
RETURN = Experience(
    problem="Return {id} via {id}: Desk Lamp; Water Bottle;", goal="Get done: return delivered order items",
    domain="retail", steps=steps("find_user_id_by_name_zip", "get_order_details", "return_delivered_order_items"),
    source_ids=["t-return-1"],
)
FLIGHT = Experience(
    problem="Book a one-way economy flight from JFK to SFO for two passengers.", goal="Get done: book reservation",
    domain="airline", steps=steps("search_direct_flight", "book_reservation"), source_ids=["t-flight-1"],
)
# Nothing in its text resembles a retail cancellation: only the ADAPTATION edge leads to it.
ADAPTED = Experience(
    problem="Quarantine the sandbox ledger shard zeta for auditing.", goal="Get done: freeze ledger shard",
    domain="banking", steps=steps("freeze_ledger_shard"), source_ids=["t-adapted-1"],
)


def with_relation(exp: Experience, relation: str, target: Experience, weight: float) -> Experience:
    return exp.model_copy(update={"relations": [Relation(type=relation, target_id=target.key, weight=weight,
                                                         reason="test fixture")]})


@pytest.fixture
def retail_kb(kb: KnowledgeBase) -> KnowledgeBase:
    kb.add_experiences([ADAPTED, RETURN, FLIGHT])
    kb.add_experiences([with_relation(CANCEL, "ADAPTATION", ADAPTED, 0.9)])
    return kb


def test_a_task_finds_the_experience_that_solved_it_and_explains_the_score(retail_kb: KnowledgeBase) -> None:
    results = retail_kb.search("I ordered this by mistake, please cancel my order", domain="retail", k=3)
    top = results.hits[0]
    assert top.id == CANCEL.key and top.rank == 1
    assert top.experience.goal == CANCEL.goal and [s.action for s in top.experience.steps][-1] == "cancel_pending_order"
    assert top.experience.pg_embedding is None, "results do not carry embeddings"
    assert "vector:experience_pg_embedding" in top.found_by
    b = top.breakdown
    assert 0 < b.semantic <= 1 and b.structural is not None and b.trans == 1.0 and b.fine is None
    # A task without executed steps has no shape of its own: its words decide, the workflow shape
    # only as far as the words leave the request uncovered (intent_structure_weight), and what the
    # workflow changes (intent, tests/search/test_intent_channel.py).
    assert b.intent is not None
    parts = (b.textual, b.structural, b.intent)
    assert min(parts) - 1e-5 <= b.coarse <= max(parts) + 1e-5
    words_only = retail_kb.search("I ordered this by mistake, please cancel my order", domain="retail", k=3,
                                  weights={"intent_structure_weight": 0.0, "intent_weight": 0.0}).hits[0].breakdown
    assert words_only.coarse == pytest.approx(words_only.textual, abs=1e-5)
    shaped = retail_kb.search("I ordered this by mistake, please cancel my order", domain="retail", k=3,
                              weights={"task_structure_weight": 0.8, "intent_weight": 0.0}).hits[0].breakdown
    assert shaped.coarse == pytest.approx(0.2 * shaped.textual + 0.8 * shaped.structural, abs=1e-5)
    assert top.score == pytest.approx(b.final) and b.final == pytest.approx(b.direct, abs=1e-5)
    assert [h.score for h in results.hits] == sorted((h.score for h in results.hits), reverse=True)
    assert results.timings_ms["retrieval"] > 0 and "embed" in results.timings_ms


def test_another_domain_is_weighed_down_by_transferability(retail_kb: KnowledgeBase) -> None:
    results = retail_kb.search("book a flight for two passengers", domain="retail", k=5)
    flight = next(h for h in results.hits if h.id == FLIGHT.key)
    assert 0 < flight.breakdown.trans < 1
    same_domain = retail_kb.search("book a flight for two passengers", domain="airline", k=5)
    assert next(h for h in same_domain.hits if h.id == FLIGHT.key).breakdown.trans == 1.0


def test_a_task_statement_without_steps_from_another_domain_is_no_answer_here(retail_kb: KnowledgeBase) -> None:
    # A web intent: its words are the request's, but it records no way of doing anything.
    intent = Experience(problem="Cancel my order, I ordered it by mistake", goal="Complete: cancel my order",
                        domain="web/shopping", steps=[], source_ids=["web-intent-1"])
    retail_kb.add_experiences([intent])
    request = "cancel my order, I ordered it by mistake"
    results = retail_kb.search(request, domain="retail", k=5)
    assert results.hits[0].id == CANCEL.key
    found = next((h for h in results.hits if h.id == intent.key), None)
    assert found is None or found.breakdown.trans == 0.0
    # In its own domain, and for a request that names none, it is a match like any other.
    at_home = retail_kb.search(request, domain="web/shopping", k=5)
    assert at_home.hits[0].id == intent.key and at_home.hits[0].breakdown.trans == 1.0
    anywhere = retail_kb.search(request, k=5)
    assert next(h for h in anywhere.hits if h.id == intent.key).breakdown.trans == 1.0


def basis(i: int, mix: tuple[int, float] | None = None) -> list[float]:
    v = np.zeros(384)
    v[i] = 1.0
    if mix is not None:
        v[mix[0]] += mix[1]
    return list(v / np.linalg.norm(v))


def vectors(i: int, mix: tuple[int, float] | None = None) -> dict[str, object]:
    """Hand-made embeddings, so which index returns what is known exactly."""
    v = basis(i, mix)
    return {"pg_embedding": v, "structure_embedding": v, "context_embedding": v}


def test_a_hit_reachable_only_through_an_edge_is_found_with_its_path(kb: KnowledgeBase) -> None:
    reached = Experience(problem="Freeze a ledger shard.", domain="banking", source_ids=["t-r"],
                         steps=[Step(action="freeze", text="freeze", embedding=basis(1))], **vectors(1))
    seed = Experience(problem="Cancel an order.", domain="retail", source_ids=["t-s"],
                      steps=[Step(action="cancel", text="cancel", embedding=basis(0))],
                      relations=[Relation(type="ADAPTATION", target_id=reached.key, weight=0.9, reason="fixture")],
                      **vectors(0))
    # Near the query, so they fill every channel's top 3, but they failed: they rank low.
    distractors = [Experience(problem=f"Cancel attempt {n}.", domain="retail", success_rate=0.0, source_ids=[f"t-{n}"],
                              steps=[Step(action="cancel", text=f"cancel {n}", embedding=basis(0, (2 + n, 0.5)))],
                              **vectors(0, (2 + n, 0.5))) for n in range(4)]
    kb.add_experiences([reached, *distractors])
    kb.add_experiences([seed])
    query = {"task": "cancel an order", "k": 3}
    # Traversal alone: the intent channel would find the reached node by what it changes.
    weights = {"alpha": 0.0, "candidates": 3, "max_hops": 2, "seeds": 10, "intent_weight": 0.0}
    results = kb.student.search(query, weights=weights, query_vectors={"pg": basis(0), "task": basis(0), "steps": []})
    by_id = {h.id: h for h in results.hits}
    assert results.ids()[:2] == [seed.key, reached.key]
    hit = by_id[reached.key]
    assert hit.found_by == ["edge:ADAPTATION"], "no index brought it in: its vectors are orthogonal to the query"
    assert hit.seed_id == seed.key and len(hit.path) == 1
    hop = hit.path[0]
    assert (hop.relation.value, hop.direction, hop.from_id, hop.to_id, hop.weight, hop.reason) == (
        "ADAPTATION", "out", seed.key, reached.key, 0.9, "fixture")
    w = SearchWeights()
    expected = path_score(by_id[seed.key].breakdown.direct, [0.9], w.hop_decay,
                          {t.value: v for t, v in w.edge_weights.items()}, ["ADAPTATION"], 1.0)
    assert hit.score == pytest.approx(expected, abs=1e-5) and hit.breakdown.hops == 1
    assert hit.breakdown.path == pytest.approx(expected, abs=1e-5)
    assert "ADAPTATION" in explain_results(results)
    # Traversal respects the filters, and takes no part with max_hops 0.
    filtered = kb.student.search(query, weights=weights, filters={"domains": ["retail"]},
                                 query_vectors={"pg": basis(0), "task": basis(0), "steps": []})
    assert reached.key not in filtered.ids()
    flat = kb.student.search(query, weights={"alpha": 0.0, "candidates": 3, "max_hops": 0},
                             query_vectors={"pg": basis(0), "task": basis(0), "steps": []})
    assert reached.key not in flat.ids()


def test_a_query_of_only_executed_steps_ranks_by_the_steps(retail_kb: KnowledgeBase) -> None:
    results = retail_kb.search(steps_so_far=[
        {"action": "get_order_details", "arguments": {"order_id": "#W123"}},
        {"action": "return_delivered_order_items", "arguments": {"order_id": "#W123", "item_ids": ["1"]}},
    ])
    top = results.hits[0]
    assert top.id == RETURN.key
    # No task text: the executed workflow is searched in the structural index, and the fine
    # score takes over as steps accumulate.
    assert top.breakdown.semantic == 0.0 and top.breakdown.structural is not None
    assert top.breakdown.lam == pytest.approx(math.exp(-0.25 * 2))
    assert top.breakdown.fine is not None and top.breakdown.fine > 0.5
    assert "vector:step_embedding" in top.found_by


def test_steps_so_far_shift_the_weight_from_the_task_to_the_steps(retail_kb: KnowledgeBase) -> None:
    task = "I need help with my order"
    before = retail_kb.search(task, domain="retail").hits[0].breakdown
    after = retail_kb.search(task, domain="retail", steps_so_far=[{"action": "get_order_details"},
                                                                   {"action": "cancel_pending_order"}]).hits[0].breakdown
    assert before.lam == 1.0 and before.fine is None
    assert after.lam == pytest.approx(math.exp(-0.25 * 2)) and after.fine is not None


def test_filters_restrict_what_comes_back(kb: KnowledgeBase) -> None:
    archived = RETURN.model_copy(update={"problem": "Return a lamp that arrived broken.", "status": "archived", "id": None})
    archived = Experience.model_validate(archived.model_dump(exclude={"id"}))
    weak = Experience.model_validate({**CANCEL.model_dump(exclude={"id", "relations"}),
                                      "problem": "Cancel a pending order (failed attempt).", "success_rate": 0.2, "quality": 0.1})
    private = Experience.model_validate({**CANCEL.model_dump(exclude={"id", "relations"}),
                                         "problem": "Cancel an order the way agent-7 prefers.", "scope": "private",
                                         "owner_agent": "agent-7"})
    kb.add_experiences([CANCEL, RETURN, FLIGHT, archived, weak, private])
    query = "cancel or return my order"

    def ids(**options: object) -> set[str]:
        return set(kb.search(query, k=20, **options).ids())  # type: ignore[arg-type]

    everything = ids()
    assert {CANCEL.key, RETURN.key, FLIGHT.key, weak.key} <= everything
    assert archived.key not in everything and private.key not in everything
    assert ids(filters={"domains": ["airline"]}) == {FLIGHT.key}
    assert ids(filters={"kinds": ["abstract"]}) == set()
    assert weak.key not in ids(filters={"min_success": 0.5})
    assert weak.key not in ids(filters={"min_quality": 0.3})
    with pytest.raises(InvalidInputError, match="statuses"):
        ids(filters={"statuses": ["active", "archived"]})
    assert private.key in ids(agent="agent-7") and private.key not in ids(agent="agent-8")
    assert CANCEL.key not in ids(exclude=[CANCEL.key])
    assert RETURN.key not in ids(exclude=["t-return-1"]), "an experience standing only for excluded trajectories"
    assert CANCEL.key in ids(exclude=["t-cancel-1"]), "one of its two trajectories is left"


@pytest.mark.parametrize("exact_scan_max", [2000, 0], ids=["small namespace scanned", "above the scan limit"])
def test_namespaces_never_see_each_other_even_when_one_crowds_the_index(
    kb: KnowledgeBase, driver: neo4j.Driver, embedder: CachedEmbedder, exact_scan_max: int
) -> None:
    kb.add_experiences([CANCEL])
    crowd = KnowledgeBase(driver, embedder, namespace=kb.namespace + "-crowd", database=kb.gateway.database)
    try:
        crowd.add_experiences([
            Experience(problem=f"Cancel pending order number {n} because it was ordered by mistake.",
                       goal="Get done: cancel pending order", domain="retail",
                       steps=steps("get_order_details", "cancel_pending_order"))
            for n in range(60)
        ])
        weights = {"candidates": 1, "exact_scan_max": exact_scan_max}
        results = kb.search("cancel my order, ordered by mistake", domain="retail", weights=weights,
                            steps_so_far=[{"action": "get_order_details"}])
        assert results.ids() == [CANCEL.key]
        crowd_ids = set(crowd.search("cancel my order", k=100, weights={"exact_scan_max": exact_scan_max}).ids())
        assert CANCEL.key not in crowd_ids and len(crowd_ids) == 60
    finally:
        crowd.clear()


def record_reads(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, asked: list[str]) -> None:
    """From now on, the name of every query ``kb`` reads goes to ``asked``."""
    read = kb.gateway.read

    def recording_read(name: str, **params: object) -> list[dict[str, object]]:
        asked.append(name)
        return read(name, **params)

    monkeypatch.setattr(kb.gateway, "read", recording_read)


def test_a_small_namespace_is_scanned_exactly_whatever_else_the_database_holds(
    kb: KnowledgeBase, driver: neo4j.Driver, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HNSW is approximate and shared by every namespace: the candidates (and with them the fine
    # score and the lexical statistics) of a small namespace changed with what other namespaces
    # held. Below exact_scan_max nodes, every channel scans the namespace instead. (Utility without
    # decay: otherwise every score drifts by millionths while the crowd is written.)
    kb = KnowledgeBase(driver, embedder, namespace=kb.namespace, database=kb.gateway.database,
                       settings=Settings(learning={"utility_half_life_days": 0}))
    kb.add_experiences([CANCEL, RETURN, FLIGHT])
    query = {"domain": "retail", "steps_so_far": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}}]}

    def answer() -> list[tuple[str, float, float | None]]:
        hits = kb.search("I ordered this by mistake, please cancel my order", **query).hits
        return [(h.experience.id, round(h.score, 6), h.breakdown.fine) for h in hits]

    alone = answer()
    crowd = KnowledgeBase(driver, embedder, namespace=kb.namespace + "-crowd", database=kb.gateway.database)
    asked: list[str] = []
    try:
        crowd.add_experiences([
            Experience(problem=f"Order {n} was ordered by mistake: cancel it.", goal="Get done: cancel pending order",
                       domain="retail", steps=steps("get_order_details", "get_order_details", "cancel_pending_order"))
            for n in range(80)
        ])
        record_reads(kb, monkeypatch, asked)
        assert answer() == alone
        assert {"search_experience_scan", "search_step_scan"} <= set(asked)
        assert not {"search_experience_vectors", "search_step_vectors"} & set(asked)

        # A namespace above the limit: once what the process keeps of the namespace (its vectors, texts,
        # facts and step texts) is current at its version (read in the background), the channels
        # answer from it, the step channel too.
        kept_current(kb)
        asked.clear()
        above = kb.search("I ordered this by mistake, please cancel my order", weights={"exact_scan_max": 0}, **query)
        assert "search_version_of" in asked and "search_experience_vector_rows" not in asked
        assert index_query(kb.gateway, "search_experience_vectors", "experience_pg_embedding") not in asked
        assert not {index_query(kb.gateway, "search_step_vectors", "step_text_embedding"), "search_step_scan"} & set(asked)
        assert [h.experience.id for h in above.hits] == [i for i, _, _ in alone]

        asked.clear()  # a quality floor, which feedback moves without a new version, asks the indexes
        kb.search("I ordered this by mistake, please cancel my order", weights={"exact_scan_max": 0},
                  filters={"min_quality": 0.1}, **query)
        assert index_query(kb.gateway, "search_experience_vectors", "experience_pg_embedding") in asked
        assert "search_experience_vector_rows" not in asked
    finally:
        crowd.clear()


def test_an_empty_knowledge_base_answers_with_nothing(kb: KnowledgeBase) -> None:
    results = kb.search("anything at all", domain="retail", steps_so_far=[{"action": "get_order_details"}])
    assert results.hits == [] and results.concepts == []
    assert "no experience matched" in explain_results(results)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ({"task": ""}, "nothing to search for"),
        ({"task": "   "}, "nothing to search for"),
        ({"task": "x" * 100_000}, f"at most {MAX_QUERY_CHARS} characters"),
        ({"task": "cancel", "k": 0}, "k: Input should be greater than or equal to 1"),
        ({"task": "cancel", "weights": {"alpha": float("nan")}}, "weights: alpha"),
        ({"task": "cancel", "weights": {"alpha": 1.5}}, "weights: alpha"),
        ({"task": "cancel", "weights": {"no_such_weight": 1}}, "weights: no_such_weight"),
        ({"task": "cancel", "weights": {"edge_weights": {"FRIEND_OF": 0.5}}}, "unknown relation 'FRIEND_OF'"),
        ({"task": "cancel", "filters": {"statuses": ["rejected"]}}, "filters: statuses"),
        ({"task": "cancel", "steps_so_far": [{"action": " "}]}, "steps_so_far.0.action"),
    ],
)
def test_absurd_queries_are_rejected_with_a_message_naming_the_field(
    retail_kb: KnowledgeBase, call: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        retail_kb.search(**call)  # type: ignore[arg-type]
    assert message in str(raised.value)


def test_a_huge_k_is_clamped_with_a_note(retail_kb: KnowledgeBase) -> None:
    results = retail_kb.search("cancel my order", k=10_000)
    assert any("clamped to 100" in note for note in results.notes)
    assert len(results.hits) == 4


def test_mmr_diversifies_when_asked(kb: KnowledgeBase) -> None:
    twins = [Experience(problem=f"Cancel order {{id}} because it was ordered by mistake{'!' * n}",
                        goal="Get done: cancel pending order", domain="retail", steps=steps("cancel_pending_order"))
             for n in range(3)]
    kb.add_experiences([*twins, RETURN])
    plain = kb.search("cancel my order", domain="retail", k=2).ids()
    diverse = kb.search("cancel my order", domain="retail", k=2, weights={"mmr_lambda": 0.3}).ids()
    assert RETURN.key not in plain and RETURN.key in diverse


def test_utility_decays_up_to_the_day_the_search_is_given(kb: KnowledgeBase) -> None:
    # Two experiences alike in all but age: the older stored 30 days before the newer.
    born = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    fields = CANCEL.model_dump(exclude={"id", "created_at", "source_ids", "pg_embedding", "structure_embedding",
                                        "context_embedding"})
    older = Experience(**fields, id="cancel-older", created_at=born, source_ids=["t-older"])
    newer = Experience(**fields, id="cancel-newer", created_at=born + timedelta(days=30), source_ids=["t-newer"])
    kb.add_experiences([older, newer])

    def search_on(day: date | None) -> dict[str, tuple[int, float, float | None]]:
        kb.student.today = day
        hits = kb.search("I ordered this by mistake, please cancel my order", domain="retail", k=2).hits
        return {h.id: (h.rank, h.score, h.breakdown.utility) for h in hits}

    # On the older one's day neither has aged (the newer one's creation lies ahead: 0 days): a tie.
    first_day = search_on(born.date())
    assert first_day[older.key][1:] == first_day[newer.key][1:] == (first_day[older.key][1], 0.5)
    # 30 days after the newer one was stored, the older has decayed twice as long: it ranks lower.
    later = search_on(born.date() + timedelta(days=60))
    assert later[older.key][2] == pytest.approx(0.125) and later[newer.key][2] == pytest.approx(0.25)
    assert later[newer.key][0] == 1 and later[older.key][0] == 2 and later[older.key][1] < later[newer.key][1]
    assert search_on(born.date() + timedelta(days=60)) == later, "a day given, the same figures every time"
    # No day given (the default): the database's clock's, today in UTC.
    by_clock, on_today = on_one_utc_day(lambda: (search_on(None), search_on(utc_today())))
    assert by_clock == on_today and by_clock[newer.key][0] == 1


@pytest.fixture
def sample_kb(kb: KnowledgeBase) -> Iterator[KnowledgeBase]:
    with resources.as_file(resources.files("kbgraph") / "samples" / "trajectories.jsonl") as path:
        kb.ingest([path])
    yield kb


def test_on_an_ingested_kb_results_come_with_concept_documents(sample_kb: KnowledgeBase) -> None:
    results = sample_kb.search("a customer wants to return a damaged item and get a refund", k=5)
    assert results.hits and results.concepts
    assert all(c.document and 0 <= c.score <= 1 for c in results.concepts)
    assert len(results.concepts) <= 3
    assert any(h.experience.kind == "abstract" or h.path for h in sample_kb.search(
        "a customer wants to return a damaged item", k=20).hits), "abstractions take part in retrieval"


def test_concept_documents_of_a_small_namespace_are_scored_exactly_in_one_request(
    sample_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A namespace holds tens of documents: the scan returns what the shared index returns when it
    # finds them all, in one request, whatever other namespaces hold.
    query = "a customer wants to return a damaged item and get a refund"
    indexed = sample_kb.search(query, weights={"exact_scan_max": 0}).concepts
    asked: list[str] = []
    record_reads(sample_kb, monkeypatch, asked)
    scanned = sample_kb.search(query).concepts
    assert [c.id for c in scanned] == [c.id for c in indexed]
    # The index scores its quantised vectors: within a hundredth of the exact cosine.
    assert all(abs(a.score - b.score) < 0.01 for a, b in zip(scanned, indexed, strict=True))
    assert [c.score for c in scanned] == sorted((c.score for c in scanned), reverse=True)
    assert asked.count("search_meta_concepts_scan") == 1 and "search_meta_concepts" not in asked


def test_a_search_reads_the_scoring_facts_of_its_candidates_and_their_workflows_in_one_request(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing in the workflow's text resembles the task: only the instance leads to it.
    workflow = ADAPTED.model_copy(update={"kind": "abstract", "source_ids": []})
    kb.add_experiences([workflow, RETURN, FLIGHT])
    kb.add_experiences([with_relation(CANCEL, "ABSTRACTION", workflow, 0.9)])
    asked: list[str] = []
    record_reads(kb, monkeypatch, asked)
    # The intent channel would find the workflow by what it changes: this is about its instance.
    results = kb.search("cancel my order, I ordered it by mistake", domain="retail", k=3,
                        weights={"candidates": 1, "intent_weight": 0.0})
    scored = {h.experience.id: h for h in results.hits}
    assert scored[workflow.key].found_by == ["edge:ABSTRACTION"], "scored from its instance, not found by a channel"
    assert asked.count("search_candidates_score") == 1


def test_a_large_search_reads_its_facts_and_neighbours_in_two_halves_and_ranks_the_same(
    sample_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = "a customer wants to return a damaged item and get a refund"
    steps_so_far = [{"action": "find_user_id_by_email", "arguments": {"email": "a@b.c"}},
                    {"action": "get_order_details", "arguments": {"order_id": "#W1"}}]
    monkeypatch.setattr(retriever, "SPLIT_READS_AT", 1_000_000)
    traversal = {"max_hops": 2, "seeds": 10}
    whole = sample_kb.search(task, k=10, steps_so_far=steps_so_far, weights=traversal)
    asked: list[str] = []
    record_reads(sample_kb, monkeypatch, asked)
    monkeypatch.setattr(retriever, "SPLIT_READS_AT", 2)
    halves = sample_kb.search(task, k=10, steps_so_far=steps_so_far, weights=traversal)
    assert asked.count("search_candidates_score") == 2, "the facts, in two requests"
    assert asked.count("search_neighbours") >= 2, "each hop's neighbours, in two requests"
    assert any(h.path for h in whole.hits) and any(h.experience.kind == "abstract" for h in whole.hits)
    assert [(h.id, h.found_by, [p.to_id for p in h.path]) for h in halves.hits] == \
        [(h.id, h.found_by, [p.to_id for p in h.path]) for h in whole.hits]
    # Scores are rounded to 1e-6 and utility decays with the time between the two searches: equal
    # within a few millionths, whatever the machine's speed.
    assert [h.score for h in halves.hits] == pytest.approx([h.score for h in whole.hits], abs=1e-5)
    # Searches running side by side keep Neo4j's cores busy: then one request each.
    asked.clear()
    sample_kb.student._searching += 1  # another search under way in this process
    try:
        alongside = sample_kb.search(task, k=10, steps_so_far=steps_so_far)
    finally:
        sample_kb.student._searching -= 1
    assert asked.count("search_candidates_score") == 1
    assert [h.id for h in alongside.hits] == [h.id for h in whole.hits]


def test_closing_waits_for_the_background_read_under_way_and_starts_none_after(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A background read still using a connection when its driver is closed next breaks the
    # connection mid-message (CI met it as a BufferError in driver.close() at a test's teardown).
    kb.add_experiences([CANCEL, RETURN, FLIGHT])
    read = kb.gateway.read
    started, ended = threading.Event(), threading.Event()
    in_background: list[str] = []

    def slow_background_read(name: str, **params: object) -> list[dict[str, object]]:
        if threading.current_thread().name.startswith(("kbgraph-texts", "kbgraph-vectors")):  # the lanes
            in_background.append(name)
            started.set()
            time.sleep(0.5)  # still reading when close is called
            rows = read(name, **params)
            ended.set()
            return rows
        return read(name, **params)

    monkeypatch.setattr(kb.gateway, "read", slow_background_read)
    for background in (kb.student.context.texts_in_background, kb.student.context.vectors_in_background):
        assert background is not None
        background.settle_seconds = 0.0  # read at once
    kb.search("cancel my order", k=3, weights={"exact_scan_max": 0})
    assert started.wait(10), "the search started a background read"
    kb.student.close()
    assert ended.is_set(), "close returned only once the read under way was over"
    read_before = len(in_background)
    kb.search("cancel my order", k=3, weights={"exact_scan_max": 0})
    assert len(in_background) == read_before, "no background read starts once closed"
