"""The teacher's figure of ``kbgraph bench online`` (:mod:`kbgraph.bench.refine`): failed steps
like the benchmark's, each refined once and timed, a process's first refine apart. Real Neo4j and
real MiniLM for the run; behaviour only, no speed thresholds."""

from __future__ import annotations

from kbgraph.bench.online import online_figures
from kbgraph.bench.refine import ERROR, problematic_steps, run_refine_benchmark
from kbgraph.core.models import Experience, Step
from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import QueryStep, SearchQuery
from tests.conftest import SHARED_DATA
from tests.kbgraph.bench.test_bench_online import _report, _row, _size, _stats


def test_each_query_with_executed_steps_gives_its_last_step_failed_once() -> None:
    lookup = QueryStep(action="find_user_id_by_email", arguments={"email": "a@b.com"})
    order = QueryStep(action="get_order_details", arguments={"order_id": "#W1"})
    queries = [SearchQuery(task="return a keyboard", steps_so_far=[lookup, order]),
               SearchQuery(task="cancel an order"),  # no executed step: nothing to refine
               SearchQuery(task="exchange a lamp", steps_so_far=[order]),  # the same last step again
               SearchQuery(task="change an address", steps_so_far=[lookup])]
    steps = problematic_steps(queries, count=5)
    assert [(s.action, s.arguments, s.error) for s in steps] == [
        ("get_order_details", {"order_id": "#W1"}, ERROR), ("find_user_id_by_email", {"email": "a@b.com"}, ERROR)]
    assert len(problematic_steps(queries, count=1)) == 1


def test_the_teacher_is_timed_on_the_benchmarks_steps(kb: KnowledgeBase) -> None:
    kb.add_experiences([Experience(problem=f"Customer {n} wants to return a delivered order", domain="retail",
                                   steps=[Step(action="find_user_id_by_email"), Step(action="get_order_details")])
                        for n in range(3)])
    progress: list[tuple[str, int, int]] = []
    result = run_refine_benchmark(kb, SHARED_DATA / "eval", count=3,
                                  on_progress=lambda stage, done, total: progress.append((stage, done, total)))
    assert result["steps"] == 3 and result["k"] == 5
    assert result["refine_ms"]["n"] == 3 and 0 < result["refine_ms"]["p50"] <= result["refine_ms"]["max"]
    assert result["first_ms"] > 0
    assert progress[-1] == ("refines", 3, 3)


def test_the_online_table_shows_the_teacher_beside_a_processs_first_refine() -> None:
    size = _size(10_000, (12.0, 30.0), 50.0, 120.0, 80.0)
    assert not [f for f in online_figures(_report(size)) if f.figure.startswith("teacher")], "a report of before"
    size["refine"] = {"k": 5, "steps": 10, "first_ms": 812.5, "refine_ms": _stats(480.0, 610.0)}
    row = _row(online_figures(_report(size)), "teacher: refine one failed step, p50 · p95 at 10,000 (k 5)")
    assert (row.measured, row.baseline, row.target, row.met) == ("480.0 · 610.0 ms", "a process's first 812.5 ms",
                                                                  "report", None)
