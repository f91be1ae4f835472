"""KbgraphStore: LangGraph's BaseStore on kbgraph's Neo4j, checked against LangGraph's own
InMemoryStore (the same generated operations give the same results), in a real LangGraph graph,
and on its reserved namespaces (trajectories in, ranked experiences out)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import neo4j
import pytest
from langgraph.store.base import BaseStore, InvalidNamespaceError, SearchItem
from langgraph.store.memory import InMemoryStore

from kbgraph import AsyncKnowledgeBase
from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.integrations.langgraph import EXPERIENCES, TRAJECTORIES, KbgraphStore
from kbgraph.kb import KnowledgeBase
from tests.conftest import Neo4jTarget

pytestmark = pytest.mark.neo4j

SAMPLE_TRAJECTORIES = Path(__file__).resolve().parents[3] / "kbgraph" / "samples" / "trajectories.jsonl"

TEXTS = [
    "prefers window seats on long flights", "is allergic to peanuts", "plays the violin in an orchestra",
    "drives a red electric car", "works night shifts at the hospital", "likes green tea without sugar",
    "is learning Portuguese for a trip", "keeps two cats named Miso and Tofu", "runs a marathon every spring",
    "collects vintage film cameras",
]
NAMESPACES = [("users", "u1"), ("users", "u2"), ("users", "u1", "prefs"), ("teams", "red"), ("teams", "red", "notes")]
KEYS = ["a", "b", "c", "d"]
TAGS = ["home", "work", "travel"]


@pytest.fixture
def store(kb: KnowledgeBase) -> KbgraphStore:
    return KbgraphStore(kb, index={"dims": kb.embedder.dimension, "fields": ["text"]})


@pytest.fixture
def reference(kb: KnowledgeBase) -> InMemoryStore:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in kb.embedder.embed(texts)]

    return InMemoryStore(index={"dims": kb.embedder.dimension, "embed": embed, "fields": ["text"]})


@pytest.fixture
def other_kb(driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str) -> Iterator[KnowledgeBase]:
    other = KnowledgeBase(driver, embedder, namespace=f"{namespace}-other", ensure_schema=False)
    yield other
    other.clear()


# -- the differential test ---------------------------------------------------------------------------


def _value(rng: random.Random) -> dict[str, Any]:
    return {"text": rng.choice(TEXTS), "n": rng.randint(0, 9), "tag": rng.choice(TAGS),
            "nested": {"level": rng.randint(0, 2)}, "list": [rng.randint(0, 1), "x"]}


def _filter(rng: random.Random) -> dict[str, Any] | None:
    return rng.choice([
        None, {"tag": rng.choice(TAGS)}, {"n": {"$gt": rng.randint(0, 9)}}, {"n": {"$lte": rng.randint(0, 9), "$ne": 3}},
        {"nested": {"level": rng.randint(0, 2)}}, {"list": [rng.randint(0, 1), "x"]}, {"tag": {"$eq": "work"}, "n": {"$gte": 5}},
    ])


def _ranked(items: list[SearchItem]) -> list[tuple[tuple[str, ...], str, float]]:
    return [(tuple(i.namespace), i.key, round(float(i.score or 0.0), 4)) for i in items]


def _same_ranking(ours: list[SearchItem], theirs: list[SearchItem]) -> bool:
    """The same items with the same scores (to 1e-4), in the same order up to ties."""
    if len(ours) != len(theirs):
        return False
    if any(abs(float(a.score or 0) - float(b.score or 0)) > 1e-4 for a, b in zip(ours, theirs, strict=True)):
        return False
    def grouped(items: list[SearchItem]) -> list[tuple[float, tuple[str, ...], str]]:
        return sorted((round(float(i.score or 0), 3), tuple(i.namespace), i.key) for i in items)
    return grouped(ours) == grouped(theirs)


def _listed(store: BaseStore, **options: Any) -> list[tuple[str, ...]]:
    """InMemoryStore lists a namespace once a get touched it or after its last item was deleted;
    the namespaces that hold items are the contract."""
    listed = store.list_namespaces(limit=1000, **options)
    return [ns for ns in listed if store.search(ns, limit=1)]


def _run_sequence(store: KbgraphStore, reference: InMemoryStore, rng: random.Random, operations: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _ in range(operations):
        kind = rng.choices(["put", "get", "delete", "search", "semantic", "list"], weights=[8, 3, 2, 3, 3, 2])[0]
        counts[kind] = counts.get(kind, 0) + 1
        namespace, key = rng.choice(NAMESPACES), rng.choice(KEYS)
        if kind == "put":
            value = _value(rng)
            store.put(namespace, key, value)
            reference.put(namespace, key, value)
        elif kind == "delete":
            store.delete(namespace, key)
            reference.delete(namespace, key)
        elif kind == "get":
            ours, theirs = store.get(namespace, key), reference.get(namespace, key)
            assert (ours is None) == (theirs is None), (namespace, key)
            if ours is not None and theirs is not None:
                assert (tuple(ours.namespace), ours.key, ours.value) == (tuple(theirs.namespace), theirs.key, theirs.value)
        elif kind == "search":
            prefix = namespace[: rng.randint(0, len(namespace))]
            condition = _filter(rng)
            ours_all = store.search(prefix, filter=condition, limit=100)
            theirs_all = reference.search(prefix, filter=condition, limit=100)
            assert sorted((tuple(i.namespace), i.key, json.dumps(i.value, sort_keys=True)) for i in ours_all) == \
                sorted((tuple(i.namespace), i.key, json.dumps(i.value, sort_keys=True)) for i in theirs_all), (prefix, condition)
            offset, limit = rng.randint(0, 3), rng.randint(1, 4)  # pages are slices of the full listing
            page = store.search(prefix, filter=condition, limit=limit, offset=offset)
            assert [(i.namespace, i.key) for i in page] == [(i.namespace, i.key) for i in ours_all[offset: offset + limit]]
        elif kind == "semantic":
            prefix = namespace[: rng.randint(0, len(namespace))]
            query, condition = rng.choice(TEXTS), _filter(rng)
            ours = store.search(prefix, query=query, filter=condition, limit=100)
            theirs = reference.search(prefix, query=query, filter=condition, limit=100)
            assert _same_ranking(ours, theirs), (prefix, query, condition, _ranked(ours), _ranked(theirs))
            if theirs and theirs[0].value["text"] == query:  # both rank first the item whose text is the query
                assert ours[0].value["text"] == query
        else:
            options: dict[str, Any] = rng.choice([
                {}, {"prefix": ("users",)}, {"suffix": ("red",)}, {"prefix": ("users", "*", "prefs")},
                {"max_depth": 1}, {"max_depth": 2, "prefix": ("teams",)}])
            assert _listed(store, **options) == _listed(reference, **options), options
    return counts


@pytest.mark.slow
def test_the_same_generated_operations_give_the_same_results_as_langgraphs_in_memory_store(
    store: KbgraphStore, reference: InMemoryStore, capsys: pytest.CaptureFixture[str],
) -> None:
    totals: dict[str, int] = {}
    for seed in range(3):
        store.kb.clear()
        reference = InMemoryStore(index=reference.index_config)  # type: ignore[arg-type]
        for kind, n in _run_sequence(store, reference, random.Random(seed), 160).items():
            totals[kind] = totals.get(kind, 0) + n
    with capsys.disabled():
        print(f"\ndifferential test against InMemoryStore: {sum(totals.values())} operations {totals}, all equal")
    assert sum(totals.values()) == 480


# -- items, pages, isolation ----------------------------------------------------------------------------


def test_an_item_is_a_node_cypher_can_read(store: KbgraphStore, kb: KnowledgeBase) -> None:
    store.put(("users", "u1"), "pref", {"text": "likes green tea", "cups": 3})
    with kb.driver.session() as session:
        record = session.run("MATCH (i:StoreItem {kb: $kb})-[:HAS_VECTOR]->(v:StoreVector) RETURN i.namespace AS ns, "
                             "i.key AS key, i.value AS value, v.field AS field, size(v.embedding) AS dims",
                             kb=kb.namespace).single()
    assert record is not None
    assert (record["ns"], record["key"], json.loads(record["value"]), record["field"], record["dims"]) == \
        (["users", "u1"], "pref", {"text": "likes green tea", "cups": 3}, "text", 384)


def test_an_update_keeps_created_at_and_replaces_the_vectors(store: KbgraphStore, kb: KnowledgeBase) -> None:
    store.put(("n",), "k", {"text": "is allergic to peanuts"})
    first = store.get(("n",), "k")
    store.put(("n",), "k", {"text": "collects vintage film cameras"})
    second = store.get(("n",), "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    best = store.search(("n",), query="collects vintage film cameras")
    assert best[0].score == pytest.approx(1.0, abs=1e-4)
    with kb.driver.session() as session:
        assert session.run("MATCH (v:StoreVector {kb: $kb}) RETURN count(v) AS n", kb=kb.namespace).single()["n"] == 1  # type: ignore[index]


def test_a_put_that_is_not_indexed_is_found_by_listing_but_scores_nothing(store: KbgraphStore) -> None:
    store.put(("n",), "plain", {"text": "is allergic to peanuts"}, index=False)
    store.put(("n",), "indexed", {"text": "drives a red electric car"})
    found = store.search(("n",), query="is allergic to peanuts")
    assert [(i.key, i.score is None) for i in found] == [("indexed", False), ("plain", True)]


def test_namespaces_of_kbgraph_do_not_see_each_other(store: KbgraphStore, other_kb: KnowledgeBase) -> None:
    other = KbgraphStore(other_kb)
    store.put(("users", "u1"), "a", {"text": "mine"})
    other.put(("users", "u1"), "a", {"text": "theirs"})
    assert store.get(("users", "u1"), "a").value == {"text": "mine"}  # type: ignore[union-attr]
    assert [i.value for i in other.search(("users",))] == [{"text": "theirs"}]
    other.delete(("users", "u1"), "a")
    assert store.get(("users", "u1"), "a") is not None


def test_an_export_carries_the_store_into_another_namespace(
    store: KbgraphStore, kb: KnowledgeBase, other_kb: KnowledgeBase, tmp_path: Path,
) -> None:
    store.put(("users", "u1"), "a", {"text": "likes green tea without sugar"}, ttl=600)
    store.put(("users", "u2"), "b", {"text": "drives a red electric car"})
    kb.export(tmp_path / "kb.jsonl")
    other_kb.import_file(tmp_path / "kb.jsonl")
    copy = KbgraphStore(other_kb, index={"dims": 384, "fields": ["text"]})
    assert _ranked(copy.search(("users",), query="tea")) == _ranked(store.search(("users",), query="tea"))
    assert copy.get(("users", "u1"), "a", refresh_ttl=False) == store.get(("users", "u1"), "a", refresh_ttl=False)


def test_a_large_prefix_is_searched_through_the_vector_index_with_the_same_answer(kb: KnowledgeBase) -> None:
    exact = KbgraphStore(kb, index={"dims": 384, "fields": ["text"]})
    indexed = KbgraphStore(kb, index={"dims": 384, "fields": ["text"]}, exact_scan_max=0)
    for i, text in enumerate(TEXTS):
        exact.put(("docs",), f"k{i}", {"text": text, "even": i % 2 == 0})
    for query in TEXTS[:3]:
        for condition in (None, {"even": True}):
            assert _ranked(indexed.search(("docs",), query=query, filter=condition, limit=3, offset=1)) == \
                _ranked(exact.search(("docs",), query=query, filter=condition, limit=3, offset=1))


# -- TTL -------------------------------------------------------------------------------------------------


def test_an_expired_item_is_gone_and_the_sweep_deletes_it(store: KbgraphStore) -> None:
    store.put(("s",), "short", {"text": "is allergic to peanuts"}, ttl=0.005)  # 0.3 s
    store.put(("s",), "long", {"text": "plays the violin"}, ttl=60)
    store.put(("s",), "forever", {"text": "drives a red electric car"})
    time.sleep(0.6)
    assert store.get(("s",), "short") is None
    assert {i.key for i in store.search(("s",))} == {"long", "forever"}
    assert {i.key for i in store.search(("s",), query="peanuts")} == {"long", "forever"}
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0


def test_reading_an_item_refreshes_its_ttl_unless_asked_not_to(store: KbgraphStore, kb: KnowledgeBase) -> None:
    store.put(("s",), "k", {"text": "plays the violin"}, ttl=10)

    def expires() -> Any:
        with kb.driver.session() as session:
            return session.run("MATCH (i:StoreItem {kb: $kb, key: 'k'}) RETURN i.expires_at AS at",
                               kb=kb.namespace).single()["at"]  # type: ignore[index]

    before = expires()
    time.sleep(0.05)
    store.get(("s",), "k", refresh_ttl=False)
    assert expires() == before
    store.get(("s",), "k")
    assert expires() > before


def test_the_ttl_sweeper_runs_in_the_background_and_stops(kb: KnowledgeBase) -> None:
    store = KbgraphStore(kb, ttl={"default_ttl": 0.001, "sweep_interval_minutes": 1})
    store.put(("s",), "k", {"text": "x"})
    store.start_ttl_sweeper(sweep_interval_minutes=0.005)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with kb.driver.session() as session:
            if session.run("MATCH (i:StoreItem {kb: $kb}) RETURN count(i) AS n", kb=kb.namespace).single()["n"] == 0:  # type: ignore[index]
                break
        time.sleep(0.1)
    else:
        pytest.fail("the sweeper did not delete the expired item")
    assert store.stop_ttl_sweeper(timeout=5)


# -- reserved namespaces: trajectories in, ranked experiences out ---------------------------------------


def _sample_trajectory() -> dict[str, Any]:
    first = SAMPLE_TRAJECTORIES.read_text(encoding="utf-8").splitlines()[0]
    return dict(json.loads(first))


def test_putting_a_trajectory_ingests_it_and_searching_experiences_ranks_like_kb_search(
    store: KbgraphStore, kb: KnowledgeBase,
) -> None:
    trajectory = _sample_trajectory()
    store.put(TRAJECTORIES, trajectory["id"], trajectory)
    assert kb.count() >= 1
    assert store.get(TRAJECTORIES, trajectory["id"]).value == trajectory  # type: ignore[union-attr]
    task = trajectory["task"]
    found = store.search(EXPERIENCES, query=task, limit=3)
    assert [i.key for i in found] == kb.search(task, k=3).ids()
    assert found[0].namespace == EXPERIENCES and found[0].score is not None
    assert found[0].value["steps"] and "matched on" in found[0].value["explanation"]
    got = store.get(EXPERIENCES, found[0].key)
    assert got is not None and got.value["id"] == found[0].key
    assert EXPERIENCES in store.list_namespaces(prefix=("kbgraph",))


def test_a_bad_trajectory_is_refused_by_field_and_nothing_is_written(store: KbgraphStore, kb: KnowledgeBase) -> None:
    trajectory = _sample_trajectory()
    del trajectory["task"]
    with pytest.raises(InvalidInputError, match="task"):
        store.put(TRAJECTORIES, "t-bad", trajectory)
    assert kb.count() == 0 and store.search(TRAJECTORIES) == []


def test_the_experiences_namespace_is_read_only_and_the_kbgraph_root_reserved(store: KbgraphStore) -> None:
    with pytest.raises(InvalidNamespaceError, match="read-only"):
        store.put(EXPERIENCES, "x", {"text": "no"})
    with pytest.raises(InvalidNamespaceError, match="reserved"):
        store.put(("kbgraph", "mine"), "x", {"text": "no"})


# -- bad input -----------------------------------------------------------------------------------------


def test_bad_input_names_what_is_wrong_and_writes_nothing(store: KbgraphStore) -> None:
    from langgraph.store.base import PutOp
    with pytest.raises(InvalidInputError, match=r"\('n',\)/bad: value"):
        store.batch([PutOp(("n",), "good", {"text": "fine"}), PutOp(("n",), "bad", {"text": {1, 2}})])
    assert store.search(("n",)) == []
    with pytest.raises(InvalidNamespaceError, match="periods"):
        store.put(("a.b",), "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError, match="empty"):
        store.put((), "k", {"text": "x"})
    with pytest.raises(InvalidInputError, match=r"\$regex: unknown operator"):
        store.search(("n",), filter={"text": {"$regex": "f.*"}})
    with pytest.raises(InvalidInputError, match="ttl"):
        store.put(("n",), "k", {"text": "x"}, ttl=-1)
    assert store.search(("n",)) == []


BAD_VECTORS = {"all zero": lambda dim: [0.0] * dim, "NaN": lambda dim: [float("nan")] * dim,
               "overflowing length": lambda dim: [1e308] * dim, "too few values": lambda dim: [0.1] * (dim - 1)}


@pytest.mark.parametrize("kind", list(BAD_VECTORS))
def test_a_custom_embed_giving_an_unusable_vector_is_refused_and_nothing_is_written(kb: KnowledgeBase, kind: str) -> None:
    dim = kb.embedder.dimension
    good = KbgraphStore(kb, index={"dims": dim, "fields": ["text"]})
    good.put(("n",), "kept", {"text": "a reservation to cancel"})
    bad = KbgraphStore(kb, index={"dims": dim, "fields": ["text"],
                                  "embed": lambda texts: [BAD_VECTORS[kind](dim) for _ in texts]})
    with pytest.raises(InvalidInputError, match=r"\('n',\)/new: text: the index's embed gave an unusable vector"):
        bad.put(("n",), "new", {"text": "anything"})
    with pytest.raises(InvalidInputError, match="query: the index's embed gave an unusable vector"):
        bad.search(("n",), query="anything")
    # The namespace's searches still work: nothing unusable reached the vector index.
    assert [item.key for item in good.search(("n",), query="cancel a reservation")] == ["kept"]


def test_a_lone_surrogate_an_overlong_key_or_a_huge_value_is_refused_cleanly(store: KbgraphStore) -> None:
    from kbgraph.integrations.store_values import MAX_VALUE_CHARS
    with pytest.raises(InvalidInputError, match="key: contains a lone surrogate"):
        store.put(("n",), "a\udcffb", {"text": "x"})
    with pytest.raises(InvalidInputError, match="namespace.0: contains a lone surrogate"):
        store.get(("\ud800",), "k")
    with pytest.raises(InvalidInputError, match=r"value.text: contains a lone surrogate"):
        store.put(("n",), "k", {"text": "bad \udcff"})
    # A query is refused like a value: its encoding for the embedder (or Neo4j) failed raw.
    for prefix in (("n",), ("kbgraph", "experiences")):
        with pytest.raises(InvalidInputError, match=r"invalid search query, nothing was done:\n  query: contains a "
                                                    r"lone surrogate \('\\ud800'\)"):
            store.search(prefix, query="tea\ud800")
    with pytest.raises(InvalidInputError, match="key: the namespace and key are 100,002 characters"):
        store.put(("n",), "k" * 100_000, {"text": "x"})
    with pytest.raises(InvalidInputError, match="over the 4,000,000 an item may hold"):
        store.put(("n",), "k", {"text": "x" * MAX_VALUE_CHARS})
    assert store.search(("n",)) == []


def test_an_index_of_another_dimension_is_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(ValueError, match="dims 768"):
        KbgraphStore(kb, index={"dims": 768, "fields": ["text"]})


# -- in LangGraph ----------------------------------------------------------------------------------------


def test_a_langgraph_graph_compiled_with_the_store_remembers_across_threads(store: KbgraphStore, kb: KnowledgeBase) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        user: str
        fact: str
        recalled: list[str]

    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        if state["fact"]:
            store.put(("memories", state["user"]), f"m{len(state['fact'])}", {"text": state["fact"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        found = store.search(("memories", state["user"]), query="what does the user drink?", limit=1)
        return {"recalled": [i.value["text"] for i in found]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)
    graph.invoke({"user": "ada", "fact": "likes green tea without sugar", "recalled": []})
    graph.invoke({"user": "ada", "fact": "drives a red electric car", "recalled": []})
    later = graph.invoke({"user": "ada", "fact": "", "recalled": []})
    assert later["recalled"] == ["likes green tea without sugar"]
    other_user = graph.invoke({"user": "bob", "fact": "", "recalled": []})
    assert other_user["recalled"] == []
    with kb.driver.session() as session:
        assert session.run("MATCH (i:StoreItem {kb: $kb}) WHERE i.namespace = ['memories', 'ada'] RETURN count(i) AS n",
                           kb=kb.namespace).single()["n"] == 2  # type: ignore[index]


def test_the_async_methods_give_the_same_results(store: KbgraphStore) -> None:
    async def scenario() -> tuple[Any, list[SearchItem], list[tuple[str, ...]]]:
        await store.aput(("a", "b"), "k", {"text": "plays the violin"})
        await asyncio.gather(*(store.aput(("a", "c"), f"k{i}", {"text": TEXTS[i]}) for i in range(5)))
        got = await store.aget(("a", "b"), "k")
        found = await store.asearch(("a",), query="plays the violin", limit=2)
        return got, found, await store.alist_namespaces(prefix=("a",))

    got, found, namespaces = asyncio.run(scenario())
    assert got is not None and got.value == {"text": "plays the violin"}
    assert found[0].key == "k" and found[0].namespace == ("a", "b")
    assert namespaces == [("a", "b"), ("a", "c")]


def test_over_an_async_knowledge_base_the_async_methods_work_and_the_sync_ones_say_what_to_pass(
    kb: KnowledgeBase, neo4j_target: Neo4jTarget, embedder: CachedEmbedder,
) -> None:
    trajectory = _sample_trajectory()

    async def scenario() -> tuple[Any, list[SearchItem], list[SearchItem], list[str]]:
        driver = neo4j.AsyncGraphDatabase.driver(neo4j_target.uri, auth=(neo4j_target.username, neo4j_target.password))
        async with await AsyncKnowledgeBase.connect(driver, embedder, namespace=kb.namespace,
                                                    database=neo4j_target.database, owns_driver=True) as akb:
            store = KbgraphStore(akb, index={"dims": embedder.dimension, "fields": ["text"]})
            await asyncio.gather(store.aput(("a", "b"), "k", {"text": "plays the violin"}),
                                 store.aput(TRAJECTORIES, trajectory["id"], trajectory),
                                 *(store.aput(("a", "c"), f"k{i}", {"text": TEXTS[i]}) for i in range(3)))
            got = await store.aget(("a", "b"), "k")
            found = await store.asearch(("a",), query="plays the violin", limit=2)
            experiences = await store.asearch(EXPERIENCES, query=trajectory["task"], limit=3)
            refused = []
            for sync_call in (lambda: store.get(("a", "b"), "k"), lambda: store.put(("a",), "x", {}), store.sweep_ttl):
                with pytest.raises(TypeError) as raised:
                    sync_call()
                refused.append(str(raised.value))
            return got, found, experiences, refused

    got, found, experiences, refused = asyncio.run(scenario())
    assert got is not None and got.value == {"text": "plays the violin"}
    assert found[0].key == "k" and found[0].namespace == ("a", "b")
    assert [item.key for item in experiences] == kb.search(trajectory["task"], k=3).ids() != []
    assert set(refused) == {"KbgraphStore over an AsyncKnowledgeBase answers the async methods only (aget, aput, "
                            "asearch, adelete, alist_namespaces, abatch): pass a KnowledgeBase for the synchronous ones"}


# -- the documentation ---------------------------------------------------------------------------------

DOCS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "frameworks-langgraph.md"


def test_the_examples_of_the_langgraph_page_run(
    kb: KnowledgeBase, neo4j_target: Neo4jTarget, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    import re

    blocks = re.findall(r"```python\n(.*?)```", DOCS_PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 3
    monkeypatch.chdir(DOCS_PAGE.parents[1])
    # The page's KnowledgeBase.from_settings() reaches the test's server, as a reader's reaches
    # theirs: not the machine's managed one (of whichever line, on whatever ports).
    for name in ("NEO4J_URI", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE"):
        monkeypatch.setenv(name, neo4j_target.env(kb.namespace)[name])
    scope: dict[str, Any] = {"kb": kb}
    for block in blocks:
        exec(compile(block, str(DOCS_PAGE), "exec"), scope)  # noqa: S102 - the page's own examples
    printed = capsys.readouterr().out.splitlines()
    assert printed[:3] == ["['likes green tea without sugar']", "True", "0"]
    assert len(printed) == 4 and "matched on" in printed[3]  # one trajectory, one experience


def test_langmems_memory_tools_keep_their_memories_in_kbgraphs_neo4j(kb: KnowledgeBase) -> None:
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = KbgraphStore(kb, index={"dims": kb.embedder.dimension, "fields": ["content"]})
    manage = create_manage_memory_tool(namespace=("memories", "ada"), store=store)
    search = create_search_memory_tool(namespace=("memories", "ada"), store=store)
    for fact in ("likes green tea without sugar", "drives a red electric car", "is learning Portuguese for a trip"):
        assert manage.invoke({"content": fact, "action": "create"}).startswith("created memory")
    found = json.loads(search.invoke({"query": "what does the user drink?", "limit": 1}))
    assert [m["value"]["content"] for m in found] == ["likes green tea without sugar"]
    memory = found[0]["key"]
    manage.invoke({"content": "likes black coffee", "action": "update", "id": memory})
    assert store.get(("memories", "ada"), memory).value == {"content": "likes black coffee"}  # type: ignore[union-attr]
    manage.invoke({"action": "delete", "id": memory})
    assert store.get(("memories", "ada"), memory) is None
    with kb.driver.session() as session:
        assert session.run("MATCH (i:StoreItem {kb: $kb}) RETURN count(i) AS n", kb=kb.namespace).single()["n"] == 2  # type: ignore[index]
