"""The teacher's step queries (``refine_step_scan``, ``refine_step_vectors`` and its 2026 twin)
return, of the steps of one text and one profile (action, argument schema, issue type, error
signature, resolution), only those that can be among the window's best experiences: the teacher
answers exactly as it does from every step of the window's texts, and a text said by thousands of
runs no longer means thousands of rows. Real Neo4j, real MiniLM, the real agent runs and a
namespace where one text is said by every run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kbgraph.core.models import Experience, Step
from kbgraph.kb import KnowledgeBase
from kbgraph.search.candidates import index_query
from kbgraph.search.teacher import ProblematicStep, RefineResults
from kbgraph.store import gateway as gateway_module
from kbgraph.store.queries import query

from tests.search.test_step_queries import expanded_plainly

#: The teacher's step queries before they kept only what can rank: every step of the window's
#: texts, its experience filtered, nearest first.
EVERY_STEP_OF_THE_TEXTS = """
  WITH text, score WHERE text.kb = $kb
  MATCH (e:Experience {kb: $kb})-[:HAS_STEP]->(s:Step)-[:SAYS]->(text)
  WHERE e.status = 'active'
    AND ($domains IS NULL OR toLower(e.domain) IN $domains)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
    AND (size($exclude_runs) = 0 OR size(coalesce(e.source_ids, [])) = 0
         OR any(run IN e.source_ids WHERE NOT run IN $exclude_runs))
  WITH e, s, score, e.id AS id, s.order AS order
  ORDER BY score DESC, id, order
"""
#: Where the step queries' per-text expansion ends.
RETURNED = "  RETURN collect({\n"
STEP_QUERIES = ("refine_step_scan", "refine_step_vectors", "refine_step_vectors_2026")


@contextmanager
def every_step(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Within it, the teacher's step queries expand every step of their texts (the reference)."""
    plain = {name: expanded_plainly(name, EVERY_STEP_OF_THE_TEXTS, RETURNED) for name in STEP_QUERIES}
    with monkeypatch.context() as patched:
        patched.setattr(gateway_module, "query", lambda name: plain.get(name) or query(name))
        yield


def assert_same_answer(ours: RefineResults, reference: RefineResults, context: Any) -> None:
    """Everything the step channel decided is the same: each match's experience and step, its
    score breakdown (to float32's precision: Neo4j 2026 computes a text's cosine in float32 or
    float64 as the plan reads its vector, and two query texts plan differently), the ranking."""
    assert ours.experiences == reference.experiences, context
    assert [(m.query_step, m.experience_id, m.step.id) for m in ours.steps] == [
        (m.query_step, m.experience_id, m.step.id) for m in reference.steps], context
    assert [m.breakdown.model_dump() for m in ours.steps] == [
        pytest.approx(m.breakdown.model_dump(), rel=1e-6) for m in reference.steps], context


def real_problematic_steps(kb: KnowledgeBase) -> list[ProblematicStep]:
    """Steps of the real runs as an agent would ask with them: each distinct action once with its
    stored issue (failed, with an error), and once as it succeeded."""
    rows = kb.gateway.driver.execute_query(
        "MATCH (:Experience {kb: $kb})-[:HAS_STEP]->(s:Step) "
        "RETURN s.action AS action, s.args_schema AS schema, s.issue_type AS issue ORDER BY s.id",
        {"kb": kb.namespace}, database_=kb.gateway.database).records
    steps: dict[tuple[str, bool], ProblematicStep] = {}
    for row in rows:
        schema = json.loads(row["schema"]) if isinstance(row["schema"], str) else (row["schema"] or {})
        arguments = {name: "x" for name in schema}
        failed = row["issue"] is not None
        steps.setdefault((row["action"], failed), ProblematicStep(
            action=row["action"], arguments=arguments, issue_type=row["issue"],
            error=f"Error: {row['issue']}" if failed else None))
    return list(steps.values())


def test_the_teacher_answers_as_from_every_step_of_its_window(
    real_runs_read_only: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kb = real_runs_read_only
    asked = real_problematic_steps(kb)
    assert len(asked) > 10 and any(s.issue_type for s in asked), "real steps, failed and not"
    calls: list[dict[str, Any]] = [{"k": 1}, {"k": 5}, {"k": 25}, {"k": 5, "domain": "retail"},
                                   {"k": 5, "agent": "someone"}, {"k": 5, "weights": {"exact_scan_max": 0}},
                                   {"k": 3, "weights": {"precision_floor": 1.0}}]
    # The window as the settings make it, and windows as small as k, where each text's groups of
    # runs are cut the most: the same answer as from every step either way.
    for window in (None, lambda k: k):
        if window is not None:
            monkeypatch.setattr("kbgraph.search.teacher._retriever._window", window)
        compared = 0
        for i in range(0, len(asked), 4):
            steps = asked[i:i + 4]
            for call in calls:
                ours = kb.refine(steps, **call)
                with every_step(monkeypatch):
                    reference = kb.refine(steps, **call)
                assert_same_answer(ours, reference, (window, [s.action for s in steps], call))
                compared += len(ours.steps)
        assert compared > 100, "the comparisons found step matches"


def run_saying_the_common_step(n: int) -> Experience:
    # Every run starts by finding the user: one step text said by all of them, most as it
    # succeeded, every fifth failing as the agent's step does; success rates spread.
    failed = n % 5 == 0
    return Experience(
        problem=f"Customer {n} wants to change the address of order #{n}.", goal=f"Address {n} changed",
        domain="retail", success_rate=(0.2, 0.5, 0.9, 1.0)[n % 4],
        steps=[Step(action="find_user_id_by_email", args_schema={"email": "string"},
                    issue_type="not_found" if failed else None, resolution_effectiveness=0.5 if failed else None),
               Step(action=f"modify_address_{n % 3}")])


@pytest.mark.parametrize("name", ["refine_step_scan", "refine_step_vectors"])
def test_a_text_said_by_every_run_returns_only_the_runs_that_can_rank(
    kb: KnowledgeBase, name: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs = [run_saying_the_common_step(n) for n in range(120)]
    kb.add_experiences(runs)
    stuck = ProblematicStep(action="find_user_id_by_email", arguments={"email": "x"}, error="Error: user not found",
                            issue_type="not_found")
    vector = kb.embedder.embed([kb.student.step_text("find_user_id_by_email", {"email": "x"}, None)])[0].tolist()
    named = index_query(kb.gateway, name, "step_text_embedding") if name != "refine_step_scan" else name
    per_group = 20
    rows = kb.gateway.read(named, kb=kb.namespace, vector=vector, first=50, domains=None, agent=None,
                           exclude_runs=[], per_group=per_group, precision_floor=0.5, missing_precision=0.5)[0]["rows"]
    common = [r for r in rows if r["action"] == "find_user_id_by_email"]
    # Two profiles say the common text (as it succeeded, as it failed): each keeps its best
    # per_group by precision and its first per_group by id, of 96 and 24 runs.
    assert len(common) <= 2 * 2 * per_group < 120
    # The runs as they succeeded: the per_group of highest precision (success rate 1.0), ties by id.
    best = sorted((run.key for run in runs if run.success_rate == 1.0 and not run.steps[0].issue_type))[:per_group]
    assert set(best) <= {r["experience_id"] for r in common if r["issue_type"] is None}
    # And the teacher's answer is the one every step gives.
    call: dict[str, Any] = {"k": 5, "weights": {"exact_scan_max": 10_000 if name == "refine_step_scan" else 0}}
    ours = kb.refine([stuck], **call)
    with every_step(monkeypatch):
        assert_same_answer(ours, kb.refine([stuck], **call), name)
    assert len(ours.steps) == 5
