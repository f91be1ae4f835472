"""The whole ingestion pipeline on a real Neo4j with the real MiniLM."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KbStats, KnowledgeBase
from tests.conftest import SHARED_DATA, Neo4jTarget

SAMPLES = Path(__file__).resolve().parents[2] / "kbgraph" / "samples"
RELATIONS = ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE")


def counts(stats: KbStats) -> tuple[dict[str, int], dict[str, int]]:
    return stats.nodes, stats.relationships


def test_the_shared_trajectories_make_a_graph_with_every_relation_and_reingesting_changes_nothing(
    kb: KnowledgeBase,
) -> None:
    files = sorted((SHARED_DATA / "trajectories").glob("*.jsonl"))
    report = kb.ingest(files)
    assert report.records_read == 1459 and report.records_rejected == 0
    assert report.experiences_new > 0 and report.meta_concepts > 0
    for kind in RELATIONS:
        assert report.relations[kind] > 0, report.relations
    # Merged experiences keep every trajectory they came from.
    assert report.experiences_merged > 0
    sources = [s for e in kb.get_many(list(kb.store.iter_ids())) for s in e.source_ids]
    assert sorted(sources) == sorted(set(sources)) and len(sources) == 1459
    before = kb.stats()
    again = kb.ingest(files)
    assert again.records_already_ingested == 1459 and again.experiences_new == 0
    assert counts(kb.stats()) == counts(before)


def test_sample_trajectories_give_documents_and_relations(kb: KnowledgeBase) -> None:
    report = kb.ingest([SAMPLES / "trajectories.jsonl", SAMPLES / "experiences.jsonl"])
    assert report.records_read == 66 and report.meta_concepts > 0 and report.documents_updated > 0
    docs = kb.gateway.read("meta_concepts_top", kb=kb.namespace, limit=5)
    assert docs and all(d["document"] for d in docs)
    assert "## " in docs[0]["document"]


def test_a_bad_record_stops_the_run_before_anything_is_written(kb: KnowledgeBase, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = (SAMPLES / "trajectories.jsonl").read_text().splitlines()[:3]
    path.write_text("\n".join([*good, json.dumps({"id": "x", "steps": []})]) + "\n")
    with pytest.raises(InvalidInputError, match=f"{path}:4: task: Field required"):
        kb.ingest([path])
    assert kb.count() == 0


def test_skip_invalid_goes_on_and_lists_what_it_skipped(kb: KnowledgeBase, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = (SAMPLES / "trajectories.jsonl").read_text().splitlines()[:3]
    path.write_text("\n".join([good[0], "{nope", *good[1:]]) + "\n")
    report = kb.ingest([path], skip_invalid=True)
    assert report.records_rejected == 1 and report.rejected[0].startswith(f"{path}:2: invalid JSON")
    assert kb.stats().experiences_by_kind["concrete"] == 3


def test_paraphrased_concepts_share_a_meta_concept(kb: KnowledgeBase, tmp_path: Path) -> None:
    """Two trajectories doing the same thing, reflected on in different words, meet in one
    meta-concept; an unrelated one stays apart."""

    class ParaphrasingReflector:
        name = "test"
        labels = {"t-ret-1": "return item", "t-ret-2": "send back a product", "t-fly": "book a flight"}

        def reflect(self, trajectory, experience):  # type: ignore[no-untyped-def]
            from kbgraph.core.models import ConceptInsight

            verb = "returned a delivered item for a refund" if "ret" in trajectory.id else "booked a flight seat"
            return [ConceptInsight(concept=self.labels[trajectory.id], insight=f"The agent {verb} successfully.")]

    from kbgraph.ingest.pipeline import IngestPipeline

    lines = [
        {"id": "t-ret-1", "domain": "retail", "task": "Return the kettle from order #W1",
         "steps": [{"action": "return_delivered_order_items", "arguments": {"order_id": "#W1"}}]},
        {"id": "t-ret-2", "domain": "retail", "task": "I want to send back the lamp of order #W2",
         "steps": [{"action": "return_delivered_order_items", "arguments": {"order_id": "#W2"}}]},
        {"id": "t-fly", "domain": "airline", "task": "Book me a seat to Paris on May 3",
         "steps": [{"action": "book_reservation", "arguments": {"flight": "HAT001"}}]},
    ]
    path = tmp_path / "para.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    IngestPipeline(kb, reflector=ParaphrasingReflector()).ingest([path])
    rows = kb.driver.execute_query(
        "MATCH (c:Concept {kb: $kb})-[:INSTANCE_OF]->(m:MetaConcept) RETURN c.label AS label, m.id AS meta",
        kb=kb.namespace, database_=kb.gateway.database).records
    meta = {r["label"]: r["meta"] for r in rows}
    assert meta["return item"] == meta["send back a product"]
    assert meta["book a flight"] != meta["return item"]


@pytest.mark.extended  # slowest of its kind (see pyproject's addopts); ./kb test -m extended
def test_an_ingest_killed_at_a_random_point_and_rerun_ends_like_a_clean_run(
    kb: KnowledgeBase, neo4j_target: Neo4jTarget,
) -> None:
    files = [SAMPLES / "trajectories.jsonl", SAMPLES / "experiences.jsonl",
             SHARED_DATA / "trajectories" / "airline.jsonl", SHARED_DATA / "trajectories" / "banking.jsonl"]
    started = time.perf_counter()
    kb.ingest(files)
    clean_seconds = time.perf_counter() - started
    clean = counts(kb.stats())

    namespace = kb.namespace + "-killed"
    command = [sys.executable, "-m", "kbgraph.cli", "ingest", *map(str, files)]
    seed = random.randrange(1_000_000)
    # The subprocess needs a few seconds to import and load the model before it writes anything.
    delay = random.Random(seed).uniform(4.0, 6.0 + clean_seconds)
    killed = KnowledgeBase(kb.driver, kb.embedder, namespace=namespace, database=kb.gateway.database)
    try:
        proc = subprocess.Popen(command, env=neo4j_target.env(namespace), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.kill()
        proc.wait()
        rerun = subprocess.run(command, env=neo4j_target.env(namespace), capture_output=True, text=True, timeout=600)
        assert rerun.returncode == 0, rerun.stderr
        assert counts(killed.stats()) == clean, f"seed {seed}, killed after {delay:.1f} s"
    finally:
        killed.clear()


def test_the_llm_path_end_to_end_through_a_local_openai_compatible_server(
    kb: KnowledgeBase, tmp_path: Path,
) -> None:
    """Abstraction, reflection and documents by an LLM over real HTTP: a 429 and a malformed answer
    on the way are retried; what is stored is what the model said, validated (a document's
    statements as it reworded them, with the evidence of the runs)."""
    from kbgraph.ingest.abstract_llm import SYSTEM_PROMPT as ABSTRACT_PROMPT
    from kbgraph.ingest.pipeline import pipeline_from_settings
    from kbgraph.ingest.reflect_llm import SYSTEM_PROMPT as REFLECT_PROMPT
    from kbgraph.core.settings import Settings
    from tests.fakes.openai_server import api_error, running_fake_openai

    def answer(body: dict) -> str:  # type: ignore[type-arg]
        system = body["messages"][0]["content"]
        if system.startswith(ABSTRACT_PROMPT[:200]):
            return json.dumps({
                "problem": "A customer wants to return a delivered item for a refund",
                "goal": "The item is returned and refunded to the original payment method",
                "difficulty": "easy",
                "steps": [{"action": "return_delivered_order_items", "text": "return {item_ids} of {order_id}",
                           "args_schema": {"order_id": "string"}}],
                "failure_modes": [], "generalizability": 0.8,
            })
        if system.startswith(REFLECT_PROMPT[:200]):
            return json.dumps({"insights": ["To return delivered order items, call the tool "
                                            "return_delivered_order_items with order_id."]})
        return json.dumps({"statements": ["Make sure the order is delivered before returning its items."]})

    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"id": "llm-1", "domain": "retail", "task": "Return the kettle of order #W1",
                                "steps": [{"action": "return_delivered_order_items",
                                           "arguments": {"order_id": "#W1"}}],
                                "outcome": {"success": True}}) + "\n")
    with running_fake_openai() as fake:
        fake.chat_answer = answer
        fake.responses.extend([(429, api_error("slow down", "rate_limit_exceeded")), (200, {
            "id": "x", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{oops"}}],
        })])
        kb.settings = Settings(namespace=kb.namespace, abstractor="llm", reflector="llm", llm_base_url=fake.base_url,
                               llm_api_key="test", llm_model="fake", llm_max_attempts=4)
        pipeline = pipeline_from_settings(kb)
        pipeline.abstractor.llm.backoff_initial_s = 0.01  # type: ignore[attr-defined]
        pipeline.abstractor.llm.backoff_max_s = 0.05  # type: ignore[attr-defined]
        report = pipeline.ingest([path])
        assert len(fake.chat_requests) >= 5  # 429 + malformed + abstraction + reflection + document
    assert report.experiences_new == 1 and report.meta_concepts == 1
    [exp] = kb.get_many([e for e in kb.store.iter_ids()])
    assert exp.problem == "A customer wants to return a delivered item for a refund"
    assert exp.source_ids == ["llm-1"]
    [doc] = kb.gateway.read("meta_concepts_top", kb=kb.namespace, limit=5)
    # The lesson and where it is filed are the rules' (the model reworded it), the document's words the model's.
    assert doc["name"] == "return delivered order items"
    assert "- Make sure the order is delivered before returning its items. (1 run, 1 task" in doc["document"]
    [insight] = kb.gateway.read("insight_evidence", kb=kb.namespace, concept_ids=[], meta_ids=[doc["id"]])
    assert insight["text"].startswith("To return delivered order items, call the tool")
    assert json.loads(insight["record"])["kind"] == "how"


def test_a_trajectory_of_ten_thousand_steps_goes_through(kb: KnowledgeBase, tmp_path: Path) -> None:
    steps = [{"action": "click", "arguments": {"x": i % 7}} for i in range(10_000)]
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps({"id": "long", "domain": "web", "task": "click through the wizard", "steps": steps}) + "\n")
    report = kb.ingest([path])
    assert report.experiences_new == 1
    assert kb.stats().nodes["Step"] == 10_000


def test_incremental_ingests_attach_and_recluster_equals_clustering_everything_at_once(
    kb: KnowledgeBase, tmp_path: Path,
) -> None:
    lines = (SAMPLES / "trajectories.jsonl").read_text().splitlines()
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    first.write_text("\n".join(lines[::2]) + "\n")
    second.write_text("\n".join(lines[1::2]) + "\n")
    kb.ingest([first])
    metas_after_first = kb.stats().nodes["MetaConcept"]
    report = kb.ingest([second])
    assert report.meta_concepts_new < report.meta_concepts  # some concepts joined existing meta-concepts
    assert report.meta_concepts >= metas_after_first

    def assignment(target: KnowledgeBase) -> set[tuple[str, str]]:
        rows = target.driver.execute_query(
            "MATCH (c:Concept {kb: $kb})-[:INSTANCE_OF]->(m:MetaConcept) RETURN c.label AS c, m.name AS m",
            kb=target.namespace, database_=target.gateway.database).records
        return {(r["c"], r["m"]) for r in rows}

    kb.recluster()
    once = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-once", database=kb.gateway.database)
    try:
        once.ingest([SAMPLES / "trajectories.jsonl"])
        assert assignment(kb) == assignment(once)
        concepts = kb.stats().nodes["Concept"]
        assert len(assignment(kb)) == concepts  # every concept in exactly one meta-concept
    finally:
        once.clear()
