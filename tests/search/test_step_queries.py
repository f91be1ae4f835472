"""The step channel's Cypher (``search_step_scan``, ``search_step_vectors`` and its 2026 twin) ranks
the experiences whose steps say the nearest step texts exactly as filtering every step's experience
does, and MAEL's step search (``steps_scan``, ``steps_search`` and its twin) ranks the steps as
scoring every step of the namespace does; both read only the experiences they rank until ``k`` pass
the filters: a step text said by thousands of steps no longer means thousands of experiences read.
The teacher's (``refine_step_scan``, ``refine_step_vectors`` and its twin) return, of the steps of
one text and one profile (action, argument schema, issue type, error signature, resolution), only
those that can be among the window's best experiences: the teacher answers exactly as from every
step of the window's texts. Real Neo4j, real MiniLM, the real agent runs (texts said by several
runs) and namespaces where one text is said by every run."""

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

from tests.search.test_change_feed import experiences_sought
from tests.search.test_step_model import step_vectors
from tests.search.test_vector_model import params

#: The straightforward expansion the queries answer as: every step of the texts, its experience
#: filtered, the best step per experience, best first, ties by id.
EVERY_STEPS_EXPERIENCE = """
  MATCH (text)<-[:SAYS]-(:Step)<-[:HAS_STEP]-(e:Experience {kb: $kb})
  WHERE e.status IN $statuses
    AND ($domains IS NULL OR e.domain IN $domains)
    AND ($kinds IS NULL OR e.kind IN $kinds)
    AND coalesce(e.success_rate, 0.0) >= $min_success
    AND coalesce(e.quality, 0.0) >= $min_quality
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  WITH e.id AS id, max(score) AS score
  ORDER BY score DESC, id
  LIMIT $k
"""
#: Where the step channel's per-text expansion ends.
RETURNED = "  RETURN collect({id: id, score: score}) AS rows\n"

#: MAEL's step search the plain way: every step of the namespace's experiences that pass, by score.
EVERY_STEP = """
MATCH (e:Experience {kb: $kb})
WHERE e.status = 'active'
  AND ($domains IS NULL OR e.domain IN $domains)
  AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
MATCH (e)-[:HAS_STEP]->(step:Step)-[:SAYS]->(text:StepText)
WHERE text.embedding IS NOT NULL
WITH e, step, vector.similarity.cosine(text.embedding, $vector) AS score
ORDER BY score DESC, step.id
LIMIT $k
RETURN collect({experience_id: e.id, order: step.order, score: score}) AS rows
"""
#: Where steps_search's per-text expansion ends, and the plain one that replaces it.
STEPS_RETURNED = "  RETURN collect({experience_id: e.id,"
EVERY_STEP_OF_THE_TEXTS = """
  MATCH (text)<-[:SAYS]-(step:Step)<-[:HAS_STEP]-(e:Experience {kb: $kb})
  WHERE e.status = 'active'
    AND ($domains IS NULL OR e.domain IN $domains)
    AND (coalesce(e.scope, 'shared') = 'shared' OR e.owner_agent = $agent)
  WITH step, score, e
  ORDER BY score DESC, step.id
  LIMIT $k
"""

#: The queries that ask the step text index (their 2026 twin on a 2026 server).
INDEXED = frozenset({"search_step_vectors", "steps_search", "refine_step_vectors"})


def expanded_plainly(name: str, expansion: str, returned: str) -> str:
    """Query ``name`` with its per-text expansion (up to ``returned``) replaced by ``expansion``: the
    same texts (the subquery's first two lines, which unwind them), in the same passes, expanded
    the plain way."""
    text = query(name)
    opened = text.index("{\n", text.index("CALL (")) + 2
    kept = text.index("\n", text.index("\n", opened) + 1) + 1  # UNWIND … AS r/h, WITH … AS text, … AS score
    assert text[opened:kept].lstrip().startswith("UNWIND"), text[opened:kept]
    return text[:kept] + expansion.lstrip("\n") + text[text.index(returned, kept):]


def answer(kb: KnowledgeBase, text: str, parameters: dict[str, Any], *fields: str) -> list[tuple[Any, ...]]:
    """``fields`` of each row the query ``text`` returns in ``rows``."""
    records = kb.gateway.driver.execute_query(text, parameters, database_=kb.gateway.database).records
    return [tuple(r[f] for f in fields) for r in records[0]["rows"]]


def test_the_step_queries_rank_as_filtering_every_steps_experience(real_runs_read_only: KnowledgeBase) -> None:
    kb = real_runs_read_only
    vectors = step_vectors(kb)
    vector_query = index_query(kb.gateway, "search_step_vectors", "step_text_embedding")
    filters = (params(kb, domain=None), params(kb), params(kb, domain="airline"), params(kb, domains=["retail"]),
               params(kb, kinds=["concrete"]), params(kb, min_success=0.5), params(kb, agent="someone"))
    compared = 0
    for name, extra in (("search_step_scan", {}), (vector_query, {"fetch": 20})):
        reference = expanded_plainly(name, EVERY_STEPS_EXPERIENCE, RETURNED)
        for vector in vectors:
            for p in filters:
                for k in (1, 5, 50):
                    parameters = {**p, **extra, "vector": vector, "k": k}
                    ours = answer(kb, query(name), parameters, "id", "score")
                    assert ours == answer(kb, reference, parameters, "id", "score"), (name, k, p)
                    compared += bool(ours)
    assert compared > 50, "the comparisons found experiences"


def test_the_step_search_ranks_as_scoring_every_step(real_runs_read_only: KnowledgeBase) -> None:
    kb = real_runs_read_only
    index = index_query(kb.gateway, "steps_search", "step_text_embedding")
    reference = expanded_plainly(index, EVERY_STEP_OF_THE_TEXTS, STEPS_RETURNED)
    fields = ("experience_id", "order", "score")
    compared = 0
    for vector in step_vectors(kb):
        for filters in ({"domains": None, "agent": None}, {"domains": ["retail"], "agent": None},
                        {"domains": ["airline"], "agent": "someone"}):
            for k in (1, 5, 50, 200):
                parameters = {**filters, "kb": kb.namespace, "vector": vector, "k": k, "fetch": 30}
                scanned = answer(kb, query("steps_scan"), parameters, *fields)
                assert scanned == answer(kb, EVERY_STEP, parameters, *fields), (filters, k)
                assert answer(kb, query(index), parameters, *fields) == answer(kb, reference, parameters, *fields)
                compared += bool(scanned)
    assert compared > 20, "the comparisons found steps"


def experience_saying_the_common_step(n: int) -> Experience:
    # Every run starts by finding the user: one step text said by all of them.
    return Experience(problem=f"Customer {n} wants to change the address of order #{n}.", goal=f"Address {n} changed",
                      domain="retail", steps=[Step(action="find_user_id_by_email"), Step(action=f"modify_address_{n % 3}")],
                      success_rate=0.2 if n % 2 else 1.0)


@pytest.mark.parametrize("name", ["search_step_scan", "search_step_vectors", "steps_scan", "steps_search"])
def test_a_text_said_by_every_run_reads_only_the_experiences_returned_or_filtered_out_first(
    kb: KnowledgeBase, name: str,
) -> None:
    kb.add_experiences([experience_saying_the_common_step(n) for n in range(40)])
    vector = kb.embedder.embed([kb.student.step_text("find_user_id_by_email", {}, None)])[0].tolist()
    named = index_query(kb.gateway, name, "step_text_embedding") if name in INDEXED else name
    k = 5
    channel = name.startswith("search_")
    # The step channel's filters: half the runs fail the success filter, so, ranked by id, about as
    # many are read as are dropped (twice that where the planner seeks once per side of the scope
    # filter's OR). The step search's: every run passes.
    p = {**(params(kb, domain=None, min_success=0.5) if channel else {"kb": kb.namespace, "domains": None, "agent": None}),
         "vector": vector, "k": k, "fetch": 10}
    found = kb.gateway.read(named, **p)[0]["rows"]
    assert len(found) == k and all(r["score"] == found[0]["score"] for r in found), "the common text's runs or steps"
    if channel:
        assert [r["id"] for r in found] == sorted(r["id"] for r in found)
    sought = sum(experiences_sought(kb, named, p))
    assert k <= sought <= 3 * k, f"{sought} experiences read for {k}: far fewer than the 40 that say the text"


# ----------------------------------------------------------------------------- the teacher's step queries

#: The teacher's step queries before they kept only what can rank: every step of the window's
#: texts, its experience filtered, nearest first.
EVERY_STEP_OF_THE_WINDOW = """
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
#: Where the teacher's per-text expansion ends.
TEACHER_RETURNED = "  RETURN collect({\n"
TEACHER_STEP_QUERIES = ("refine_step_scan", "refine_step_vectors", "refine_step_vectors_2026")


@contextmanager
def every_step(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Within it, the teacher's step queries expand every step of their texts (the reference)."""
    plain = {name: expanded_plainly(name, EVERY_STEP_OF_THE_WINDOW, TEACHER_RETURNED) for name in TEACHER_STEP_QUERIES}
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
    # The window as the settings make it, and windows as small as k, where each text's groups of
    # runs are cut the most: the same answer as from every step either way.
    calls: dict[Any, list[dict[str, Any]]] = {
        None: [{"k": 5}, {"k": 25}, {"k": 5, "domain": "retail"}, {"k": 5, "agent": "someone"},
               {"k": 5, "weights": {"exact_scan_max": 0}}],
        lambda k: k: [{"k": 1}, {"k": 5}, {"k": 3, "weights": {"precision_floor": 1.0}}]}
    for window, asks in calls.items():
        if window is not None:
            monkeypatch.setattr("kbgraph.search.teacher._retriever._window", window)
        compared = 0
        for i in range(0, len(asked), 4):
            steps = asked[i:i + 4]
            for call in asks:
                ours = kb.refine(steps, **call)
                with every_step(monkeypatch):
                    reference = kb.refine(steps, **call)
                assert_same_answer(ours, reference, (window, [s.action for s in steps], call))
                compared += len(ours.steps)
        assert compared > 50, "the comparisons found step matches"


def run_finding_the_user(n: int) -> Experience:
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
    runs = [run_finding_the_user(n) for n in range(120)]
    kb.add_experiences(runs)
    stuck = ProblematicStep(action="find_user_id_by_email", arguments={"email": "x"}, error="Error: user not found",
                            issue_type="not_found")
    vector = kb.embedder.embed([kb.student.step_text("find_user_id_by_email", {"email": "x"}, None)])[0].tolist()
    named = index_query(kb.gateway, name, "step_text_embedding") if name in INDEXED else name
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
