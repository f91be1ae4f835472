"""The search benchmark: scaled KBs made from seed experiences, and the latency run (real Neo4j,
real MiniLM). Behaviour only: no speed thresholds."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from kbgraph.bench.cpu import CpuMeter, managed_server_pid, process_cpu_s
from kbgraph.bench.scale import ScaledKbBuilder, build_scaled_kb, load_seeds
from kbgraph.bench.search import bench_search_cli, growth_per_doubling, percentiles, run_search_benchmark
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.settings import Settings
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, FailureMode, Relation, RelationType, Step
from tests.conftest import Neo4jTarget

SIZE = 60


def _seeds(kb: KnowledgeBase) -> list[Experience]:
    def retail(problem: str, actions: list[str]) -> Experience:
        return Experience(problem=problem, goal="Order handled and confirmed", domain="retail",
                          steps=[Step(action=a, text=f"{a.replace('_', ' ')} ({{order_id}})") for a in actions],
                          source_ids=[f"seed-{len(problem)}"])

    seeds = [
        retail("Customer wants to return a delivered keyboard", ["find_user_id_by_email", "get_order_details",
                                                                 "return_delivered_order_items"]),
        retail("Customer wants to exchange a delivered lamp for another colour",
               ["find_user_id_by_name_zip", "get_order_details", "get_product_details", "exchange_delivered_order_items"]),
        retail("Customer wants to cancel a pending order", ["find_user_id_by_email", "get_order_details",
                                                            "cancel_pending_order"]),
        retail("Customer wants to change the shipping address of a pending order",
               ["find_user_id_by_email", "get_user_details", "modify_pending_order_address"]),
        Experience(problem="What is the top-1 best-selling product in 2022", domain="web/shopping_admin",
                   source_ids=["seed-web-1"]),
        Experience(problem="Show the most recent orders of the store", domain="web/shopping_admin",
                   source_ids=["seed-web-2"]),
    ]
    seeds[0].relations = [Relation(type=RelationType.ALTERNATIVE, target_id=seeds[1].key, weight=0.7, reason="alt")]
    seeds[2].relations = [Relation(type=RelationType.COMPOSITION, target_id=seeds[3].key, weight=0.8, reason="comp")]
    seeds[4].relations = [Relation(type=RelationType.ABSTRACTION, target_id=seeds[5].key, weight=0.9, reason="abs")]
    kb.embed_missing(seeds)  # the seeds themselves are never stored
    return seeds


def _eval_dir(tmp_path: Path) -> Path:
    retail = [
        {"qid": "r1", "query": "I want to return the keyboard I received", "domain": "retail",
         "steps_so_far": [{"action": "find_user_id_by_email", "arguments": {"email": "a@b.com"}}]},
        {"qid": "r2", "query": "Please cancel my pending order", "domain": "retail"},
    ]
    web = [
        {"qid": "w1", "query": "Which product sold best in 2022", "domain": "web/shopping_admin",
         "exclude": ["seed-web-1"]},
        {"qid": "w2", "query": "List the latest orders", "domain": "web/shopping_admin"},
    ]
    for name, rows in (("retail_queries.jsonl", retail), ("webarena_queries.jsonl", web)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def _well_formed(p: dict[str, float]) -> None:
    assert p["n"] > 0
    assert 0 <= p["p50"] <= p["p95"] <= p["p99"] <= p["max"]
    assert p["mean"] > 0


def test_scaled_kb_from_seed_experiences(kb: KnowledgeBase) -> None:
    seeds = _seeds(kb)
    progress: list[tuple[str, int, int]] = []
    report = build_scaled_kb(kb, seeds, SIZE, seed=7, batch_size=25,
                             on_progress=lambda stage, done, total: progress.append((stage, done, total)))
    assert report.experiences == SIZE == kb.count()
    assert report.written == SIZE and not report.reused
    assert report.seeds == len(seeds)
    assert ("experiences", SIZE, SIZE) in progress
    # Edges mirror the seed graph's, all four kinds the seeds have.
    assert report.relations > 0
    assert {t for t, n in report.relations_by_type.items() if n} == {"ALTERNATIVE", "COMPOSITION", "ABSTRACTION"}
    # ~8 steps per experience on average (only the retail ones have steps).
    assert 5 * SIZE <= report.steps <= 11 * SIZE

    # Deterministic: the same seed makes the same ids, another seed others.
    ids = sorted(kb.store.iter_ids())
    same = ScaledKbBuilder(seeds, SIZE, seed=7)
    assert sorted(same.experience(n).key for n in range(SIZE)) == ids
    other = ScaledKbBuilder(seeds, SIZE, seed=8)
    assert not {other.experience(n).key for n in range(SIZE)} & set(ids)
    assert len(set(ids)) == SIZE and not set(ids) & {s.key for s in seeds}

    # Every vector is unit length, close to its seed's but not equal to it.
    for n in range(0, SIZE, 3):
        exp = kb.get(same.experience(n).key)
        seed = seeds[int(same.problem_seed[n])]
        assert exp is not None and exp.source_ids == [f"synthetic-{n}"]
        assert exp.problem.endswith(f"(variant {n})") and exp.domain == seed.domain
        vectors = [exp.pg_embedding, exp.structure_embedding, exp.context_embedding,
                   *[s.embedding for s in exp.steps]]
        for vector in vectors:
            assert vector is not None
            assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-6
        assert seed.pg_embedding is not None and exp.pg_embedding is not None
        cosine = float(np.dot(seed.pg_embedding, exp.pg_embedding))
        assert 0.8 < cosine < 0.9999
    # A copied step keeps its seed's vector: the namespace holds one vector per distinct step text.
    seed_vectors = {(s.action, s.text): s.embedding for seed in seeds for s in seed.steps}
    for exp in kb.get_many([same.experience(n).key for n in range(0, SIZE, 5)]):
        for step in exp.steps:
            assert step.embedding == pytest.approx(seed_vectors[(step.action, step.text)], abs=1e-6)
    assert kb.stats().nodes["StepText"] <= len(seed_vectors) < report.steps

    # Built already: reused, nothing written; reading the seeds back from a namespace works too.
    again = build_scaled_kb(kb, seeds, SIZE, seed=7)
    assert again.reused and again.written == 0 and again.experiences == SIZE
    assert {e.key for e in load_seeds(kb.gateway, kb.namespace)} == set(ids)


def test_a_scaled_copy_keeps_what_its_seeds_failures_say_as_a_run_of_its_own(kb: KnowledgeBase) -> None:
    # What the teacher's failure channel groups by (the error's signature) and counts (the
    # recovery and whether it worked) is copied; the run is the copy's, the vector jittered.
    failed = FailureMode(description="get order details failed: Error: order #W1 not found", issue_type="not_found",
                         recovery="looked the order up by the customer's email", step_order=0,
                         action="get_order_details", signature="get_order_details: error: order {id} not found",
                         recovery_kind="switch", recovered=True, concrete=True, run_id="run-a", run_succeeded=True)
    seed = Experience(problem="Customer gave a mistyped order id", goal="Order found", domain="retail",
                      steps=[Step(action="get_order_details", text="get order details ({order_id})")],
                      failure_modes=[failed], source_ids=["run-a"])
    kb.embed_missing([seed])
    builder = ScaledKbBuilder([seed], 3, steps_per_experience=None)
    for n in range(3):
        (copy,) = builder.experience(n).failure_modes
        assert copy.model_dump(exclude={"run_id", "embedding"}) == failed.model_dump(exclude={"run_id", "embedding"})
        assert copy.run_id == f"synthetic-{n}"
        assert copy.embedding is not None and copy.embedding != failed.embedding


def test_search_benchmark_reports_both_systems(kb: KnowledgeBase, tmp_path: Path) -> None:
    build_scaled_kb(kb, _seeds(kb), SIZE, seed=1)
    result = run_search_benchmark(kb, queries=12, k=3, seed=0, eval_dir=_eval_dir(tmp_path), warmup=3)
    assert result["experiences"] == SIZE and result["brute_force_vectors"] == SIZE
    assert result["queries"] == 12 and 0 < result["queries_with_steps"] < 12
    for key in ("kbgraph_ms", "kbgraph_retrieval_ms", "brute_force_ms", "embedding_ms"):
        _well_formed(result[key])
    assert result["kbgraph_retrieval_ms"]["p50"] <= result["kbgraph_ms"]["p50"]
    assert set(result["stages_p50_ms"]) >= {"channels", "facts", "score", "traverse", "select", "read"}
    assert result["candidates"]["p50"] >= 3 and result["hits"]["p50"] == 3
    assert result["database"]["experiences"] >= SIZE
    # Copies of a seed's steps repeat its texts: the step index holds one vector per distinct text.
    assert 0 < result["step_texts"] == result["step_vectors"] < result["steps"]
    # The query embedding of both MiniLM runtimes, side by side on the same queries, same vectors.
    ours, other = result["embedding_ms"], result["embedding_other_runtime_ms"]
    assert {ours["runtime"], other["runtime"]} == {"onnx", "torch"} and other["n"] == 12
    assert other["cosine_min"] >= 0.9999 and other["vectors_compared"] >= 24  # pg and task vectors at least
    assert ours["cpu_mean"] > 0 and other["cpu_mean"] > 0
    # CPU per search: the client's always; the server's only for a server process named.
    cpu = result["cpu_per_search_ms"]
    assert cpu["n"] == 12 and cpu["client_ms"] > 0 and cpu["server_ms"] is None
    # Requests per search, by query: every search reads its candidates' facts and its hits.
    requests = result["requests_per_search"]
    assert hits_read(requests["by_query"]) == 1.0 and requests["by_query"]["search_candidates_score"] >= 1.0
    assert requests["total"] == pytest.approx(sum(requests["by_query"].values()), abs=0.1)
    # The same queries again once what the process keeps of the namespace is current.
    settled = result["settled"]
    _well_formed(settled["kbgraph_ms"])
    assert settled["kbgraph_ms"]["n"] == 12 and settled["cpu_per_search_ms"]["n"] == 12 and settled["waited_s"] >= 0
    assert hits_read(settled["requests_per_search"]["by_query"]) == 1.0


def hits_read(by_query: dict[str, float]) -> float:
    """Reads of the hits a search, whole or of those changed since kept (search_hits_get_since)."""
    return by_query.get("search_hits_get", 0.0) + by_query.get("search_hits_get_since", 0.0)


def test_cpu_per_operation_counts_the_client_and_the_server_process() -> None:
    meter = CpuMeter(server_pid=os.getpid())  # this process standing in for the server
    meter.begin()
    for _ in range(4):
        meter.start()
        sum(i * i for i in range(300_000))
        meter.stop()
    meter.end()
    cpu = meter.per_operation()
    assert cpu["n"] == 4 and cpu["client_ms"] > 0
    assert cpu["server_ms"] is not None and cpu["server_ms"] >= 0.5 * cpu["client_ms"]  # /proc ticks are 10 ms
    assert process_cpu_s(2**22 + 12345) is None  # no such process
    assert managed_server_pid(Settings(neo4j_uri="bolt://127.0.0.1:1")) is None  # a server of one's own: unseen


def test_bench_search_cli_as_json(
    kb: KnowledgeBase, tmp_path: Path, neo4j_target: Neo4jTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_scaled_kb(kb, _seeds(kb), SIZE, seed=2)
    for name, value in neo4j_target.env(kb.namespace).items():
        if name.startswith(("NEO4J_", "KBGRAPH_NAMESPACE")):
            monkeypatch.setenv(name, value)
    out, err = io.StringIO(), io.StringIO()
    code = bench_search_cli([0], 6, 3, True, Console(file=out, width=200), Console(file=err, width=200),
                            eval_dir=_eval_dir(tmp_path), namespace=kb.namespace)
    assert code == 0, err.getvalue()
    data = json.loads(out.getvalue())
    (run,) = data["runs"]
    assert run["namespace"] == kb.namespace and run["experiences"] == SIZE
    _well_formed(run["kbgraph_ms"])
    _well_formed(run["brute_force_ms"])
    assert data["growth_per_doubling"] == []


def test_growth_per_doubling_and_percentiles() -> None:
    assert growth_per_doubling((1000, 10.0), (2000, 20.0)) == pytest.approx(2.0)
    assert growth_per_doubling((1000, 10.0), (8000, 20.0)) == pytest.approx(2 ** (1 / 3))
    assert growth_per_doubling((1000, 10.0), (1000, 20.0)) is None
    p = percentiles([float(x) for x in range(1, 101)])
    assert p["p50"] == pytest.approx(50.5) and p["p99"] == pytest.approx(99.01) and p["n"] == 100


def test_growth_rows_skip_sizes_less_than_a_doubling_apart() -> None:
    from kbgraph.bench.figures import growth_rows

    def run(n: int, ms: float) -> dict[str, object]:
        p = {"p50": ms, "p95": 2 * ms}
        return {"experiences": n, "kbgraph_ms": p, "brute_force_ms": p}

    rows = growth_rows([run(10_000, 20.0), run(921, 10.0), run(1000, 10.0)])
    assert [(r["from"], r["to"]) for r in rows] == [(1000, 10_000)]
    assert rows[0]["kbgraph_p50"] == pytest.approx(2 ** (1 / __import__("math").log2(10)), abs=1e-3)


def test_a_run_added_to_a_scaled_kb_leaves_it_at_its_size(kb: KnowledgeBase) -> None:
    # Copies of one seed are not near-duplicates of each other (problem+goal cosine ≈ 0.74, merge
    # threshold 0.85): at noise 0.3 (copies at ≈ 0.92) the first consolidation merged the 10,000 KB
    # into 4,040 experiences.
    build_scaled_kb(kb, _seeds(kb), SIZE, seed=5)
    scaled = list(kb.store.iter_ids())
    # The build counts towards the maintenance checkpoints, as ingesting as many would.
    assert kb.gateway.write("kb_state_growth", kb=kb.namespace, added=0)[0]["after"] == SIZE
    report = kb.add_trajectories([{"id": "run-after-scale", "domain": "retail",
                                   "task": "Customer wants to cancel a pending order of a desk lamp",
                                   "steps": [{"action": "find_user_id_by_email", "arguments": {"email": "a@b.c"}},
                                             {"action": "cancel_pending_order", "arguments": {"order_id": "#W1"}}],
                                   "outcome": {"success": True}}])
    assert report.consolidated == "from scratch" and report.experiences_merged == 0
    assert report.maintenance_run is None
    assert len(kb.store.existing_ids(scaled)) == SIZE, "a merge deletes the duplicates it folds in"


def test_a_bench_namespace_something_else_wrote_to_is_refused_not_built_upon(kb: KnowledgeBase) -> None:
    # `bench add` on a scaled namespace added runs and its consolidation merged the synthetic
    # near-duplicates; `bench search` then added a second 10,000 beside them (14,048 experiences).
    seeds = _seeds(kb)
    build_scaled_kb(kb, seeds, 20, seed=3)
    kb.add_experiences([Experience(problem="An agent's own run", domain="retail", source_ids=["run-1"])])
    with pytest.raises(InvalidInputError, match=r"1 experience\(s\) a scaled build did not write.*delete it"):
        build_scaled_kb(kb, seeds, 40, seed=3)
    assert kb.count() == 21, "nothing written"
