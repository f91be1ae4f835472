"""The inspection library (cypher/inspect/) and ``kbgraph cypher list | show | run``.

Every file documents itself (what it answers, each parameter, the ``:param`` lines to paste), is
accepted by Neo4j with those parameters, stays inside its namespace, and answers on a small
ingested knowledge base. The runner types ``name=value`` parameters, fills defaults and the
namespace, and never writes: a write is refused by its plan, and again by Neo4j in READ mode.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.embedders import Embedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.inspect import (
    InspectionError,
    InspectionLibrary,
    InspectionQuery,
    InspectionRunner,
    WriteRefusedError,
    coerce_assignments,
    coerce_value,
    load_query_file,
    parse_assignments,
    parse_inspection_query,
    statement_parameters,
)
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, Relation, Step
from kbgraph.core.utility import maintenance_score
from kbgraph.learning.feedback import FeedbackRecorder
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "kbgraph" / "samples"
INSPECT = ROOT / "cypher" / "inspect"
LIBRARY = InspectionLibrary()
QUERY_NAMES = LIBRARY.names()
# Queries that by design see the whole database (their header says why).
DATABASE_WIDE = {"index_status"}
TEN_DAYS_AGO = datetime.now(UTC) - timedelta(days=10)


# -- a small knowledge base to inspect ------------------------------------------------------------


@dataclass
class Inspected:
    kb: KnowledgeBase
    runner: InspectionRunner
    alternative_a: str
    alternative_b: str
    chain: list[str]  # inspect-from → inspect-mid → inspect-to, ADAPTATION edges 0.8 and 0.5
    pruning: dict[str, tuple[int, int, int]]  # id → (retrieved, used, succeeded)

    @property
    def namespace(self) -> str:
        return self.kb.namespace

    def run(self, query: str, /, **given: Any) -> list[dict[str, Any]]:
        return self.runner.run(LIBRARY.get(query), given, self.namespace).rows


def _experience(problem: str, domain: str, actions: list[str], relations: list[Relation] | None = None) -> Experience:
    return Experience(problem=problem, goal=f"{problem} — done", domain=domain,
                      steps=[Step(action=a, text=f"{a} for {{id}}") for a in actions], relations=relations or [])


@pytest.fixture(scope="module")
def inspected(driver: neo4j.Driver, embedder: Embedder, neo4j_target: Neo4jTarget) -> Iterator[Inspected]:
    """The sample trajectories and experiences ingested (concepts, meta-concepts, relations), plus
    declared ALTERNATIVE and ADAPTATION edges and recorded feedback."""
    kb = KnowledgeBase(driver, embedder, namespace=f"test-inspect-{uuid.uuid4().hex[:10]}",
                       database=neo4j_target.database)
    try:
        kb.ingest([SAMPLES / "trajectories.jsonl", SAMPLES / "experiences.jsonl"])
        b = _experience("Refund a damaged parcel by store credit", "retail", ["find_order", "issue_credit"])
        a = _experience("Refund a damaged parcel to the card", "retail", ["find_order", "check_item", "refund_card"],
                        [Relation(type="ALTERNATIVE", target_id=b.key, weight=0.7, reason="same problem, credit not card")])
        to = _experience("Carry the recipe to the last domain", "inspect-to", ["ship", "report"])
        mid = _experience("Carry the recipe through the middle", "inspect-mid", ["ship", "check"],
                          [Relation(type="ADAPTATION", target_id=to.key, weight=0.5, reason="mid to last")])
        start = _experience("Carry the recipe from the first domain", "inspect-from", ["ship", "log"],
                            [Relation(type="ADAPTATION", target_id=mid.key, weight=0.8, reason="first to mid")])
        kb.add_experiences([b, a, to, mid, start])
        # Feedback ten days ago: (retrieved, used, succeeded) per experience.
        pruning = {a.key: (4, 0, 0), b.key: (3, 2, 1), start.key: (3, 3, 3), mid.key: (2, 2, 2)}
        for eid, (retrieved, used, succeeded) in pruning.items():
            for n in range(retrieved):
                use = n < used
                kb.record_feedback(retrieved=[eid], used=[eid] if use else [],
                                   outcome=(n < succeeded) if use else None, at=TEN_DAYS_AGO)
        yield Inspected(kb, InspectionRunner(driver, neo4j_target.database), a.key, b.key,
                        [start.key, mid.key, to.key], pruning)
    finally:
        kb.clear()


def _example_parameters(query: InspectionQuery, inspected: Inspected) -> dict[str, Any]:
    """The parameters people paste (the header's :param lines), pointed at the test namespace."""
    values = {name: json.loads(text) for name, text in query.browser_parameters.items()}
    if "kb" in values:
        values["kb"] = inspected.namespace
    if query.name in ("experience", "alternatives"):
        values["id"] = inspected.alternative_a
    if query.name == "meta_concept":
        values["name"] = _a_meta_concept(inspected)["name"]
    if query.name == "adaptation_paths":
        values.update(from_domain="inspect-from", to_domain="inspect-to")
    return values


def _a_meta_concept(inspected: Inspected) -> dict[str, Any]:
    rows = inspected.kb.gateway.read("meta_concepts_top", kb=inspected.namespace, limit=1)
    assert rows, "ingesting the samples made no meta-concept"
    return rows[0]


# -- the files --------------------------------------------------------------------------------------


def test_the_library_holds_every_query_the_issue_asks_for() -> None:
    assert {"top_by_utility", "experience", "meta_concept", "alternatives", "adaptation_paths",
            "pruning_candidates", "index_status"} <= set(QUERY_NAMES)
    assert QUERY_NAMES == sorted(p.stem for p in INSPECT.glob("*.cypher"))


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_each_file_starts_with_what_it_answers_and_documents_every_parameter(name: str) -> None:
    query = LIBRARY.get(name)
    text = (INSPECT / f"{name}.cypher").read_text()
    assert text.startswith("// ") and query.summary.endswith("?"), "line 1 says, as a question, what it answers"
    declared = [p.name for p in query.parameters]
    assert set(declared) == set(query.used_parameters), "every $parameter documented, every documented one used"
    assert list(query.browser_parameters) == declared, "one :param line per parameter, in the same order"
    for parameter in query.parameters:
        assert parameter.description
        if not parameter.required:
            assert json.loads(query.browser_parameters[parameter.name]) == parameter.default, (
                f":param {parameter.name} shows the default the CLI fills")
    if name not in DATABASE_WIDE:
        assert "kb" in declared


@pytest.mark.parametrize("name", sorted(set(QUERY_NAMES) - DATABASE_WIDE))
def test_every_labelled_node_a_query_matches_is_in_its_namespace(name: str) -> None:
    patterns = re.findall(r"\((\w*):(\w+)\s*(\{[^}]*\})?\)", LIBRARY.get(name).cypher)
    assert patterns
    for variable, label, properties in patterns:
        assert "kb: $kb" in (properties or ""), f"({variable}:{label}) is not filtered by $kb"


def test_the_database_wide_query_says_why_it_has_no_namespace() -> None:
    query = LIBRARY.get("index_status")
    assert query.used_parameters == () and "no $kb filter" in query.header and "database-wide" in query.header


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_the_param_lines_to_paste_are_cypher_that_neo4j_evaluates(driver: neo4j.Driver, name: str) -> None:
    """cypher-shell and Browser evaluate `:param x => EXPR` as Cypher: each EXPR must be one."""
    for parameter, expression in LIBRARY.get(name).browser_parameters.items():
        records, _, _ = driver.execute_query(f"RETURN {expression} AS value", routing_=neo4j.RoutingControl.READ)
        assert records[0]["value"] == json.loads(expression), parameter


@pytest.mark.parametrize("name", QUERY_NAMES)
def test_neo4j_plans_each_query_as_a_read_with_the_documented_parameters(inspected: Inspected, name: str) -> None:
    query = LIBRARY.get(name)
    assert inspected.runner.query_type(query, query.bind(_example_parameters(query, inspected))) == "r"


@pytest.mark.parametrize("name", sorted(set(QUERY_NAMES) - DATABASE_WIDE))
def test_no_query_sees_another_namespace(inspected: Inspected, name: str) -> None:
    query = LIBRARY.get(name)
    given = _example_parameters(query, inspected)
    assert inspected.runner.run(query, given).rows, f"{name} answers in its own namespace"
    given["kb"] = f"test-inspect-empty-{uuid.uuid4().hex[:8]}"
    assert inspected.runner.run(query, given).rows == []


def test_the_sample_files_answer_unchanged_as_statements(inspected: Inspected) -> None:
    """What cypher-shell -f and the Browser receive is the file itself: comments and trailing ;."""
    query = LIBRARY.get("domains")
    records, _, _ = inspected.kb.driver.execute_query(
        query.text, {"kb": inspected.namespace}, routing_=neo4j.RoutingControl.READ)
    assert {r["domain"] for r in records} >= {"retail", "banking", "inspect-from"}


# -- what each query answers --------------------------------------------------------------------------


def test_top_by_utility_ranks_a_domain_by_decayed_utility_as_python_computes_it(inspected: Inspected) -> None:
    # One clock for the feedback and the query: days_idle must not depend on how long the run took.
    now = TEN_DAYS_AGO + timedelta(days=10)
    rows = inspected.run("top_by_utility", domain="retail", decay_per_day=math.log(2) / 30, limit=50, now=now)
    assert rows and all(r["domain"] == "retail" for r in rows)
    assert [r["utility"] for r in rows] == sorted((r["utility"] for r in rows), reverse=True)
    by_id = {r["id"]: r for r in rows}
    kb = inspected.kb
    states = FeedbackRecorder(kb.gateway, kb.namespace, kb.settings.learning).counters(
        [inspected.alternative_a, inspected.alternative_b], now=now)
    # The utility kb.learning_state reports (to 6 decimals), counted over the same calendar days.
    assert states and all(round(by_id[state.id]["utility"], 6) == state.utility for state in states)
    # b was used ten days ago: quality and usage impact decayed by 2^(−10/30).
    assert by_id[inspected.alternative_b]["days_idle"] == 10
    assert len(inspected.run("top_by_utility", limit=3)) == 3
    assert {r["domain"] for r in inspected.run("top_by_utility", limit=200)} >= {"retail", "banking", "inspect-to"}


def test_the_default_decay_is_a_thirty_day_half_life() -> None:
    decay = LIBRARY.get("top_by_utility").parameter("decay_per_day")
    assert decay is not None and decay.default == pytest.approx(math.log(2) / 30, abs=1e-4)


def test_experience_shows_steps_failures_concepts_and_relations_both_ways(inspected: Inspected) -> None:
    [row] = inspected.run("experience", id=inspected.alternative_a)
    assert row["experience"]["id"] == inspected.alternative_a
    assert [s["action"] for s in row["steps"]] == ["find_order", "check_item", "refund_card"]
    assert row["relations"] == [{"type": "ALTERNATIVE", "direction": "outgoing", "other_id": inspected.alternative_b,
                                 "other_domain": "retail", "other_kind": "concrete", "weight": 0.7,
                                 "reason": "same problem, credit not card", "inferred": False}]
    [back] = inspected.run("experience", id=inspected.alternative_b)
    assert back["relations"][0]["direction"] == "incoming"
    assert not any("embedding" in key for key in row["experience"])
    # An ingested trajectory: its steps and the concepts reflected from it.
    meta = _a_meta_concept(inspected)
    [neighbourhood] = inspected.run("meta_concept", name=meta["name"])
    some_experience = neighbourhood["experiences"][0]["properties"]["id"]
    [ingested] = inspected.run("experience", id=some_experience)
    assert ingested["steps"] and any(c["meta_concept"] == meta["name"] for c in ingested["concepts"])
    assert inspected.run("experience", id="no-such-experience") == []


def test_failure_modes_come_with_their_recovery(inspected: Inspected) -> None:
    rows = inspected.run("top_by_utility", limit=200)
    with_failures = [r for r in (inspected.run("experience", id=row["id"])[0] for row in rows) if r["failure_modes"]]
    assert with_failures, "the samples hold experiences with failure modes"
    assert all(f["description"] and "recovery" in f for r in with_failures for f in r["failure_modes"])


def test_meta_concept_returns_its_document_and_a_drawable_neighbourhood(inspected: Inspected) -> None:
    meta = _a_meta_concept(inspected)
    [row] = inspected.run("meta_concept", name=meta["name"])
    assert row["document"] == meta["document"] and row["meta_concept"]["_kind"] == "node"
    assert row["concepts"] and row["insights"] and row["experiences"]
    assert {n["labels"][0] for n in row["concepts"] + row["insights"] + row["experiences"]} == {
        "Concept", "Insight", "Experience"}
    assert {link["type"] for link in row["links"]} == {"INSTANCE_OF", "ABOUT", "EXHIBITS"}
    assert all(link["end"] == row["meta_concept"]["element_id"] for link in row["links"])
    # Vectors are left out of answers; everything else is there.
    assert not any(k.endswith("embedding") for n in row["experiences"] for k in n["properties"])
    assert [r["id"] for r in inspected.run("meta_concept", name=meta["id"])] == [meta["id"]]
    assert len(inspected.run("meta_concept", name=meta["name"], limit=1)[0]["insights"]) == 1


def test_alternatives_come_both_ways_with_weight_and_reason(inspected: Inspected) -> None:
    [row] = inspected.run("alternatives", id=inspected.alternative_a)
    assert (row["id"], row["direction"], row["weight"], row["reason"]) == (
        inspected.alternative_b, "outgoing", 0.7, "same problem, credit not card")
    assert row["path"]["_kind"] == "path" and len(row["path"]["relationships"]) == 1
    [back] = inspected.run("alternatives", id=inspected.alternative_b)
    assert (back["id"], back["direction"]) == (inspected.alternative_a, "incoming")


def test_adaptation_paths_follow_edges_between_two_domains_up_to_three_hops(inspected: Inspected) -> None:
    [row] = inspected.run("adaptation_paths", from_domain="inspect-from", to_domain="inspect-to")
    start, mid, to = inspected.chain
    assert row["hops"] == 2 and row["weight"] == pytest.approx(0.8 * 0.5)
    assert row["experiences"] == [f"inspect-from: {start}", f"inspect-mid: {mid}", f"inspect-to: {to}"]
    assert row["relations"] == ["ADAPTATION", "ADAPTATION"] and row["reasons"] == ["first to mid", "mid to last"]
    assert [n["properties"]["id"] for n in row["path"]["nodes"]] == inspected.chain
    assert inspected.run("adaptation_paths", from_domain="inspect-from", to_domain="inspect-to", max_hops=1) == []
    assert inspected.run("adaptation_paths", from_domain="inspect-from", to_domain="inspect-to",
                         relation_types=["ALTERNATIVE"]) == []
    assert inspected.run("adaptation_paths", from_domain="inspect-to", to_domain="inspect-from") == []


def test_pruning_candidates_rank_by_the_autorefine_score_lowest_first(inspected: Inspected) -> None:
    rows = inspected.run("pruning_candidates")
    eligible = {i: c for i, c in inspected.pruning.items() if c[0] >= 3}
    assert {r["id"] for r in rows} == set(eligible)
    for row in rows:
        retrieved, used, succeeded = eligible[row["id"]]
        assert (row["retrieved"], row["used"], row["succeeded"]) == (retrieved, used, succeeded)
        assert row["score"] == pytest.approx(maintenance_score(succeeded, used, retrieved))
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert [r["score"] for r in rows] == sorted(r["score"] for r in rows)
    assert rows[0]["id"] == inspected.alternative_a and rows[0]["score"] == 0
    assert not any(r["in_bottom_fraction"] for r in rows), "floor(3 × 0.2) = 0"
    flagged = inspected.run("pruning_candidates", prune_fraction=0.34)
    assert [r["in_bottom_fraction"] for r in flagged] == [True, False, False]
    assert {r["id"] for r in inspected.run("pruning_candidates", min_retrieved=2)} == set(inspected.pruning)


def test_index_status_lists_every_index_with_its_state(inspected: Inspected) -> None:
    rows = {r["name"]: r for r in inspected.runner.run(LIBRARY.get("index_status")).rows}
    assert rows["experience_pg_embedding"]["type"] == "VECTOR" and rows["experience_pg_embedding"]["vector_dimensions"] == 384
    assert rows["experience_key"]["state"] == "ONLINE" and rows["experience_text"]["type"] == "FULLTEXT"


def test_domains_count_the_experiences_of_each_domain(inspected: Inspected) -> None:
    rows = {r["domain"]: r for r in inspected.run("domains")}
    assert {d: r["experiences"] for d, r in rows.items()} == inspected.kb.stats().experiences_by_domain
    assert rows["inspect-from"]["reaches"] == ["inspect-mid"]


def test_step_texts_show_one_vector_per_text_and_how_many_steps_say_it(inspected: Inspected) -> None:
    [row] = inspected.run("step_texts", limit=1000)
    texts = {t["text"]: t for t in row["most_said"]}
    assert row["distinct_texts"] == len(texts) == row["vectors"] and row["steps"] == sum(t["steps"] for t in texts.values())
    assert (row["with_own_vector"], row["without_vector"], row["orphans"]) == (0, 0, 0)
    shared = texts["find_order: find_order for {id}"]
    assert shared["steps"] == 2, "two experiences' steps, one text, one vector"
    assert [t["steps"] for t in row["most_said"]] == sorted((t["steps"] for t in row["most_said"]), reverse=True)
    assert len(inspected.run("step_texts", limit=1)[0]["most_said"]) == 1


# -- parameters --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("10", 10), ("-3", -3), ("0.5", 0.5), ("1e-3", 0.001), ("true", True), ("FALSE", False), ("null", None),
    ('["ADAPTATION", "ALTERNATIVE"]', ["ADAPTATION", "ALTERNATIVE"]), ('{"a": 1}', {"a": 1}),
    ('"42"', "42"), ("retail", "retail"), ("web/shopping admin", "web/shopping admin"), ("", ""),
])
def test_name_value_text_is_read_as_numbers_booleans_null_json_or_text(text: str, value: Any) -> None:
    assert coerce_value(text) == value and type(coerce_value(text)) is type(value)


def test_a_value_is_read_as_its_parameters_documented_type() -> None:
    top, experience = LIBRARY.get("top_by_utility"), LIBRARY.get("experience")
    assert coerce_assignments(top, {"limit": "5", "decay_per_day": "1", "domain": "retail"}) == {
        "limit": 5, "decay_per_day": 1.0, "domain": "retail"}
    assert coerce_assignments(experience, {"id": "123"}) == {"id": "123"}, "an id is text, like its :param example"
    paths = LIBRARY.get("adaptation_paths")
    assert coerce_assignments(paths, {"relation_types": '["ADAPTATION", "ALTERNATIVE"]'}) == {
        "relation_types": ["ADAPTATION", "ALTERNATIVE"]}
    with pytest.raises(InvalidInputError) as bad:
        coerce_assignments(top, {"limit": "ten", "decay_per_day": "fast"})
    assert bad.value.problems == ["--param limit=ten: expected a whole number", "--param decay_per_day=fast: expected a number"]
    with pytest.raises(InvalidInputError, match="expected a JSON list"):
        coerce_assignments(paths, {"relation_types": "ADAPTATION"})
    with pytest.raises(InvalidInputError, match="not valid JSON"):
        coerce_assignments(paths, {"relation_types": "[ADAPTATION]"})


def test_name_value_pairs_must_be_well_formed() -> None:
    assert parse_assignments(["limit=5", "domain=a=b", "empty="]) == {"limit": "5", "domain": "a=b", "empty": ""}
    with pytest.raises(InvalidInputError) as bad:
        parse_assignments(["limit", "=5", "two words=1", "limit=1", "x=1", "x=2"])
    assert len(bad.value.problems) == 4 and "--param x: given twice" in bad.value.problems


def test_defaults_and_the_namespace_fill_what_is_not_given() -> None:
    top = LIBRARY.get("top_by_utility")
    # `now` defaults to the database's clock (None); a caller (maintenance's dry run) may pass its own.
    assert top.bind({}, namespace="tenant") == {"kb": "tenant", "domain": None, "decay_per_day": 0.0231, "limit": 10,
                                                "now": None}
    assert top.bind({"kb": "other", "limit": 3}, namespace="tenant")["kb"] == "other"
    assert LIBRARY.get("index_status").bind({}, namespace="tenant") == {}, "only the parameters a query uses"


def test_missing_and_unknown_parameters_are_all_named_before_anything_runs() -> None:
    with pytest.raises(InvalidInputError) as bad:
        LIBRARY.get("adaptation_paths").bind({"limt": 3}, namespace="tenant")
    message = str(bad.value)
    assert "nothing was run" in message and "no parameter 'limt'" in message
    assert "missing parameter 'from_domain'" in message and "missing parameter 'to_domain'" in message
    assert "--param to_domain=VALUE" in message


def test_parameters_are_found_outside_strings_and_comments() -> None:
    cypher = "MATCH (e {kb: $kb}) // $not_this\nWHERE e.x = '$nor_this' AND e.y = \"\\\"$no\" AND e.`$z` = $limit /* $c */ RETURN $kb"
    assert statement_parameters(cypher) == ["kb", "limit"]


@pytest.mark.parametrize(("text", "problem"), [
    ("MATCH (n) RETURN n", "start with // comments"),
    ("// Answers?\n// @param limit ten — rows\nRETURN $limit", "expected `required` or a default"),
    ("// Answers?\n// @param limit 10\nRETURN $limit", "add a description"),
    ("// Answers?\n// @param x 1 — a\n// @param x 2 — b\nRETURN $x", "declared twice"),
    ("// Answers?\nRETURN 1; RETURN 2;", "more than one statement"),
    ("// Only a header?\n", "no statement"),
])
def test_a_malformed_file_is_refused_with_the_problem_named(text: str, problem: str) -> None:
    with pytest.raises(InspectionError, match=re.escape(problem)):
        parse_inspection_query("mine", text)


def test_an_unknown_query_lists_the_known_ones() -> None:
    with pytest.raises(InspectionError, match="no inspection query 'nope'; there are: adaptation_paths"):
        LIBRARY.get("nope")
    with pytest.raises(InspectionError, match="no inspection query"):
        LIBRARY.get("../queries/ping")


def test_a_parameter_nested_too_deep_or_beyond_64_bits_is_named_not_a_crash() -> None:
    top, paths = LIBRARY.get("top_by_utility"), LIBRARY.get("adaptation_paths")
    with pytest.raises(InvalidInputError) as deep:  # deep enough for json.loads to hit the recursion limit
        coerce_assignments(paths, {"relation_types": "[" * 5000 + "]" * 5000})
    assert deep.value.problems[0].endswith("nested deeper than 64 levels")
    with pytest.raises(InvalidInputError, match="relation_types=.*nested deeper than 64 levels"):
        coerce_assignments(paths, {"relation_types": "[" * 100 + "]" * 100})
    with pytest.raises(InvalidInputError, match="limit=99999999999999999999: .*64-bit"):
        coerce_assignments(top, {"limit": "99999999999999999999"})


def test_a_query_file_that_is_a_folder_not_utf8_or_oversized_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "folder.cypher").mkdir()
    (tmp_path / "latin1.cypher").write_bytes(b"// Caf\xe9?\nRETURN 1")
    (tmp_path / "huge.cypher").write_bytes(b"/" * 2_000_000)
    for name, problem in [("missing.cypher", "no such file"), ("folder.cypher", "not a file"),
                          ("latin1.cypher", "not UTF-8 text (byte 7 is 0xe9)"), ("huge.cypher", "over 1,000,000 bytes")]:
        with pytest.raises(InspectionError, match=re.escape(problem)):
            load_query_file(tmp_path / name)


# -- writes are refused ---------------------------------------------------------------------------


WRITE = """// Writes, and must never run: does the runner refuse it?
// @param kb "default" — the namespace
CREATE (e:Experience {kb: $kb, id: 'written-by-inspection', status: 'active'})
RETURN e.id AS id;
"""


def _written(inspected: Inspected) -> int:
    return len(inspected.kb.store.existing_ids(["written-by-inspection"]))


def test_a_write_is_refused_by_its_plan_and_nothing_is_written(inspected: Inspected, tmp_path: Path) -> None:
    path = tmp_path / "write.cypher"
    path.write_text(WRITE)
    before = inspected.kb.stats()
    with pytest.raises(WriteRefusedError, match="'write' is a read-write statement: inspection only reads"):
        inspected.runner.run(load_query_file(path), {}, inspected.namespace)
    assert _written(inspected) == 0 and inspected.kb.stats() == before


def test_neo4j_itself_refuses_a_write_in_read_access_mode(inspected: Inspected) -> None:
    """The second guard: even past the plan check, the READ transaction cannot write."""
    query = parse_inspection_query("write", WRITE)
    with pytest.raises(WriteRefusedError, match="Neo4j refused it \\(READ access mode\\)"):
        inspected.runner.execute_read(query, {"kb": inspected.namespace})
    assert _written(inspected) == 0


def test_schema_changes_are_refused_too(inspected: Inspected) -> None:
    query = parse_inspection_query("index", "// Makes an index?\nCREATE INDEX inspect_never IF NOT EXISTS FOR (n:Nope) ON (n.x)")
    with pytest.raises(WriteRefusedError, match="schema statement"):
        inspected.runner.run(query)
    names = {r["name"] for r in inspected.runner.run(LIBRARY.get("index_status")).rows}
    assert "inspect_never" not in names


def test_a_query_neo4j_rejects_is_reported_with_its_file(inspected: Inspected) -> None:
    query = parse_inspection_query("broken", "// Broken?\nMATCH (n {kb: $kb} RETURN n", "mine/broken.cypher")
    with pytest.raises(InspectionError, match=r"Neo4j refused inspection query 'broken' \(mine/broken.cypher\): Neo.ClientError.Statement.SyntaxError"):
        inspected.runner.run(query, {"kb": inspected.namespace})


# -- the command line -------------------------------------------------------------------------------
# Through the CLI's main in this process (tests/cli_in_process.py); the refused write runs as a
# process of its own, whose exit status and one line of stderr are what it checks.


def kbgraph(target: Neo4jTarget, namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_kbgraph(target.env(namespace), *args)


def test_cli_lists_and_shows_the_queries(neo4j_target: Neo4jTarget, namespace: str) -> None:
    listed = kbgraph(neo4j_target, namespace, "cypher", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    queries = {q["name"]: q for q in json.loads(listed.stdout)}
    assert set(queries) == set(QUERY_NAMES)
    assert {"name": "limit", "description": "how many experiences", "required": False, "default": 10} in queries[
        "top_by_utility"]["parameters"]
    shown = kbgraph(neo4j_target, namespace, "cypher", "show", "pruning_candidates")
    assert shown.returncode == 0 and shown.stdout == (INSPECT / "pruning_candidates.cypher").read_text()


def test_cli_runs_a_query_in_the_namespace_given(neo4j_target: Neo4jTarget, inspected: Inspected) -> None:
    result = kbgraph(neo4j_target, "elsewhere", "cypher", "run", "adaptation_paths", "-n", inspected.namespace,
                     "--param", "from_domain=inspect-from", "-p", "to_domain=inspect-to", "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["parameters"]["kb"] == inspected.namespace and answer["parameters"]["max_hops"] == 3
    assert [row["hops"] for row in answer["rows"]] == [2]
    text = kbgraph(neo4j_target, inspected.namespace, "cypher", "run", "experience", "-p", f"id={inspected.alternative_a}")
    assert text.returncode == 0, text.stderr
    assert "steps: (3)" in text.stdout and "action: refund_card" in text.stdout and "1 row — experience(" in text.stderr


def test_cli_refuses_a_write_in_one_line_and_writes_nothing(
    neo4j_target: Neo4jTarget, inspected: Inspected, tmp_path: Path
) -> None:
    path = tmp_path / "write.cypher"
    path.write_text(WRITE)
    result = subprocess.run([sys.executable, "-m", "kbgraph.cli", "cypher", "run", str(path)],
                            env=neo4j_target.env(inspected.namespace), capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "kbgraph: error: inspection query 'write' is a read-write statement: inspection only reads, so it was "
        "not run and nothing was written"]
    assert _written(inspected) == 0


def test_cli_names_bad_parameters_before_connecting(neo4j_target: Neo4jTarget, namespace: str) -> None:
    env = {**neo4j_target.env(namespace), "NEO4J_URI": "bolt://127.0.0.1:1"}  # unreachable: must not be needed
    result = run_kbgraph(env, "cypher", "run", "top_by_utility", "-p", "limit=ten", "-p", "nope=1")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--param limit=ten: expected a whole number" in result.stderr
    missing = run_kbgraph(env, "cypher", "run", "experience")
    assert missing.returncode == 2 and "missing parameter 'id'" in missing.stderr
    unknown = run_kbgraph(env, "cypher", "run", "top_by_utility", "-p", "nope=1")
    assert unknown.returncode == 2 and "no parameter 'nope'; it takes kb, domain, decay_per_day, limit" in unknown.stderr
