"""Export and import (kbgraph.transfer): a namespace goes to JSON Lines and comes back equal —
every node, property, embedding and relationship — into any namespace, any number of times,
without duplicates; a damaged file is refused by line before anything is written.

The samples are ingested once (``source``) and imported once into the copy the reading tests share
(``copy``); a test that writes imports into a fresh namespace of its own (``target``). The command
line runs through the CLI's main in this process (tests/cli_in_process.py), except the refused
file, whose process's exit status and stderr are what it checks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import neo4j
import numpy as np
import pytest

from kbgraph.store.queries import query, query_names
from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import MAX_NAME_CHARS, MAX_TEXT_CHARS, STORED_OUTCOME_TASK_CHARS, Experience, Step
from kbgraph.transfer import (
    LABELS,
    NODE_LABELS,
    RELATIONSHIPS,
    TransferError,
    check_export_file,
    decode_vector,
    encode_vector,
    export_to,
    import_file,
)
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget

SAMPLES = Path(__file__).resolve().parents[3] / "kbgraph" / "samples"
ROOT = Path(__file__).resolve().parents[3]

# An independent view of a namespace, straight from the database: every node by label and key
# with all its properties (temporal values also as text, so zones and nanoseconds count), and
# every relationship between two of its nodes with its properties. The feedback version's stripes
# are left out: cache tokens, never carried (kbgraph.transfer.NOT_EXPORTED).
SNAPSHOT_NODES = """
MATCH (n) WHERE n.kb = $kb AND NOT n:FeedbackStripe
RETURN labels(n) AS labels, coalesce(n.id, n.name, n.key, '') AS key, properties(n) AS properties,
  [k IN keys(n) | k + ': ' + valueType(n[k])] AS types,
  [k IN keys(n) WHERE valueType(n[k]) =~ '.*(DATE|TIME|DURATION).*' | k + '=' + CASE
    WHEN valueType(n[k]) STARTS WITH 'LIST' THEN reduce(s = '', v IN n[k] | s + toString(v) + ',')
    ELSE toString(n[k]) END] AS temporal
"""
SNAPSHOT_RELATIONSHIPS = """
MATCH (a)-[r]->(b) WHERE a.kb = $kb AND b.kb = $kb
RETURN labels(a) AS start, coalesce(a.id, a.name, a.key, '') AS start_key, type(r) AS type,
  labels(b) AS end, coalesce(b.id, b.name, b.key, '') AS end_key, properties(r) AS properties,
  [k IN keys(r) WHERE valueType(r[k]) =~ '.*(DATE|TIME|DURATION).*' | k + '=' + CASE
    WHEN valueType(r[k]) STARTS WITH 'LIST' THEN reduce(s = '', v IN r[k] | s + toString(v) + ',')
    ELSE toString(r[k]) END] AS temporal
"""


def snapshot(driver: neo4j.Driver, database: str, namespace: str) -> tuple[dict[Any, Any], list[Any]]:
    nodes: dict[Any, Any] = {}
    for record in driver.execute_query(SNAPSHOT_NODES, kb=namespace, database_=database).records:
        # search_version is the namespace's own cache token (kbgraph/store/search_version.py), never
        # carried: an import gives the copy one of its own (checked in the round trip below).
        properties = {k: v for k, v in record["properties"].items() if k not in ("kb", "search_version")}
        key = (tuple(record["labels"]), record["key"])
        assert key not in nodes, f"two nodes {key} in {namespace}"
        nodes[key] = (properties, sorted(record["types"]), sorted(record["temporal"]))
    relationships = sorted(
        (tuple(r["start"]), r["start_key"], r["type"], tuple(r["end"]), r["end_key"],
         json.dumps(r["properties"], sort_keys=True, default=str), tuple(sorted(r["temporal"])))
        for r in driver.execute_query(SNAPSHOT_RELATIONSHIPS, kb=namespace, database_=database).records
    )
    return nodes, relationships


@dataclass
class Source:
    """Namespace A: the bundled samples ingested, plus feedback, and its export."""

    kb: KnowledgeBase
    export: Path
    used: str


@pytest.fixture(scope="module")
def source(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    kb = KnowledgeBase(driver, embedder, namespace=f"test-{uuid.uuid4().hex[:10]}", database=neo4j_target.database)
    kb.ingest([SAMPLES / "trajectories.jsonl", SAMPLES / "experiences.jsonl"])
    found = kb.search("A customer wants to return a delivered item for a refund", domain="retail", k=5)
    used = next(i for i in found.ids() if (e := kb.get(i)) is not None and e.steps)
    first_step = kb.get(used).steps[0].order  # type: ignore[union-attr]
    kb.record_feedback(retrieved=found.ids(), used=[used], outcome=True, agent="agent-a",
                       step_rewards=[{"experience_id": used, "order": first_step, "reward": 1.0}])
    other = next(i for i in found.ids() if i != used)
    kb.record_feedback(retrieved=[used, other], used=[other], outcome=False, agent="agent-b",
                       task="A customer wants to return a delivered item for a refund")
    export = tmp_path_factory.mktemp("export") / "a.jsonl"
    export_to(kb.gateway, kb.namespace, export)
    yield Source(kb, export, used)
    kb.clear()


@dataclass
class Copy:
    """Namespace B: A's export imported into an empty namespace, and that import's report."""

    kb: KnowledgeBase
    report: Any


@pytest.fixture(scope="module")
def copy(source: Source, driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> Iterator[Copy]:
    """The copy the tests that only read it share (none of them writes to it)."""
    kb = KnowledgeBase(driver, embedder, namespace=f"test-{uuid.uuid4().hex[:10]}", database=neo4j_target.database)
    try:
        yield Copy(kb, import_into(kb, source.export))
    finally:
        kb.clear()


@pytest.fixture
def target(driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget) -> Iterator[KnowledgeBase]:
    """An empty namespace B to import into."""
    kb = KnowledgeBase(driver, embedder, namespace=f"test-{uuid.uuid4().hex[:10]}", database=neo4j_target.database)
    yield kb
    kb.clear()


def learning(kb: KnowledgeBase, experience_id: str) -> dict[str, Any]:
    """Counters and quality; utility is left out, as it decays with the clock between two reads."""
    return kb.learning_state([experience_id])[0].model_dump(exclude={"utility"})


def import_into(kb: KnowledgeBase, path: Path) -> Any:
    return import_file(kb.gateway, kb.namespace, path, batch_size=kb.settings.write_batch_size)


# -- the round trip ---------------------------------------------------------------------------------


def test_the_source_has_something_of_every_kind_to_carry(source: Source) -> None:
    stats = source.kb.stats()
    for label in ("Experience", "Step", "StepText", "FailureMode", "Domain", "Concept", "MetaConcept", "Insight",
                  "Agent", "IngestedRecord"):
        assert stats.nodes.get(label, 0) > 0, label
    for type_ in ("HAS_STEP", "NEXT", "SAYS", "HAS_FAILURE", "IN_DOMAIN", "ABSTRACTION", "EXHIBITS", "INSTANCE_OF",
                  "ABOUT", "FROM", "PERFORMED"):
        assert stats.relationships.get(type_, 0) > 0, type_
    state = source.kb.learning_state([source.used])[0]
    assert state.used == 1 and state.succeeded == 1 and state.retrieved == 2


def test_import_into_another_namespace_gives_an_equal_graph(
    source: Source, copy: Copy, driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    report, target = copy.report, copy.kb

    assert report.source_namespace == source.kb.namespace and report.namespace == target.namespace
    assert report.nodes_existing == 0 and report.relationships_existing == 0
    stats_a, stats_b = source.kb.stats(), target.stats()
    assert stats_b.nodes == stats_a.nodes and stats_b.relationships == stats_a.relationships
    assert {label: c.new for label, c in report.nodes.items()} == stats_a.nodes
    assert stats_b.model_dump(exclude={"namespace"}) == stats_a.model_dump(exclude={"namespace"})
    # Every property (embeddings, counters, datetimes with their zones) and every relationship.
    nodes_a, relationships_a = snapshot(driver, neo4j_target.database, source.kb.namespace)
    nodes_b, relationships_b = snapshot(driver, neo4j_target.database, target.namespace)
    assert nodes_b.keys() == nodes_a.keys()
    for key, value in nodes_a.items():
        assert nodes_b[key] == value, key
    assert relationships_b == relationships_a
    tokens = [driver.execute_query("MATCH (s:KbState {kb: $kb}) RETURN s.search_version AS v", kb=kb.namespace,
                                   database_=neo4j_target.database).records[0]["v"] for kb in (source.kb, target)]
    assert all(tokens) and tokens[0] != tokens[1]
    # The learning state came along too.
    assert learning(target, source.used) == learning(source.kb, source.used)
    assert target.get(source.used) == source.kb.get(source.used)


def test_embeddings_come_back_as_the_same_float32_values(source: Source, copy: Copy) -> None:
    a, b = source.kb.get(source.used), copy.kb.get(source.used)
    assert a is not None and b is not None and a.pg_embedding is not None
    assert b.pg_embedding == a.pg_embedding
    assert np.array_equal(np.asarray(b.pg_embedding, dtype=np.float32), np.asarray(a.pg_embedding, dtype=np.float32))
    assert [s.embedding for s in b.steps] == [s.embedding for s in a.steps]


def test_the_vectors_bytes_stay_out_of_the_file_and_the_import_makes_them_again(
    source: Source, copy: Copy, driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    assert "embedding_bytes" not in source.export.read_text()
    rows = driver.execute_query(
        "MATCH (e:Experience {kb: $kb}) RETURN e.pg_embedding AS pg, e.pg_embedding_bytes AS pg_bytes, "
        "e.structure_embedding AS structure, e.structure_embedding_bytes AS structure_bytes",
        kb=copy.kb.namespace, database_=neo4j_target.database).records
    assert rows
    for row in rows:
        assert np.frombuffer(row["pg_bytes"], dtype="<f4").tolist() == row["pg"]
        assert np.frombuffer(row["structure_bytes"], dtype="<f4").tolist() == row["structure"]


def test_search_in_the_copy_returns_the_same_experiences(source: Source, copy: Copy) -> None:
    target = copy.kb
    for task, domain, steps in (
        ("A customer wants to return a delivered item for a refund", "retail", []),
        ("cancel my order, I bought it by mistake", None, [{"action": "get_order_details", "arguments": {}}]),
        ("update the shipping address of a pending order", "retail", []),
    ):
        a = source.kb.search(task, domain=domain, steps_so_far=steps, k=5)
        b = target.search(task, domain=domain, steps_so_far=steps, k=5)
        assert b.ids() == a.ids() and a.ids()
        assert [c.id for c in b.concepts] == [c.id for c in a.concepts]
    failing = [{"action": "get_order_details", "arguments": {"order_id": "#W1"}, "error": "Error: order not found"}]
    assert target.refine(failing, k=3).experiences == source.kb.refine(failing, k=3).experiences


def test_the_copy_keeps_one_vector_per_distinct_step_text(source: Source, copy: Copy) -> None:
    a, b = source.kb.stats(), copy.kb.stats()
    assert b.nodes["StepText"] == a.nodes["StepText"] < a.nodes["Step"]
    assert b.relationships["SAYS"] == a.relationships["SAYS"] == a.nodes["Step"]


def _as_version_1(lines: list[str]) -> list[str]:
    """An export as version 1 of the format wrote it: every step its own vector, no StepText."""
    records = [json.loads(line) for line in lines]
    vectors = {r["key"]: r["vectors"]["embedding"] for r in records if r.get("label") == "StepText"}
    says = {r["start"]["key"]: r["end"]["key"] for r in records if r.get("type") == "SAYS"}
    out = []
    for record in records:
        if record.get("label") == "StepText" or record.get("type") == "SAYS":
            continue
        if record["record"] == "header":
            record["version"] = 1
            record["counts"]["nodes"].pop("StepText")
            record["counts"]["relationships"].pop("SAYS")
        elif record.get("label") == "Step":
            record["vectors"] = {"embedding": vectors[says[record["key"]]]}
        out.append(json.dumps(record))
    return out


def test_a_version_1_file_is_converted_to_one_vector_per_step_text_on_import(
    source: Source, target: KnowledgeBase, tmp_path: Path
) -> None:
    old = tmp_path / "v1.jsonl"
    old.write_text("\n".join(_as_version_1(_lines(source.export))) + "\n", encoding="utf-8")
    import_into(target, old)
    assert target.stats().nodes == source.kb.stats().nodes
    assert target.stats().relationships == source.kb.stats().relationships
    assert target.get(source.used) == source.kb.get(source.used)
    task = "cancel my order, I bought it by mistake"
    steps = [{"action": "get_order_details", "arguments": {}}]
    assert target.search(task, steps_so_far=steps, k=5).ids() == source.kb.search(task, steps_so_far=steps, k=5).ids()


def test_importing_twice_creates_no_duplicates(
    source: Source, target: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    first = import_into(target, source.export)
    before = snapshot(driver, neo4j_target.database, target.namespace)
    again = import_into(target, source.export)

    assert again.nodes_new == 0 and again.relationships_new == 0
    assert again.nodes_existing == first.nodes_new and again.relationships_existing == first.relationships_new
    assert snapshot(driver, neo4j_target.database, target.namespace) == before


def test_an_import_into_a_non_empty_namespace_adds_what_is_missing_and_leaves_the_rest_alone(
    source: Source, target: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget
) -> None:
    own = Experience(problem="Rotate the API keys of a staging service", goal="New keys deployed, old ones revoked",
                     domain="ops", steps=[Step(action="create_key", text="create a key for {service}")])
    target.add_experiences([own])
    import_into(target, source.export)
    # The target's own experience is still there, next to everything imported.
    assert target.get(own.key) is not None
    assert target.count() == source.kb.count() + 1

    # Learning that happened in the target is kept when the same file comes in again: an import
    # never overwrites (or adds to) the counters of an experience that is already there.
    target.record_feedback(retrieved=[source.used], used=[source.used], outcome=False, agent="agent-c")
    learned = learning(target, source.used)
    # Some of what the file holds goes missing from the target: the next import puts it back.
    removed = [i for i in source.kb.store.iter_ids() if i != source.used][:5]
    assert target.delete(removed) == 5
    report = import_into(target, source.export)

    assert report.nodes["Experience"].new == 5
    assert report.nodes["Experience"].existing == source.kb.count() - 5
    assert report.relationships["HAS_STEP"].new == sum(len(e.steps) for e in source.kb.get_many(removed))
    assert learning(target, source.used) == learned
    assert target.count() == source.kb.count() + 1
    for experience_id in removed:
        assert target.get(experience_id) == source.kb.get(experience_id)


# -- the file ---------------------------------------------------------------------------------------


def test_the_file_starts_with_a_header_and_lists_nodes_before_relationships(source: Source) -> None:
    lines = source.export.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    stats = source.kb.stats()
    assert header["record"] == "header" and header["format"] == "kbgraph-export" and header["version"] == 2
    assert header["namespace"] == source.kb.namespace and header["embedding_dimension"] == 384
    assert header["counts"] == {"nodes": stats.nodes, "relationships": stats.relationships}
    kinds = [json.loads(line)["record"] for line in lines[1:]]
    assert kinds == sorted(kinds, key=lambda k: k != "node")  # every node first
    assert len(lines) == 1 + sum(stats.nodes.values()) + sum(stats.relationships.values())
    experience = next(json.loads(line) for line in lines if f'"key":"{source.used}"' in line)
    assert set(experience["vectors"]) == {"pg_embedding", "structure_embedding", "context_embedding"}
    assert len(decode_vector(experience["vectors"]["pg_embedding"])) == 384
    assert set(experience["properties"]["created_at"]) == {"datetime"}
    assert experience["properties"]["used"] == 1 and "kb" not in experience["properties"]


def test_exports_are_deterministic_and_hold_nothing_of_other_namespaces(
    source: Source, copy: Copy, tmp_path: Path
) -> None:
    # The same content (the same ids) in another namespace (the copy) must not leak into A's export.
    again = tmp_path / "again.jsonl"
    report = export_to(source.kb.gateway, source.kb.namespace, again)

    assert again.read_bytes() == source.export.read_bytes()
    assert report.nodes == source.kb.stats().nodes and report.cross_namespace_relationships == 0
    records = again.read_text(encoding="utf-8").splitlines()[1:]
    assert len(records) == len(set(records))


def test_the_export_of_a_namespace_can_be_read_back_from_standard_output(
    source: Source, neo4j_target: Neo4jTarget
) -> None:
    result = kbgraph_cli(neo4j_target, source.kb.namespace, "export", "-")
    assert result.returncode == 0, result.stderr
    assert result.stdout == source.export.read_text(encoding="utf-8")
    assert "exported namespace" in result.stderr


def test_a_vector_is_written_as_base64_float32_and_read_back_bit_for_bit() -> None:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, size=200_000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    # Every bit pattern of a usable vector: finite, and small enough that its length fits a float32
    # (a vector whose length overflows is refused, see below).
    values = values[np.isfinite(values) & (np.abs(values) < 1e15)]
    values = np.concatenate([values, np.array([0.0, -0.0, 1.0, -1.0, 1e-45], dtype=np.float32)])
    # As the driver hands them over: the float32 values as Python floats.
    text = encode_vector(values.astype(np.float64).tolist())
    back = np.asarray(decode_vector(json.loads(json.dumps(text))), dtype=np.float64).astype(np.float32)
    assert np.array_equal(back.view(np.uint32), values.view(np.uint32))
    assert len(encode_vector([0.5] * 384)) == 2048  # 4 bytes a value, base64
    # A hand-written file may give a list of numbers; they become the nearest float32.
    assert decode_vector([0.1, 1, -2.5]) == [float(np.float32(0.1)), 1.0, -2.5]
    for bad in ("not base64!", "AAA=", [], ["x"], [float("nan")], {"x": 1}, [3.4028235e38, 1.0]):
        with pytest.raises(ValueError):
            decode_vector(bad)


def test_every_label_and_relationship_type_has_its_fixed_queries() -> None:
    names = set(query_names())
    for spec in NODE_LABELS:
        assert {spec.page_query, spec.merge_query} <= names, spec.label
        assert f"MERGE (n:{spec.label} {{kb: $kb" in query(spec.merge_query)
        assert f"MATCH (n:{spec.label} {{kb: $kb}})" in query(spec.page_query)
    for shape in RELATIONSHIPS:
        text = query(shape.merge_query)
        assert f"MATCH (a:{shape.start} {{kb: $kb" in text and f"MATCH (b:{shape.end} {{kb: $kb" in text
        assert f"MERGE (a)-[r:{shape.type}]->(b)" in text
    # Every label kbgraph counts (stats_nodes) is one the export knows, so none is left behind.
    counted = set(re.findall(r"MATCH \(n:(\w+) \{kb: \$kb\}\)", query("stats_nodes")))
    assert counted and counted <= set(LABELS)
    for name in names:
        if name.startswith(("export_", "import_")):
            text = (ROOT / "cypher" / "queries" / f"{name}.cypher").read_text(encoding="utf-8")
            assert text.startswith("// "), name
            assert "$kb" in text, name


# -- damaged files ----------------------------------------------------------------------------------


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _first(lines: list[str], predicate: Callable[[dict[str, Any]], bool]) -> int:
    return next(i for i, line in enumerate(lines) if i > 0 and predicate(json.loads(line)))


def _edit(lines: list[str], index: int, change: Callable[[dict[str, Any]], None]) -> list[str]:
    value = json.loads(lines[index])
    change(value)
    return [*lines[:index], json.dumps(value), *lines[index + 1:]]


def _is_node(label: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["record"] == "node" and r["label"] == label


def _is_relationship(type_: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r["record"] == "relationship" and r["type"] == type_


def _bad_json(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_node("Step"))
    return [*lines[:at], lines[at][:-20], *lines[at + 1:]], at + 1, "invalid JSON"


def _unknown_label(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_node("Insight"))
    return _edit(lines, at, lambda r: r.update(label="Secret")), at + 1, "label: unknown label 'Secret'"


def _label_with_cypher_in_it(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_node("Domain"))
    return (_edit(lines, at, lambda r: r.update(label="Domain) DETACH DELETE (n")), at + 1,
            "label: unknown label 'Domain) DETACH DELETE (n'")


def _unknown_relationship_type(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_relationship("NEXT"))
    return _edit(lines, at, lambda r: r.update(type="OWNS")), at + 1, "type: unknown relationship type 'OWNS'"


def _short_vector(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_node("Experience"))

    def shorten(record: dict[str, Any]) -> None:
        record["vectors"]["pg_embedding"] = encode_vector(decode_vector(record["vectors"]["pg_embedding"])[:-1])

    return (_edit(lines, at, shorten), at + 1,
            "vectors.pg_embedding: has 383 values, the file's embedding_dimension is 384")


def _garbled_vector(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_node("StepText"))
    return (_edit(lines, at, lambda r: r["vectors"].update(embedding="%%%")), at + 1,
            "vectors: embedding: not base64")


def _other_embedder(lines: list[str]) -> tuple[list[str], int, str]:
    return (_edit(lines, 0, lambda r: r.update(embedding_dimension=768)), 1,
            "embedding_dimension: the file's vectors have 768 values, this database's vector indexes 384")


def _truncated(lines: list[str]) -> tuple[list[str], int, str]:
    return lines[:-3], 1, "the header announces"


def _missing_end(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_relationship("HAS_STEP"))
    return (_edit(lines, at, lambda r: r["end"].update(key="step_nowhere")), at + 1,
            "end: no Step 'step_nowhere' among the nodes of this file")


def _duplicate_node(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_node("Concept"))
    return [*lines[:at + 1], lines[at], *lines[at + 1:]], at + 2, f"the same node as line {at + 1}"


def _bad_datetime(lines: list[str]) -> tuple[list[str], int, str]:
    at = _first(lines, _is_node("Experience"))
    return (_edit(lines, at, lambda r: r["properties"].update(created_at={"datetime": "2026-13-01T00:00:00Z"})),
            at + 1, "created_at: datetime: '2026-13-01T00:00:00Z' is not a datetime")


def _bad_failure_record(lines: list[str]) -> tuple[list[str], int, str]:
    # A failure mode's record (what the agent did next, as data) is JSON text of a statement record.
    at = _first(lines, lambda r: _is_node("FailureMode")(r) and bool(r["properties"].get("record")))
    return (_edit(lines, at, lambda r: r["properties"].update(record='{"kind": "anecdote"}')), at + 1,
            "properties.record: '{\"kind\": \"anecdote\"}' is refused")


def _no_header(lines: list[str]) -> tuple[list[str], int, str]:
    return lines[1:], 1, "the first line must be the header record"


@pytest.mark.parametrize("damage", [
    _bad_json, _unknown_label, _label_with_cypher_in_it, _unknown_relationship_type, _short_vector,
    _garbled_vector, _other_embedder, _truncated, _missing_end, _duplicate_node, _bad_datetime, _no_header,
    _bad_failure_record,
], ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_file_is_refused_by_line_and_nothing_is_written(
    damage: Callable[[list[str]], tuple[list[str], int, str]], source: Source, target: KnowledgeBase, tmp_path: Path
) -> None:
    lines, line, message = damage(_lines(source.export))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(InvalidInputError) as raised:
        import_into(target, bad)

    assert any(p.startswith(f"{bad}:{line}: ") and message in p for p in raised.value.problems), raised.value.problems
    assert "nothing was imported" in str(raised.value)
    stats = target.stats()
    assert stats.nodes == {} and stats.relationships == {}


def test_every_problem_of_a_file_is_listed_at_once(source: Source, tmp_path: Path) -> None:
    lines = _lines(source.export)
    lines, first, _ = _unknown_label(lines)
    lines, second, _ = _short_vector(lines)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError) as raised:
        check_export_file(bad, 384)
    lines_named = {int(p.split(":")[1]) for p in raised.value.problems}
    assert {first, second} <= lines_named


def test_a_missing_or_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="no such file"):
        check_export_file(tmp_path / "missing.jsonl", 384)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(InvalidInputError, match="empty file"):
        check_export_file(tmp_path / "empty.jsonl", 384)


def test_a_folder_or_a_device_is_named_as_such_not_as_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"is a folder$"):
        check_export_file(tmp_path, 384)
    with pytest.raises(InvalidInputError, match=r"/dev/zero: is a character device, not a regular file$"):
        check_export_file(Path("/dev/zero"), 384)


# -- what the format does not know, and values kbgraph itself never writes -----------------------------


def test_values_of_every_temporal_type_and_lists_come_back_exactly(
    target: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    exp = Experience(problem="Renew a certificate", goal="The certificate is renewed", domain="ops",
                     steps=[Step(action="renew", text="renew {domain}")])
    target.add_experiences([exp])
    driver.execute_query(
        "MATCH (e:Experience {kb: $kb, id: $id}) "
        "SET e.zoned = datetime('2026-07-01T12:30:00.123456789+02:00[Europe/Berlin]'), "
        "e.offset = datetime('2026-01-01T00:00:00-05:00'), e.local = localdatetime('2026-01-01T10:11:12.5'), "
        "e.day = date('2026-02-28'), e.clock = time('10:11:12.000000001+01:00'), e.wall = localtime('23:59:59'), "
        "e.took = duration('P1Y2M3DT4H5M6.000000007S'), e.days = [date('2026-01-01'), date('2026-01-02')], "
        "e.flags = [true, false], e.counts = [1, 2, 3], e.ratios = [0.1, 1e-300], e.nothing = [], "
        "e.huge = 9007199254740993, e.text = 'ünïcødé \"quoted\" \\n line'",
        kb=target.namespace, id=exp.key, database_=neo4j_target.database)
    path = tmp_path / "odd.jsonl"
    export_to(target.gateway, target.namespace, path)
    copy = KnowledgeBase(driver, embedder, namespace=f"test-{uuid.uuid4().hex[:10]}", database=neo4j_target.database)
    try:
        import_into(copy, path)
        assert snapshot(driver, neo4j_target.database, copy.namespace) == \
            snapshot(driver, neo4j_target.database, target.namespace)
    finally:
        copy.clear()


def test_an_unknown_label_stops_the_export_before_any_file_is_written(
    target: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    target.add_experiences([Experience(problem="p", goal="g", domain="ops")])
    driver.execute_query("CREATE (:Mystery {kb: $kb, id: 'm1'})", kb=target.namespace, database_=neo4j_target.database)
    try:
        with pytest.raises(TransferError, match=r"1 :Mystery.*NODE_LABELS"):
            export_to(target.gateway, target.namespace, tmp_path / "out.jsonl")
        assert list(tmp_path.iterdir()) == []
    finally:
        driver.execute_query("MATCH (n:Mystery {kb: $kb}) DELETE n", kb=target.namespace,
                             database_=neo4j_target.database)


def test_an_export_that_would_not_match_its_header_fails_and_leaves_no_file(
    target: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    target.add_experiences([Experience(problem="p", goal="g", domain="ops")])
    # An experience without its id: counted in the namespace, but no key to export it by.
    driver.execute_query("CREATE (:Experience {kb: $kb, problem: 'no id'})", kb=target.namespace,
                         database_=neo4j_target.database)
    with pytest.raises(TransferError, match="changed while it was exported, or holds nodes without their key"):
        export_to(target.gateway, target.namespace, tmp_path / "out.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_a_relationship_to_another_namespace_is_left_out_and_counted(
    target: KnowledgeBase, driver: neo4j.Driver, embedder: CachedEmbedder, neo4j_target: Neo4jTarget,
    tmp_path: Path
) -> None:
    exp = Experience(problem="Archive old tickets", goal="Tickets older than a year archived", domain="support")
    target.add_experiences([exp])
    other = KnowledgeBase(driver, embedder, namespace=f"test-{uuid.uuid4().hex[:10]}", database=neo4j_target.database)
    try:
        other.add_experiences([exp])
        driver.execute_query(
            "MATCH (a:Experience {kb: $a, id: $id}), (b:Experience {kb: $b, id: $id}) CREATE (a)-[:ALTERNATIVE]->(b)",
            a=target.namespace, b=other.namespace, id=exp.key, database_=neo4j_target.database)
        path = tmp_path / "out.jsonl"
        report = export_to(target.gateway, target.namespace, path)
        assert report.cross_namespace_relationships == 1 and "ALTERNATIVE" not in report.relationships
        assert other.namespace not in path.read_text(encoding="utf-8")
    finally:
        other.clear()


# -- the command line -------------------------------------------------------------------------------


def kbgraph_cli(target: Neo4jTarget, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_kbgraph(target.env(namespace), *args)


def test_the_command_line_round_trip(
    source: Source, target: KnowledgeBase, neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    path = tmp_path / "cli.jsonl"
    exported = kbgraph_cli(neo4j_target, source.kb.namespace, "export", str(path), "--json")
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["nodes"] == source.kb.stats().nodes
    assert path.read_bytes() == source.export.read_bytes()

    # -n picks the target namespace, whatever namespace the file came from.
    imported = kbgraph_cli(neo4j_target, "not-this-one", "import", str(path), "-n", target.namespace, "--json")
    assert imported.returncode == 0, imported.stderr
    report = json.loads(imported.stdout)
    assert report["namespace"] == target.namespace and report["source_namespace"] == source.kb.namespace
    assert report["nodes_existing"] == 0 and report["nodes"]["Experience"]["new"] == source.kb.count()
    stats = json.loads(kbgraph_cli(neo4j_target, target.namespace, "stats", "--json").stdout)
    assert stats["nodes"] == source.kb.stats().nodes
    assert stats["relationships"] == source.kb.stats().relationships

    again = kbgraph_cli(neo4j_target, target.namespace, "import", str(path))
    assert again.returncode == 0, again.stderr
    assert "0 new" in again.stdout and "already there" in again.stdout


def test_the_command_line_names_the_bad_line_without_a_traceback(
    source: Source, target: KnowledgeBase, neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    lines, line, _ = _bad_json(_lines(source.export))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "kbgraph.cli", "import", str(bad)],
                            env=neo4j_target.env(target.namespace), capture_output=True, text=True, timeout=600)
    assert result.returncode == 2
    assert f"{bad}:{line}: invalid JSON" in result.stderr and "Traceback" not in result.stderr
    assert target.stats().nodes == {}


# -- values: an edited export is input like any other ----------------------------------------------------


def _edited(lines: list[str], label: str, edit: Callable[[dict[str, Any]], None]) -> tuple[list[str], int]:
    """``lines`` with the first node of ``label`` edited; the 1-based line number edited."""
    for index, text in enumerate(lines):
        record = json.loads(text)
        if record.get("record") == "node" and record["label"] == label:
            edit(record)
            return [*lines[:index], json.dumps(record), *lines[index + 1:]], index + 1
    raise AssertionError(f"no {label} in the export")


@pytest.mark.parametrize(("label", "name", "value", "message"), [
    ("Experience", "quality", 99, "properties.quality: 99 is not a number in [0, 1]"),
    ("Experience", "retrieved", -5, "properties.retrieved: -5 is not a count"),
    # At INT64_MAX every later feedback failed with "long overflow": a count must leave room to grow.
    ("Experience", "used", 2**63 - 1, "properties.used: 9223372036854775807 is not a count"),
    ("Experience", "status", "pwned", "properties.status: 'pwned' is not one of active, archived, rejected"),
    ("Experience", "success_rate", "high", "properties.success_rate: 'high' is not a number in [0, 1]"),
    ("Experience", "succeeded", 10**6, "properties.succeeded: 1000000 is more than used"),
    ("Experience", "kind", "concrete; DROP", "properties.kind: 'concrete; DROP' is not one of concrete, abstract"),
    ("Experience", "_lock", True, "properties._lock: internal properties"),
    ("Step", "reward", 7.5, "properties.reward: 7.5 is not a number in [-1, 1]"),
    ("Outcome", "outcome", 2.0, "properties.outcome: 2.0 is not a number in [0, 1]"),
    # Feedback stores the first STORED_OUTCOME_TASK_CHARS of a task and an agent's name of at most MAX_NAME_CHARS.
    ("Outcome", "task", "t" * (STORED_OUTCOME_TASK_CHARS + 1), "properties.task: 'ttt"),
    ("Outcome", "task", "  ", "properties.task: '  ' is not a non-empty string"),
    ("Outcome", "agent", "a" * (MAX_NAME_CHARS + 1), f"is {MAX_NAME_CHARS + 1:,} characters long, over the {MAX_NAME_CHARS:,}"),
    ("IngestedRecord", "ingested_at", "yesterday", "properties.ingested_at: 'yesterday' is not a datetime"),
    # The models' own field checks, which reads apply when they rebuild a record.
    ("Experience", "source_ids", ["run-1", "../../x"], "properties.source_ids.1: '../../x' is refused: String should match pattern"),
    ("Experience", "domain", "d" * 201, "properties.domain: 'ddd"),
    ("Experience", "difficulty", "trivial", "properties.difficulty: 'trivial' is refused: Input should be 'easy', 'medium' or 'hard'"),
    ("Step", "issue_type", "", "properties.issue_type: '' is refused: String should have at least 1 character"),
    ("Step", "args_schema", "{not json", "properties.args_schema: '{not json' is not JSON text of an object of strings"),
    ("Step", "experience_id", "exp_\u202eevil", "properties.experience_id: 'exp_\\u202eevil' is refused: String should match pattern"),
    ("FailureMode", "recovery_kind", "magic", "properties.recovery_kind: 'magic' is refused"),
    ("Concept", "label", " ", "properties.label: ' ' is refused: String should have at least 1 character"),
])
def test_every_imported_value_is_checked_like_the_models_and_nothing_is_written(
    source: Source, target: KnowledgeBase, tmp_path: Path, label: str, name: str, value: Any, message: str
) -> None:
    lines, line = _edited(_lines(source.export), label, lambda record: record["properties"].__setitem__(name, value))
    bad = tmp_path / "edited.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError) as raised:
        import_into(target, bad)
    assert any(p.startswith(f"{bad}:{line}: ") and message in p for p in raised.value.problems), raised.value.problems
    assert target.stats().nodes == {}


def test_a_relations_reason_longer_than_the_models_allow_is_refused_by_line(
    source: Source, target: KnowledgeBase, tmp_path: Path
) -> None:
    # It was imported whole (a relation's reason had no bound on import), where add_experiences
    # refuses a reason over MAX_TEXT_CHARS.
    lines = _lines(source.export)
    at = _first(lines, lambda record: record.get("record") == "relationship"
                and record["type"] in ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE"))
    lines = _edit(lines, at, lambda record: record["properties"].__setitem__("reason", "r" * (MAX_TEXT_CHARS + 1)))
    bad = tmp_path / "long-reason.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError) as raised:
        import_into(target, bad)
    assert any(p.startswith(f"{bad}:{at + 1}: ") and "properties.reason: 'rrr" in p
               and f"is {MAX_TEXT_CHARS + 1:,} characters long, over the {MAX_TEXT_CHARS:,}" in p
               for p in raised.value.problems), raised.value.problems
    assert target.stats().nodes == {}


def test_a_forged_ingest_marker_key_is_refused(source: Source, target: KnowledgeBase, tmp_path: Path) -> None:
    lines, line = _edited(_lines(source.export), "IngestedRecord",
                          lambda record: record.__setitem__("key", "anything at all"))
    bad = tmp_path / "edited.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInputError) as raised:
        import_into(target, bad)
    assert any(p.startswith(f"{bad}:{line}: ") and "is not an ingest marker" in p for p in raised.value.problems)
    assert target.stats().nodes == {}


def test_an_export_file_is_readable_by_its_owner_only(source: Source, tmp_path: Path) -> None:
    path = tmp_path / "private.jsonl"
    export_to(source.kb.gateway, source.kb.namespace, path)
    assert path.stat().st_mode & 0o777 == 0o600


def test_an_id_the_models_refuse_is_refused_by_line_with_the_relationships_to_it(
    source: Source, target: KnowledgeBase, neo4j_target: Neo4jTarget, tmp_path: Path
) -> None:
    # Imported as given, such an id made every later search of the namespace fail with
    # "invalid setting: id: String should match pattern", and put terminal escapes into the graph.
    forged = "../../x\u001b[31m"
    lines = _lines(source.export)
    at = _first(lines, _is_node("Experience"))
    old = json.loads(lines[at])["key"]
    ends = [i for i, text in enumerate(lines) if json.loads(text).get("record") == "relationship"
            and old in (json.loads(text)["start"]["key"], json.loads(text)["end"]["key"])]
    lines = _edit(lines, at, lambda r: r.update(key=forged))
    for index in ends:
        lines = _edit(lines, index, lambda r: [end.update(key=forged) for end in (r["start"], r["end"])
                                                if end["key"] == old])
    bad = tmp_path / "forged.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")

    with pytest.raises(InvalidInputError) as raised:
        import_into(target, bad)
    assert any(p.startswith(f"{bad}:{at + 1}: ") and "key: '../../x\\x1b[31m' is refused: String should match pattern"
               in p for p in raised.value.problems), raised.value.problems
    assert ends and all(any(p.startswith(f"{bad}:{i + 1}: ") and ".key: '../../x" in p for p in raised.value.problems)
                        for i in ends)
    assert target.stats().nodes == {}

    result = kbgraph_cli(neo4j_target, target.namespace, "import", str(bad))
    assert result.returncode == 2
    assert f"{bad}:{at + 1}: " in result.stderr and "Traceback" not in result.stderr
    assert "\x1b" not in result.stderr  # the escape is shown, not sent to the terminal
    assert target.stats().nodes == {}
