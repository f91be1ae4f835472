"""Above ``exact_scan_max`` the semantic and structural channels answer in the process, from the
namespace's own vectors kept with its search version (kbgraph.search.student.vector_model): the
same experiences, in the same order, with the same scores as the exact Cypher scan, whatever the
filters; a write by another process is seen by the next search; another namespace's experiences
never come in. Real Neo4j, real MiniLM."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kbgraph.core.models import Experience, Step
from kbgraph.embedders import CachedEmbedder
from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import SearchFilters, SearchQuery, SearchWeights
from kbgraph.search.candidates import index_query
from kbgraph.search.student import channels
from kbgraph.search.student.channels import filter_params
from kbgraph.search.student.context import FilterParams
from kbgraph.search.student.distinct_vectors import GrowingMatrix, RowIndex, distinct_rows
from kbgraph.search.student.vector_model import IN_PROCESS_MAX, ExperienceVectors, experience_vectors, held_as_rows
from kbgraph.search.student.retriever import StudentRetriever
from kbgraph.core.settings import Settings
from kbgraph.store.vector_cache import vector_bytes
from kbgraph.search.student.versioned import KeptByVersion

TOPICS = ["a kettle", "a lamp", "a desk", "a phone", "a bike", "a tent", "a flight", "a hotel room"]


def experience(n: int, **fields: object) -> Experience:
    domain = "airline" if n % 3 == 0 else "retail"
    return Experience(problem=f"Customer {n} wants to return {TOPICS[n % len(TOPICS)]} bought last week.",
                      goal=f"Get done: refund {n}", domain=domain,
                      steps=[Step(action="get_order_details"), Step(action=f"return_item_{n % 4}")] if n % 5 else [],
                      **fields)


def params(kb: KnowledgeBase, domain: str | None = "retail", agent: str | None = None,
           **filters: object) -> FilterParams:
    return filter_params(kb.namespace, SearchFilters.model_validate(filters),
                         SearchQuery(task="anything", domain=domain, agent=agent), SearchWeights())


def model(kb: KnowledgeBase) -> ExperienceVectors:
    return experience_vectors(kb.gateway, kb.namespace, kb.student.context.vectors_by_version)


def scan(kb: KnowledgeBase, prop: str, vector: list[float], p: FilterParams, k: int) -> list[tuple[str, float]]:
    rows = kb.gateway.read("search_experience_scan", property=prop, vector=vector, k=k, **p)
    return [(r["id"], r["score"]) for r in rows]


def test_the_in_process_channels_answer_as_the_exact_scan_whatever_the_filters(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(24)])
    kb.add_experiences([experience(100, scope="private", owner_agent="agent-a"),
                        experience(101, scope="private", owner_agent="agent-b")])
    vector = [float(x) for x in kb.embedder.embed(["a customer returns a lamp for a refund"])[0]]
    vectors = model(kb)
    for p in (params(kb), params(kb, domain=None), params(kb, domain="airline"), params(kb, agent="agent-a"),
              params(kb, domains=["retail"]), params(kb, kinds=["concrete"]), params(kb, min_success=0.5)):
        for which, prop in (("pg", "pg_embedding"), ("structure", "structure_embedding")):
            for k in (1, 5, 50):
                ours = [(h.id, h.score) for h in vectors.nearest(which, vector, p, k)]  # type: ignore[arg-type]
                theirs = scan(kb, prop, vector, p, k)
                assert [i for i, _ in ours] == [i for i, _ in theirs], (which, k, ours, theirs)
                assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-6)


def test_a_private_experience_is_found_only_by_its_own_agent(kb: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(6)])
    [private] = kb.add_experiences([experience(100, scope="private", owner_agent="agent-a")]).ids
    vector = [float(x) for x in kb.embedder.embed([experience(100).problem])[0]]
    assert private in {h.id for h in model(kb).nearest("pg", vector, params(kb, agent="agent-a"), 10)}
    assert private not in {h.id for h in model(kb).nearest("pg", vector, params(kb, agent="agent-b"), 10)}
    assert private not in {h.id for h in model(kb).nearest("pg", vector, params(kb), 10)}


def test_another_process_write_is_seen_by_the_next_search(kb: KnowledgeBase, searcher: KnowledgeBase) -> None:
    kb.add_experiences([experience(n) for n in range(6)])
    for _ in range(3):  # read, confirmed by a second read of the same version, then kept
        before = model(searcher)
    assert model(searcher) is before, "an unchanged version reads nothing and keeps the same vectors"
    [added] = kb.add_experiences([experience(50)]).ids
    vector = [float(x) for x in kb.embedder.embed([experience(50).problem])[0]]
    assert model(searcher).nearest("pg", vector, params(searcher), 1)[0].id == added
    kb.store.delete([added])
    assert added not in {h.id for h in model(searcher).nearest("pg", vector, params(searcher), 50)}


def test_another_namespace_never_comes_in(kb: KnowledgeBase, embedder: CachedEmbedder) -> None:
    ours = set(kb.add_experiences([experience(n) for n in range(4)]).ids)
    other = KnowledgeBase(kb.driver, embedder, namespace=kb.namespace + "-other", database=kb.gateway.database)
    try:
        other.add_experiences([experience(n) for n in range(4, 12)])
        vector = [float(x) for x in kb.embedder.embed(["a customer returns a lamp for a refund"])[0]]
        assert {h.id for h in model(kb).nearest("pg", vector, params(kb, domain=None), 50)} <= ours
    finally:
        other.clear()


def kept_current(kb: KnowledgeBase, vectors: bool = True) -> None:
    """Brings what ``kb``'s searches keep of a large namespace (its vectors unless not ``vectors``,
    texts, scoring facts, step texts and what feedback changes, for searches without filters) up to
    its current versions: the background reads, started (the settling time set to 0) and waited for
    until a read has confirmed each."""
    ctx = kb.student.context
    kept = [ctx.vectors_in_background, ctx.texts_in_background, ctx.facts_in_background, ctx.steps_in_background,
            ctx.feedback_in_background]
    for background in kept:
        assert background is not None
        background.settle_seconds = background.settle_per_read = 0.0
    ctx.kept_state.recheck_seconds = 0.0
    p = params(kb, domain=None)
    for _ in range(3):
        versions = ctx.versions()
        version = versions.search
        current = [ctx.current_vectors(p, version) if vectors else True, ctx.current_texts(p, version),
                   ctx.current_facts(version), ctx.current_steps(p, version), ctx.current_feedback(versions.feedback)]
        if all(value is not None for value in current):
            break
        for background in kept:
            background.settle()  # type: ignore[union-attr]
    assert all(value is not None for value in current), "read and confirmed at the current version"
    ctx.kept_state.saw(True)  # the next search waits for the version, as after a check found it current


def test_a_search_above_the_scan_limit_scores_its_hits_as_the_exact_scan_does(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (The step channel asks its index above the limit, so the candidates may differ; what the
    # vector channels give each hit does not.)
    kb.add_experiences([experience(n) for n in range(24)])
    query = {"domain": "retail", "steps_so_far": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}}]}
    scanned = {h.id: h.breakdown for h in kb.search("I want to return the lamp and get my money back", k=10, **query).hits}
    kept_current(kb)
    asked: list[str] = []
    read = kb.gateway.read
    monkeypatch.setattr(kb.gateway, "read", lambda name, **p: (asked.append(name), read(name, **p))[1])
    in_process = kb.search("I want to return the lamp and get my money back", k=10, weights={"exact_scan_max": 0}, **query)
    assert not {"search_experience_vectors", "search_experience_vector_rows"} & set(asked), "answered from the kept vectors"
    both = [h for h in in_process.hits if h.id in scanned]
    assert both
    for hit in both:
        assert hit.breakdown.semantic == pytest.approx(scanned[hit.id].semantic, abs=1e-6)
        assert (hit.breakdown.structural is None) == (scanned[hit.id].structural is None)
        assert (hit.breakdown.structural or 0.0) == pytest.approx(scanned[hit.id].structural or 0.0, abs=1e-6)


class Gateway:
    """A namespace of one concrete experience at one search version, whose vectors the first read
    does not see (read as its write was being applied) and later reads do."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def read(self, name: str, **params: Any) -> list[dict[str, Any]]:
        if name == "search_experience_vector_rows":
            return [{"version": "v1", "unchanged": params["known"] == "v1",
                     "rows": [] if params["known"] == "v1" else [["e1", "concrete", "active", "retail", 1.0, "shared", None]]}]
        self.asked.append(list(params["ids"]))
        seen = len(self.asked) > 1
        # As search_experience_vectors_of answers: the vectors' bytes (a list for one without them).
        return [{"id": "e1", "pg_bytes": vector_bytes([1.0, 0.0]) if seen else None, "pg": None,
                 "structure_bytes": None, "structure": [0.0, 1.0] if seen else None}]


def test_an_experience_first_read_without_its_vectors_is_asked_for_again() -> None:
    gateway, kept = Gateway(), KeptByVersion[str, ExperienceVectors](1)
    p = filter_params("ns", SearchFilters(), SearchQuery(task="anything", domain="retail"), SearchWeights())
    first = experience_vectors(gateway, "ns", kept)  # type: ignore[arg-type]
    assert first.nearest("pg", [1.0, 0.0], p, 5) == []
    confirmed = experience_vectors(gateway, "ns", kept)  # type: ignore[arg-type]  # the version's second read
    assert gateway.asked == [["e1"], ["e1"]]
    assert [h.id for h in confirmed.nearest("pg", [1.0, 0.0], p, 5)] == ["e1"]
    assert [h.id for h in confirmed.nearest("structure", [0.0, 1.0], p, 5)] == ["e1"]
    assert experience_vectors(gateway, "ns", kept) is confirmed, "confirmed: kept, nothing asked"  # type: ignore[arg-type]
    assert len(gateway.asked) == 2


def test_a_namespace_above_the_in_process_limit_asks_the_vector_indexes(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An exact scan costs in proportion to the namespace (the in_process_max setting): past the
    # limit the HNSW indexes answer, and the process does not read the namespace's vectors.
    kb.add_experiences([experience(n) for n in range(12)])
    monkeypatch.setattr(kb.student.context, "in_process_max", 10)
    kept_current(kb, vectors=False)
    asked: list[str] = []
    read = kb.gateway.read
    monkeypatch.setattr(kb.gateway, "read", lambda name, **p: (asked.append(name), read(name, **p))[1])
    kb.search("I want to return the lamp and get my money back", weights={"exact_scan_max": 0})
    assert index_query(kb.gateway, "search_experience_vectors", "experience_pg_embedding") in asked
    assert len(kb.student.context.vectors_by_version) == 0, "no vectors read"


def test_what_a_search_works_out_while_it_reads_the_version_is_kept_only_at_that_version(
    kb: KnowledgeBase, searcher: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A search whose kept state was current works out its kept channels' answers from what is kept
    # while the version is read (kept_channels.confirmed). Here what it finds kept is always what was
    # kept before another process's write, though the process has read the new version since: the
    # answers of those old values give way to the new values' (the new experience is found).
    kb.add_experiences([experience(n) for n in range(24)])
    kept_current(kb)
    worked: list[set[str]] = []
    answers, confirmed = channels._kept_answers, channels.confirmed
    monkeypatch.setattr(channels, "_kept_answers", lambda ctx, run, part, value, *rest: (
        worked.append({part}), answers(ctx, run, part, value, *rest))[1])
    before_the_write: list[dict[str, Any]] = []
    monkeypatch.setattr(channels, "confirmed", lambda *args: (
        before_the_write or before_the_write.append(confirmed(*args)), before_the_write[0])[1])
    query = experience(50).problem
    before = kb.search(query, k=5, weights={"exact_scan_max": 0})
    assert worked == [{"vectors"}, {"texts"}], "worked out while the version was read, then used"
    [added] = searcher.add_experiences([experience(50)]).ids
    kept_current(kb)
    worked.clear()
    after = kb.search(query, k=5, weights={"exact_scan_max": 0})
    assert worked == [{"vectors"}, {"texts"}] * 2, "the old values' answers, then the new ones'"
    assert added not in {h.id for h in before.hits}
    assert after.hits[0].id == added


def test_equal_vectors_share_one_row_in_the_order_first_met() -> None:
    a, b = np.array([0.6, 0.8], dtype=np.float32), np.array([1.0, 0.0], dtype=np.float32)
    grown, row_of, index = distinct_rows([a, b, a.copy(), b.copy(), a.copy()], 2)
    matrix = grown.first(2)
    assert matrix.tolist() == [a.tolist(), b.tolist()] and row_of.tolist() == [0, 1, 0, 1, 0]
    assert index.find(hash(a.tobytes()), a, matrix.__getitem__) == 0
    assert distinct_rows([], 2)[0].first(0).shape == (0, 2)


def test_rows_are_added_in_place_for_the_newest_version_and_in_a_buffer_of_their_own_otherwise() -> None:
    a, b, c = (np.array(v, dtype=np.float32) for v in ([1.0, 0.0], [0.0, 1.0], [0.6, 0.8]))
    grown = GrowingMatrix([a], 2)
    older = grown.first(1)
    same, newer, moved = grown.extended(1, [b])
    assert same is grown and not moved and newer.tolist() == [a.tolist(), b.tolist()]
    assert older.tolist() == [a.tolist()] and np.shares_memory(older, newer), "the older version sees its own rows"
    # A second version made from the older one: its row 1 is c, not b, so it goes elsewhere.
    other, forked, moved = grown.extended(1, [c])
    assert other is not grown and moved and forked.tolist() == [a.tolist(), c.tolist()]
    assert newer.tolist() == [a.tolist(), b.tolist()] and not np.shares_memory(forked, newer)
    # Past the spare rows the matrix moves to a larger buffer, with every row.
    many = [np.array([float(n), 1.0], dtype=np.float32) for n in range(300)]
    bigger, grown_rows, moved = grown.extended(2, many)
    assert moved and bigger is not grown and grown_rows.shape == (302, 2) and grown_rows[2:].tolist() == [m.tolist() for m in many]
    # A namespace that had no vector yet (no dimension either) takes its first ones.
    _, first_rows, _ = GrowingMatrix([], 0).extended(0, [a])
    assert first_rows.tolist() == [a.tolist()]


def test_rows_whose_bytes_hash_alike_are_told_apart_by_their_values() -> None:
    rows = [np.array([1.0, 0.0], dtype=np.float32), np.array([0.0, 1.0], dtype=np.float32)]
    index = RowIndex()
    index.add(7, 0)
    index.add(7, 1)  # two rows under one key, as a collision of their hashes would put them
    assert index.find(7, np.array([0.0, 1.0], dtype=np.float32), rows.__getitem__) == 1
    assert index.find(7, np.array([1.0, 1.0], dtype=np.float32), rows.__getitem__) is None
    copied = index.copy()
    copied.add(9, 2)
    assert index.find(9, rows[0], rows.__getitem__) is None, "a copy's rows are its own"


def test_held_vectors_are_views_of_the_matrix_rows_and_the_others_stay_as_read() -> None:
    pg = np.array([[0.6, 0.8]], dtype=np.float32)
    structure = np.array([[1.0, 0.0]], dtype=np.float32)
    odd = np.array([1.0, 0.0, 0.0], dtype=np.float32)  # of another dimension: in no matrix
    held = {"a": (pg[0].copy(), structure[0].copy()), "b": (odd, None)}
    out = held_as_rows(["a", "b", "c"], held, {"pg": pg, "structure": structure},
                       {"pg": np.array([0, -1, -1]), "structure": np.array([0, -1, -1])})
    assert np.shares_memory(out["a"][0], pg) and np.shares_memory(out["a"][1], structure)
    assert out["a"][0].tolist() == [0.6000000238418579, 0.800000011920929]
    assert out["b"][0] is odd and out["b"][1] is None and "c" not in out


def test_the_in_process_limit_is_a_setting_whose_default_is_the_model_s(kb: KnowledgeBase) -> None:
    assert Settings().in_process_max == IN_PROCESS_MAX
    retriever = StudentRetriever.of_settings(kb.gateway, kb.embedder, kb.namespace, Settings(in_process_max=150_000))
    try:
        assert retriever.context.in_process_max == 150_000
    finally:
        retriever.close()
