"""Specification of the teacher phase, ``TeacherRetriever.refine`` (docs/design.md §3, Agent KB eqs. 6–9).

An agent stuck on a step asks: who failed like this before, and how did they recover? Every test
writes a few hand-made experiences to a fresh namespace of the real Neo4j, embedded by the real
all-MiniLM-L6-v2, and asks with the step that went wrong.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.settings import Settings
from kbgraph.core.weights import SearchWeights
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, FailureMode, Step
from kbgraph.search.candidates import GROWTH, MAX_FIRST_FACTOR
from kbgraph.store.schema import filtering_indexes
from kbgraph.search.teacher import (
    VIA_FAILURE,
    VIA_STEP,
    ProblematicStep,
    RefineResults,
    RefineWeights,
    TeacherRetriever,
    execution_similarity,
    issue_similarity,
)

approx = pytest.approx

# The step the agent is stuck on: it looked up an order by the id the customer gave, and the id
# was wrong.
ORDER_NOT_FOUND = ProblematicStep(
    action="get_order_details", arguments={"order_id": "#W2378156"}, error="Error: order #W2378156 not found",
)


def failed_lookup(problem: str, error: str, issue: str, recovery: str, *, domain: str = "retail",
                  success_rate: float = 1.0, resolution: float = 1.0, **extra: Any) -> Experience:
    """An experience whose first step, an order lookup, failed with ``error``; then it recovered."""
    return Experience(
        problem=problem, goal="Order found and handled", domain=domain, success_rate=success_rate,
        steps=[
            Step(action="get_order_details", text=f"get order details (order_id={{order_id}}) — failed: {error}",
                 args_schema={"order_id": "string"}, issue_type=issue, resolution_effectiveness=resolution),
            Step(action="find_user_id_by_email", text="find user id by email (email={email})",
                 args_schema={"email": "string"}),
            Step(action="get_order_details", text="get order details (order_id={order_id})",
                 args_schema={"order_id": "string"}),
        ],
        failure_modes=[FailureMode(description=f"get order details failed: {error}", issue_type=issue,
                                   recovery=recovery, step_order=0)],
        **extra,
    )


WRONG_ID = failed_lookup(
    "Customer gave a mistyped order id", "Error: order {id} not found", "not_found",
    "look the customer up by {email} and take the order id from their order list",
)
SLOW_BACKEND = failed_lookup(
    "Order service was slow to answer", "request timed out after {number} seconds", "timeout",
    "retried get order details (order_id={order_id}); the task succeeded",
)


def teacher(kb: KnowledgeBase, **settings: Any) -> TeacherRetriever:
    return TeacherRetriever(kb.gateway, kb.embedder, kb.namespace, settings=SearchWeights(**settings))


def queries_read(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """From now on, the step channel's queries ``kb`` reads: (query, nodes asked for), in order."""
    asked: list[tuple[str, int]] = []
    read = kb.gateway.read

    def recording_read(name: str, **params: Any) -> list[dict[str, Any]]:
        if name.startswith("refine_step_"):
            asked.append((name, params["first"]))
        return read(name, **params)

    monkeypatch.setattr(kb.gateway, "read", recording_read)
    return asked


def returned_ids(results: RefineResults) -> set[str]:
    return ({m.experience_id for m in results.steps} | {f.experience_id for f in results.failures}
            | set(results.experiences))


# ----------------------------------------------------------------------------- what comes back


def test_a_failing_step_finds_the_experience_that_failed_the_same_way_and_its_recovery(kb: KnowledgeBase) -> None:
    kb.add_experiences([WRONG_ID, SLOW_BACKEND])

    results = teacher(kb).refine([ORDER_NOT_FOUND], k=5)

    best = results.failures[0]
    assert best.experience_id == WRONG_ID.key and best.via == VIA_FAILURE
    assert best.issue_type == "not_found" and best.step_order == 0
    assert best.recovery == "look the customer up by {email} and take the order id from their order list"
    assert best.problem == "Customer gave a mistyped order id"
    # The other failure of the same action, a time-out, comes after: a different issue type.
    assert [f.experience_id for f in results.failures] == [WRONG_ID.key, SLOW_BACKEND.key]
    assert results.failures[1].issue_similarity == 0.3 and best.issue_similarity == 1.0

    # The step channel agrees, pointing at the stored step that failed.
    top = results.steps[0]
    assert top.experience_id == WRONG_ID.key and top.via == VIA_STEP
    assert (top.step.order, top.step.issue_type, top.step.resolution_effectiveness) == (0, "not_found", 1.0)
    assert results.experiences == [WRONG_ID.key, SLOW_BACKEND.key]
    # The issue type was classified from the error, and the results say so.
    assert "problematic_steps[0]: issue_type 'not_found' classified from its error" in results.notes


def test_every_step_match_explains_its_score(kb: KnowledgeBase) -> None:
    kb.add_experiences([WRONG_ID])

    [match] = teacher(kb).refine([ORDER_NOT_FOUND], k=1).steps

    parts = match.breakdown
    assert 0.0 < parts.sim_func <= 1.0
    # Same action, same argument names: sim_exec = 0.5·1 + 0.5·Jaccard({order_id}, {order_id}) = 1.
    assert parts.sim_exec == 1.0
    assert parts.sim_step == approx(0.7 * parts.sim_func + 0.3 * parts.sim_exec)
    # Same issue type (1.0) times the stored step's resolution effectiveness (1.0).
    assert (parts.issue_similarity, parts.issue_match, parts.precision) == (1.0, 1.0, 1.0)
    assert match.score == parts.score == approx(parts.sim_step * parts.issue_match * parts.precision)
    assert match.query_step == 0


def test_issue_match_outranks_a_mere_textual_match_of_a_different_issue(kb: KnowledgeBase) -> None:
    same_issue = failed_lookup("Order id typed wrong", "no such order in the system", "not_found",
                               "ask the customer for their email")
    # An API that hides other customers' orders behind a "not found": word for word the query's
    # error, but the issue was permission.
    looks_alike = failed_lookup("Order belongs to another customer", "Error: order {id} not found",
                                "permission_denied", "authenticate the customer first")
    kb.add_experiences([same_issue, looks_alike])

    results = teacher(kb).refine([ORDER_NOT_FOUND], k=5)

    by_id = {m.experience_id: m for m in results.steps}
    # The permission failure reads more like the query...
    assert by_id[looks_alike.key].breakdown.sim_func > by_id[same_issue.key].breakdown.sim_func
    # ...but the not-found failure is the same issue, so it ranks first.
    assert [m.experience_id for m in results.steps] == [same_issue.key, looks_alike.key]
    assert by_id[looks_alike.key].breakdown.issue_similarity == 0.3

    # With issue types weighted alike, only the text counts and the order flips.
    even = teacher(kb).refine([ORDER_NOT_FOUND], k=5, weights={"different_issue": 1.0})
    assert [m.experience_id for m in even.steps] == [looks_alike.key, same_issue.key]


def test_precision_orders_otherwise_equal_matches_and_a_failed_run_is_never_zeroed(kb: KnowledgeBase) -> None:
    """On steps that did not fail, precision = floor + (1 − floor)·success rate (floor 0.5): a run
    that failed overall ranks lower, never at 0."""
    def lookup(problem: str, success_rate: float) -> Experience:
        return Experience(problem=problem, goal="Order found", domain="retail", success_rate=success_rate,
                          steps=[Step(action="get_order_details", text="get order details (order_id={order_id})",
                                      args_schema={"order_id": "string"})])
    reliable, shaky = lookup("Look up an order, usually fine", 0.9), lookup("Look up an order, rarely fine", 0.0)
    kb.add_experiences([shaky, reliable])

    first, second = teacher(kb).refine([ORDER_NOT_FOUND], k=5).steps

    assert (first.experience_id, second.experience_id) == (reliable.key, shaky.key)
    assert first.breakdown.sim_step == approx(second.breakdown.sim_step)  # the same stored step text
    assert (first.breakdown.precision, second.breakdown.precision) == (approx(0.95), 0.5)
    assert first.score == approx(second.score * 0.95 / 0.5) and second.score > 0


def test_a_step_that_failed_the_same_way_carries_its_run_outcome_in_its_resolution(kb: KnowledgeBase) -> None:
    """Precision is not applied twice: a stored failed step's resolution effectiveness (1 fixed in
    a run that succeeded, 0.5 fixed in a run that failed) already says how its run ended."""
    won = failed_lookup("Wrong order id, sorted out", "Error: order {id} not found", "not_found", "look up by email",
                        success_rate=1.0, resolution=1.0)
    lost = failed_lookup("Wrong order id, sorted out but the task failed", "Error: order {id} not found", "not_found",
                         "look up by email", success_rate=0.0, resolution=0.5)
    kb.add_experiences([lost, won])

    first, second = teacher(kb).refine([ORDER_NOT_FOUND], k=5).steps[:2]

    assert (first.experience_id, second.experience_id) == (won.key, lost.key)
    assert first.breakdown.precision == second.breakdown.precision == 1.0
    assert first.score == approx(second.score * 2, rel=0.05) and second.score > 0


def test_a_step_without_an_error_uses_only_the_step_channel(kb: KnowledgeBase) -> None:
    kb.add_experiences([WRONG_ID])
    lookup = {"action": "find_user_id_by_email", "arguments": {"email": "jane@example.com"}}

    results = teacher(kb).refine([lookup], k=3)

    assert results.failures == []
    assert "problematic_steps[0]: no error or issue_type, so no failure modes were searched" in results.notes
    [match] = results.steps
    assert match.step.action == "find_user_id_by_email" and match.step.order == 1
    # Neither side has an issue: unknown (0.5) times the missing resolution effectiveness (0.5).
    assert (match.breakdown.issue_similarity, match.breakdown.issue_match) == (0.5, 0.25)


def test_each_problematic_step_gets_its_own_matches(kb: KnowledgeBase) -> None:
    kb.add_experiences([WRONG_ID, SLOW_BACKEND])
    timed_out = ProblematicStep(action="get_order_details", arguments={"order_id": "#W1"},
                                error="Gateway timeout: no answer within 30 s")

    results = teacher(kb).refine([ORDER_NOT_FOUND, timed_out], k=1)

    assert [(m.query_step, m.experience_id) for m in results.steps] == [(0, WRONG_ID.key), (1, SLOW_BACKEND.key)]
    assert [(f.query_step, f.experience_id) for f in results.failures] == [(0, WRONG_ID.key), (1, SLOW_BACKEND.key)]
    assert results.failures[1].recovery.startswith("retried get order details")
    assert len(results.experiences) == 1  # k bounds the overall ranking too


# ----------------------------------------------------------------------------- what never comes back


def test_another_namespace_is_never_returned_even_when_it_crowds_the_index(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-other", database=kb.gateway.database)
    try:
        # A hundred perfect matches elsewhere (two order look-ups each) fill the top of the shared
        # vector indexes, more than the first window holds...
        other.add_experiences([
            failed_lookup(f"Other tenant's case {n}", "Error: order {id} not found", "not_found", "theirs")
            for n in range(100)
        ])
        assert returned_ids(teacher(kb).refine([ORDER_NOT_FOUND], k=1)) == set()

        # ...yet this namespace's own, weaker match is still found: a small namespace is scanned
        # exactly, and a large one (here: every namespace is "large") asks the index.
        kb.add_experiences([SLOW_BACKEND])
        assert returned_ids(teacher(kb).refine([ORDER_NOT_FOUND], k=1)) == {SLOW_BACKEND.key}
        asked = queries_read(kb, monkeypatch)
        results = teacher(kb, exact_scan_max=0).refine([ORDER_NOT_FOUND], k=1)
        assert returned_ids(results) == {SLOW_BACKEND.key}
        assert results.failures[0].recovery.startswith("retried")
        # The window holds max(4·k, 20) experiences: 8 nodes per experience first...
        sizes = [first for _, first in asked]
        assert sizes[0] == 20 * MAX_FIRST_FACTOR, asked
        if "step_text_embedding" in filtering_indexes(kb.gateway):
            # ...and on Neo4j 2026 the index holds back the crowd: one request, the namespace's steps.
            assert asked == [("refine_step_vectors_2026", 20 * MAX_FIRST_FACTOR)], asked
        else:
            # ...then on 5.26 four times as many while too few of them are this namespace's (how
            # many rounds depends on where HNSW places the crowd's steps that tie with this
            # namespace's own), up to overfetch_limit.
            assert {name for name, _ in asked} == {"refine_step_vectors"}, asked
            limit = SearchWeights().overfetch_limit
            assert all(later == min(GROWTH * earlier, limit) for earlier, later in zip(sizes, sizes[1:])), asked
    finally:
        other.clear()


def test_the_teacher_scans_or_asks_the_index_as_the_settings_say(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb.add_experiences([WRONG_ID, SLOW_BACKEND])
    asked = queries_read(kb, monkeypatch)
    index = "refine_step_vectors_2026" if "step_text_embedding" in filtering_indexes(kb.gateway) else "refine_step_vectors"

    # The knowledge base's search settings: 6 steps are at most the default exact_scan_max...
    scanned = kb.refine([ORDER_NOT_FOUND], k=5)
    assert [name for name, _ in asked] == ["refine_step_scan"]
    # ...and above exact_scan_max = 0, the index is asked, at most overfetch_limit nodes.
    strict = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, database=kb.gateway.database,
                           settings=Settings(search={"exact_scan_max": 0, "overfetch_limit": 100}),
                           ensure_schema=False, gateway=kb.gateway)
    asked.clear()
    indexed = strict.refine([ORDER_NOT_FOUND], k=5)
    assert asked == [(index, 100)]
    # A call's own weights override the settings, both ways.
    asked.clear()
    strict.refine([ORDER_NOT_FOUND], k=5, weights={"exact_scan_max": 10})
    kb.refine([ORDER_NOT_FOUND], k=5, weights={"exact_scan_max": 0})
    assert [name for name, _ in asked] == ["refine_step_scan", index]
    # Both paths see the same window of this small namespace: the same answer.
    assert indexed.experiences == scanned.experiences == [WRONG_ID.key, SLOW_BACKEND.key]


def test_archived_experiences_are_never_returned(kb: KnowledgeBase) -> None:
    archived = failed_lookup("Archived: mistyped order id", "Error: order {id} not found", "not_found",
                             "outdated advice", status="archived")
    kb.add_experiences([archived, SLOW_BACKEND])

    results = teacher(kb).refine([ORDER_NOT_FOUND], k=5)

    assert returned_ids(results) == {SLOW_BACKEND.key}


def test_domain_filter_keeps_only_the_given_domains(kb: KnowledgeBase) -> None:
    retail = WRONG_ID
    airline = failed_lookup("Reservation lookup with a wrong code", "Error: order {id} not found", "not_found",
                            "search reservations by the passenger's name", domain="airline")
    kb.add_experiences([retail, airline])

    only_airline = teacher(kb).refine([ORDER_NOT_FOUND], domain="airline")
    assert returned_ids(only_airline) == {airline.key}
    assert {m.domain for m in only_airline.steps} | {f.domain for f in only_airline.failures} == {"airline"}

    both = teacher(kb).refine([ORDER_NOT_FOUND], domain=["Airline", "RETAIL"])  # case does not matter
    assert returned_ids(both) == {retail.key, airline.key}

    assert teacher(kb).refine([ORDER_NOT_FOUND], domain="banking").experiences == []


def test_private_experiences_are_returned_only_to_their_owner(kb: KnowledgeBase) -> None:
    alices = failed_lookup("Alice's notes on wrong order ids", "Error: order {id} not found", "not_found",
                           "ask for the email", scope="private", owner_agent="alice")
    kb.add_experiences([alices, SLOW_BACKEND])

    assert alices.key in returned_ids(teacher(kb).refine([ORDER_NOT_FOUND], agent="alice"))
    assert returned_ids(teacher(kb).refine([ORDER_NOT_FOUND], agent="bob")) == {SLOW_BACKEND.key}
    assert returned_ids(teacher(kb).refine([ORDER_NOT_FOUND])) == {SLOW_BACKEND.key}, "no agent: shared only"


def test_an_empty_knowledge_base_returns_empty_results(kb: KnowledgeBase) -> None:
    results = teacher(kb).refine([ORDER_NOT_FOUND, {"action": "get_user_details"}], k=5)

    assert (results.steps, results.failures, results.experiences) == ([], [], [])


# ----------------------------------------------------------------------------- absurd input


@pytest.mark.parametrize(("call", "problem"), [
    ({"problematic_steps": []}, "problematic_steps: give at least one step"),
    ({"problematic_steps": "get_order_details"}, "problematic_steps: must be a list of steps, got str"),
    ({"problematic_steps": [{"action": "ok"}] * 51}, "problematic_steps: at most 50 steps, got 51"),
    ({"problematic_steps": [{"action": "ok"}, {"action": "  "}]}, "problematic_steps[1].action: must not be empty"),
    ({"problematic_steps": [{"arguments": {}}]}, "problematic_steps[0].action: required"),
    ({"problematic_steps": [{"action": "x" * 201}]},
     "problematic_steps[0].action: must be at most 200 characters, got 201"),
    ({"problematic_steps": [{"action": "ok", "error": "e" * 10_001}]},
     "problematic_steps[0].error: must be at most 10,000 characters, got 10,001"),
    ({"problematic_steps": [{"action": "ok", "eror": "typo"}]},
     "problematic_steps[0].eror: unknown field (the fields are action, arguments, text, error, issue_type)"),
    ({"k": 0}, "k: must be at least 1, got 0"),
    ({"k": -3}, "k: must be at least 1, got -3"),
    ({"k": 2.5}, "k: must be an integer, got 2.5"),
    ({"weights": {"w_func": math.nan}}, "weights.w_func: must be a finite number in [0, 1], got nan"),
    ({"weights": {"failure_weight": 1.5}}, "weights.failure_weight: must be in [0, 1], got 1.5"),
    ({"weights": {"w_func": 0, "w_exec": 0}}, "weights: w_func and w_exec cannot both be 0"),
    ({"domain": []}, "domain: an empty list matches nothing; leave it out for every domain"),
    ({"agent": " "}, "agent: must not be blank"),
])
def test_absurd_input_is_rejected_with_a_message_naming_it(kb: KnowledgeBase, call: dict[str, Any],
                                                           problem: str) -> None:
    arguments: dict[str, Any] = {"problematic_steps": [ORDER_NOT_FOUND], **call}
    steps = arguments.pop("problematic_steps")
    with pytest.raises(InvalidInputError) as caught:
        teacher(kb).refine(steps, **arguments)
    assert problem in caught.value.problems
    assert "invalid refine request, nothing was searched" in str(caught.value)


def test_every_problem_is_listed_at_once(kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidInputError) as caught:
        teacher(kb).refine([{"action": ""}, {"action": "ok", "text": "t" * 10_001}], k=0,
                           weights={"w_exec": math.inf})
    assert caught.value.problems == [
        "problematic_steps[0].action: must not be empty",
        "problematic_steps[1].text: must be at most 10,000 characters, got 10,001",
        "k: must be at least 1, got 0",
        "weights.w_exec: must be a finite number in [0, 1], got inf",
    ]


def test_problems_and_notes_call_each_step_by_the_callers_name_for_it(kb: KnowledgeBase) -> None:
    # A caller that passes some of its steps names them as it numbers them: nothing renumbers text after.
    with pytest.raises(InvalidInputError) as caught:
        teacher(kb).refine([ORDER_NOT_FOUND, {"action": ""}], step_names=["steps_taken.2", "steps_taken.5"])
    assert caught.value.problems == ["steps_taken.5.action: must not be empty"]
    results = teacher(kb).refine([ORDER_NOT_FOUND, {"action": "ok"}], step_names=["steps_taken.2", "steps_taken.5"])
    assert results.notes == ["steps_taken.2: issue_type 'not_found' classified from its error",
                             "steps_taken.5: no error or issue_type, so no failure modes were searched"]
    with pytest.raises(InvalidInputError) as caught:
        teacher(kb).refine([ORDER_NOT_FOUND], step_names=["a", "b"])
    assert caught.value.problems == ["step_names: give one name a step, got 2 for 1 steps"]


def test_a_huge_k_is_clamped_with_a_note(kb: KnowledgeBase) -> None:
    kb.add_experiences([WRONG_ID])

    results = teacher(kb).refine([ORDER_NOT_FOUND], k=10_000)

    assert "k=10000 is more than the maximum of 100; returning at most 100 per list" in results.notes
    assert results.experiences == [WRONG_ID.key]


# ----------------------------------------------------------------------------- the scoring parts


def test_issue_similarity_same_different_or_unknown() -> None:
    w = RefineWeights()
    assert issue_similarity("not_found", " Not_Found ", w) == 1.0
    assert issue_similarity("not_found", "timeout", w) == 0.3
    assert issue_similarity("not_found", None, w) == 0.5
    assert issue_similarity(None, "timeout", w) == 0.5
    # classify_issue's catch-all "error" names no issue: it is as good as unknown.
    assert issue_similarity("error", "error", w) == 0.5
    assert issue_similarity("not_found", "timeout", RefineWeights(different_issue=0.0)) == 0.0


def test_execution_similarity_is_half_action_half_argument_overlap() -> None:
    assert execution_similarity("get_order", ["order_id"], "get_order", ["order_id"]) == 1.0
    assert execution_similarity("get_order", [], "Get_Order ", []) == 1.0
    assert execution_similarity("get_order", ["order_id", "email"], "get_order", ["order_id"]) == 0.75
    assert execution_similarity("get_order", ["order_id"], "cancel_order", ["order_id", "reason"]) == 0.25
    assert execution_similarity("get_order", ["x"], "cancel_order", ["y"]) == 0.0


def test_a_given_issue_type_is_kept_and_a_given_text_is_used() -> None:
    step = ProblematicStep(action="pay", error="card declined", issue_type="payment_declined", text="pay {amount}")
    assert step.issue_type == "payment_declined" and not step.issue_classified
    assert step.description() == "pay {amount}"
    classified = ProblematicStep(action="pay", error="Permission denied for user u_1")
    assert classified.issue_type == "permission_denied" and classified.issue_classified
