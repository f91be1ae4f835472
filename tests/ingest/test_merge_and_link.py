"""Merging and linking plans on small hand-made facts: each relation type where it belongs."""

from __future__ import annotations

import numpy as np

from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.link import ABSTRACT_SOURCE
from kbgraph.ingest.link_state import plan_links
from kbgraph.ingest.merge import plan_merges


def vec(*values: float) -> np.ndarray:
    v = np.array(values + (0.0,) * (4 - len(values)), dtype=np.float32)
    return v / np.linalg.norm(v)


def fact(id: str, actions: tuple[str, ...], pg: np.ndarray, domain: str = "retail", kind: str = "concrete",
         sources: tuple[str, ...] = (), adapted_from: tuple[str, ...] = (), success: float = 1.0,
         failed: tuple[str, ...] = ()) -> ExperienceFacts:
    return ExperienceFacts(id=id, kind=kind, domain=domain, actions=actions, pg=pg, success_rate=success,
                           source=None, source_ids=sources or (f"t-{id}",), adapted_from=adapted_from,
                           retrieved=1, used=1, succeeded=1, problem=f"problem {id}", goal="goal",
                           failed_source_ids=failed)


RETURN = ("get_order_details", "return_delivered_order_items")
EXCHANGE_AND_RETURN = ("get_order_details", "exchange_delivered_order_items", "return_delivered_order_items")


def test_near_identical_experiences_of_one_workflow_merge_into_the_smallest_id() -> None:
    facts = [fact("b", RETURN, vec(1, 0.05)), fact("a", RETURN, vec(1, 0.0), success=0.0),
             fact("c", RETURN, vec(0, 1)), fact("d", EXCHANGE_AND_RETURN, vec(1, 0.0))]
    [group] = plan_merges(facts)
    assert group.canonical == "a" and group.merged_ids == ["b"]
    assert group.source_ids == ["t-a", "t-b"] and group.used == 2 and group.success_rate == 0.5


def test_merging_does_not_depend_on_arrival_order() -> None:
    facts = [fact(i, RETURN, vec(1, 0.01 * n)) for n, i in enumerate("edcba")]
    assert plan_merges(facts) == plan_merges(list(reversed(facts)))


def test_abstraction_for_every_shared_workflow() -> None:
    plan = plan_links([fact("a", RETURN, vec(1)), fact("b", RETURN, vec(1, 0.2)), fact("c", EXCHANGE_AND_RETURN, vec(0, 1))])
    [abstract] = plan.abstracts
    assert abstract.kind == "abstract" and abstract.source == ABSTRACT_SOURCE
    assert [s.action for s in abstract.steps] == list(RETURN)
    edges = [(r["source_id"], r["target_id"]) for r in plan.relations if r["type"] == "ABSTRACTION"]
    assert edges == [("a", abstract.key), ("b", abstract.key)]


def test_composition_from_a_sub_workflow_to_the_workflow_containing_it() -> None:
    plan = plan_links([fact("a", RETURN, vec(1)), fact("c", EXCHANGE_AND_RETURN, vec(0, 1))])
    [edge] = [r for r in plan.relations if r["type"] == "COMPOSITION"]
    assert (edge["source_id"], edge["target_id"]) == ("a", "c")
    # Compared by operations: return (1) inside exchange → return (2).
    assert abs(edge["weight"] - 1 / 2) < 1e-3 and "appear in order" in edge["reason"]


def test_adaptation_across_domains_with_the_same_operations() -> None:
    plan = plan_links([
        fact("r", ("get_order_details", "cancel_pending_order"), vec(1), domain="retail"),
        fact("r2", ("get_order_details", "cancel_pending_order"), vec(1, 0.1), domain="retail"),
        fact("f", ("get_reservation_details", "cancel_reservation"), vec(1, 0.3), domain="airline"),
        fact("g", ("cancel_subscription",), vec(0, 1), domain="banking"),
    ])
    edges = sorted((r["source_id"], r["target_id"], r["reason"]) for r in plan.relations if r["type"] == "ADAPTATION")
    abstract_retail = edges[0][0]
    assert [(e[1]) for e in edges] == ["f", "g"] and all(e[0] == abstract_retail for e in edges)
    assert "(cancel) carried from retail to airline" in edges[0][2]


def test_declared_adaptation_provenance() -> None:
    plan = plan_links([fact("x", ("a_b",), vec(1), sources=("traj-1",)),
                       fact("y", ("c_d",), vec(0, 1), domain="web", adapted_from=("traj-1",))])
    assert [(r["source_id"], r["target_id"], r["weight"]) for r in plan.relations if r["type"] == "ADAPTATION"] == [
        ("x", "y", 1.0)]


def test_alternative_for_a_similar_problem_solved_differently() -> None:
    plan = plan_links([fact("a", RETURN, vec(1, 0.1)), fact("b", ("cancel_pending_order",), vec(1, 0.2)),
                       fact("c", ("book_flight",), vec(0, 0, 1))])
    [edge] = [r for r in plan.relations if r["type"] == "ALTERNATIVE"]
    assert (edge["source_id"], edge["target_id"]) == ("a", "b") and edge["weight"] > 0.9


def test_every_weight_is_in_the_unit_interval_with_a_reason() -> None:
    plan = plan_links([fact(str(i), RETURN if i % 2 else EXCHANGE_AND_RETURN, vec(1, i / 10)) for i in range(6)])
    assert plan.relations and all(0 <= r["weight"] <= 1 and r["reason"] for r in plan.relations)


# --- outcomes and workflows on real runs --------------------------------------------------------------


def test_a_run_that_failed_never_merges_into_runs_that_worked() -> None:
    facts = [fact("a", RETURN, vec(1)), fact("b", RETURN, vec(1, 0.01)),
             fact("c", RETURN, vec(1, 0.02), success=0.0, failed=("t-c",)),
             fact("d", RETURN, vec(1, 0.03), success=0.0, failed=("t-d",))]
    groups = {g.canonical: g for g in plan_merges(facts)}
    assert groups["a"].merged_ids == ["b"] and groups["a"].failed_source_ids == []
    assert groups["c"].merged_ids == ["d"] and groups["c"].failed_source_ids == ["t-c", "t-d"]


def test_runs_with_the_same_operations_share_a_workflow_whatever_they_looked_up() -> None:
    lookups_a = ("get_user_details", "get_reservation_details", "cancel_reservation")
    lookups_b = ("get_reservation_details", "get_reservation_details", "get_user_details", "cancel_reservation")
    plan = plan_links([fact("a", lookups_a, vec(1), domain="airline"), fact("b", lookups_b, vec(1, 0.3), domain="airline"),
                       fact("c", lookups_b, vec(1, 0.2), domain="airline", success=0.0, failed=("t-c",))])
    [abstract] = plan.abstracts
    assert abstract.problem == "Any task that is solved by the workflow: cancel reservation"
    # Two of three runs worked; its steps are the way that worked (ties: the shorter one).
    assert abstract.success_rate == round(2 / 3, 6)
    assert [s.action for s in abstract.steps] == list(lookups_a)
    assert sorted(r["source_id"] for r in plan.relations if r["type"] == "ABSTRACTION") == ["a", "b", "c"]


def test_the_workflow_id_depends_on_the_domain_and_operations_only() -> None:
    first = plan_links([fact("a", RETURN, vec(1)), fact("b", RETURN, vec(1, 0.2))]).abstracts[0]
    grown = plan_links([fact("a", RETURN, vec(1)), fact("b", RETURN, vec(1, 0.2)),
                        fact("c", ("find_user_id_by_email", *RETURN), vec(1, 0.1))]).abstracts[0]
    assert first.key == grown.key


def test_a_run_without_tool_calls_joins_the_look_up_only_workflow_where_runs_record_their_calls() -> None:
    looked = ("get_user_details", "get_reservation_details")
    plan = plan_links([fact("a", looked, vec(1), domain="airline"), fact("b", looked, vec(1, 0.1), domain="airline"),
                       fact("c", (), vec(1, 0.2), domain="airline"),
                       fact("w1", (), vec(0, 1), domain="web"), fact("w2", (), vec(0, 1, 0.1), domain="web")])
    [abstract] = plan.abstracts
    assert abstract.domain == "airline" and abstract.problem == "Any task answered by looking things up, changing nothing"
    assert sorted(r["source_id"] for r in plan.relations if r["type"] == "ABSTRACTION") == ["a", "b", "c"]


def test_a_run_that_only_failed_is_no_alternative() -> None:
    plan = plan_links([fact("a", RETURN, vec(1, 0.1)),
                       fact("b", ("cancel_pending_order",), vec(1, 0.2), success=0.0, failed=("t-b",))])
    assert not [r for r in plan.relations if r["type"] == "ALTERNATIVE"]
