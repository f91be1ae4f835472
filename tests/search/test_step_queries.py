"""The step channel's Cypher (``search_step_scan``, ``search_step_vectors`` and its 2026 twin) ranks
the experiences whose steps say the nearest step texts exactly as filtering every step's experience
does, and MAEL's step search (``steps_scan``, ``steps_search`` and its twin) ranks the steps as
scoring every step of the namespace does; both read only the experiences they rank until ``k`` pass
the filters: a step text said by thousands of steps no longer means thousands of experiences read. Real Neo4j, real MiniLM, the real
agent runs (texts said by several runs) and a namespace where one text is said by every run."""

from __future__ import annotations

from typing import Any

import pytest

from kbgraph.core.models import Experience, Step
from kbgraph.kb import KnowledgeBase
from kbgraph.search.candidates import index_query
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
INDEXED = frozenset({"search_step_vectors", "steps_search"})


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
