"""Several agents: EDV verification into banks, hierarchical retrieval, the ability matrix and
MAEL step-wise retrieval (real Neo4j)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, Step

CANDIDATE = Experience(
    problem="Exchange a delivered keyboard for the clicky-switch model.", goal="Get done: exchange delivered order items",
    domain="retail", steps=[Step(action="get_order_details", text="look up the order"),
                            Step(action="exchange_delivered_order_items", text="exchange the item")],
)


def test_unanimous_votes_go_to_the_shared_bank(kb: KnowledgeBase) -> None:
    report = kb.add_verified([CANDIDATE], {"alpha": True, "beta": True})
    assert report.verdicts == ["shared"] and len(report.ids) == 1
    stored = kb.get(report.ids[0])
    assert stored is not None and stored.scope == "shared" and stored.approved_by == ["alpha", "beta"]
    for agent in (None, "alpha", "gamma"):
        assert kb.search("exchange my keyboard", agent=agent, k=3).ids() == report.ids


def test_partial_votes_go_to_each_approvers_private_bank(kb: KnowledgeBase) -> None:
    report = kb.add_verified([CANDIDATE], {"alpha": True, "beta": False, "gamma": True})
    assert report.verdicts == ["private"] and len(report.ids) == 2
    owners = {kb.get(i).owner_agent: i for i in report.ids}  # type: ignore[union-attr]
    assert set(owners) == {"alpha", "gamma"}
    assert kb.get(owners["alpha"]).rejected_by == ["beta"]  # type: ignore[union-attr]
    assert kb.search("exchange my keyboard", agent="alpha", k=3).ids() == [owners["alpha"]]
    assert kb.search("exchange my keyboard", agent="gamma", k=3).ids() == [owners["gamma"]]
    assert kb.search("exchange my keyboard", agent="beta", k=3).ids() == []
    assert kb.search("exchange my keyboard", k=3).ids() == []


def test_rejected_candidates_are_kept_for_audit_and_never_retrieved(kb: KnowledgeBase) -> None:
    report = kb.add_verified([CANDIDATE], {"alpha": False, "beta": False})
    assert report.verdicts == ["rejected"]
    stored = kb.get(report.ids[0])
    assert stored is not None and stored.status == "rejected" and stored.rejected_by == ["alpha", "beta"]
    for agent in (None, "alpha"):
        assert kb.search("exchange my keyboard", agent=agent, k=3).ids() == []
    assert kb.refine([{"action": "exchange_delivered_order_items", "error": "item not found"}], agent="alpha").steps == []


@pytest.mark.parametrize("votes", [{}, {"alpha": "yes"}, {"": True}, {"alpha": 1}])
def test_bad_votes_are_refused_before_anything_is_written(kb: KnowledgeBase, votes: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match="vote"):
        kb.add_verified([CANDIDATE], votes)  # type: ignore[arg-type]
    assert kb.count() == 0


def test_retrieval_asks_the_shared_bank_first_and_tops_up_from_the_private_one(kb: KnowledgeBase) -> None:
    shared = Experience(problem="Exchange a delivered item for another option.", goal="Get done: exchange",
                        domain="retail", steps=CANDIDATE.steps)
    kb.add_experiences([shared])
    private = kb.add_verified([CANDIDATE], {"alpha": True, "beta": False}).ids[0]
    query = "Exchange a delivered keyboard for the clicky-switch model"
    by_score = kb.search(query, agent="alpha", k=2, weights={"shared_first": False}).ids()
    assert by_score == [private, shared.key], "the private copy is the closer one"
    assert kb.search(query, agent="alpha", k=2).ids() == [shared.key, private]
    assert kb.search(query, agent="alpha", k=1).ids() == [shared.key]


def test_trajectories_carrying_votes_are_verified_on_ingest(kb: KnowledgeBase, tmp_path: Path) -> None:
    base = {"domain": "retail", "steps": [{"action": "get_order_details", "arguments": {"order_id": "#W1"}},
                                          {"action": "cancel_pending_order", "arguments": {"order_id": "#W1"}}]}
    records = [
        {**base, "id": "t-1", "task": "Cancel order #W1, ordered by mistake.", "metadata": {"votes": {"a": True, "b": True}}},
        {**base, "id": "t-2", "task": "Cancel order #W2 because the price dropped elsewhere.",
         "metadata": {"votes": {"a": True, "b": False}}},
        {**base, "id": "t-3", "task": "Cancel order #W3 for no stated reason at all.", "metadata": {"votes": {"a": False}}},
    ]
    path = tmp_path / "voted.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    kb.ingest([path])
    stored = [e for e in kb.get_many(list(kb.store.iter_ids())) if e.kind == "concrete"]
    by_source = {e.source_ids[0]: e for e in stored}
    assert by_source["t-1"].scope == "shared"
    assert (by_source["t-2"].scope, by_source["t-2"].owner_agent) == ("private", "a")
    assert by_source["t-3"].status == "rejected"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**records[0], "id": "t-9", "metadata": {"votes": {"a": "maybe"}}}) + "\n")
    with pytest.raises(InvalidInputError, match=r"bad.jsonl:1: metadata.votes.a: vote must be true or false"):
        kb.ingest([bad])


def test_the_ability_matrix_says_which_agent_should_take_a_task(kb: KnowledgeBase) -> None:
    flight = Experience(problem="Book a one-way flight from JFK to SFO.", goal="Get done: book reservation",
                        domain="airline", steps=[Step(action="book_reservation")])
    kb.add_experiences([CANDIDATE, flight])
    for agent, outcomes in {"alpha": [True, True, True, False], "beta": [True, False, False]}.items():
        for outcome in outcomes:
            kb.record_feedback(used=[CANDIDATE.key], outcome=outcome, agent=agent)
    kb.record_feedback(used=[flight.key], outcome=True, agent="beta")
    matrix = kb.ability_matrix()
    assert matrix.agents == ["alpha", "beta"] and matrix.domains == ["airline", "retail"]
    assert matrix.table() == {"alpha": {"retail": pytest.approx(4 / 6)},
                              "beta": {"airline": pytest.approx(2 / 3), "retail": pytest.approx(2 / 5)}}
    assert [c.agent for c in kb.best_agents(domain="retail")] == ["alpha", "beta"]
    assert [c.agent for c in kb.best_agents(task="I want to exchange the keyboard I received")] == ["alpha", "beta"]
    assert [c.agent for c in kb.best_agents(domain="airline")] == ["beta"]
    assert kb.best_agents(domain="banking") == []
    with pytest.raises(InvalidInputError):
        kb.best_agents()


def test_step_wise_retrieval_mixes_similarity_and_reward_mael(kb: KnowledgeBase) -> None:
    good = Experience(problem="Refund a damaged kettle.", goal="Get done: refund", domain="retail",
                      steps=[Step(action="issue_refund", text="refund the order to the original payment method")])
    bad = Experience(problem="Refund a damaged lamp.", goal="Get done: refund", domain="retail",
                     steps=[Step(action="issue_refund", text="refund the order to the original payment method")])
    kb.add_experiences([good, bad])
    kb.record_feedback(step_rewards=[{"experience_id": good.key, "order": 0, "reward": 1.0},
                                     {"experience_id": bad.key, "order": 0, "reward": -1.0}])
    hits = kb.search_steps("issue_refund", text="refund the order to the original payment method", k=2)
    assert [h.experience_id for h in hits] == [good.key, bad.key]
    assert hits[0].similarity == pytest.approx(hits[1].similarity, abs=1e-4)
    assert hits[0].score == pytest.approx(0.5 * hits[0].similarity + 0.5 * 1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(0.5 * hits[1].similarity + 0.0, abs=1e-5)
    only_similarity = kb.search_steps("issue_refund", text="refund the order to the original payment method", k=2, alpha=1.0)
    assert [h.score for h in only_similarity] == [pytest.approx(hits[0].similarity, abs=1e-4)] * 2
    with pytest.raises(InvalidInputError, match="alpha"):
        kb.search_steps("issue_refund", alpha=2.0)


def test_feedback_without_a_task_moves_a_helpful_experience_above_an_equally_similar_one(kb: KnowledgeBase) -> None:
    first = Experience(problem="Cancel a pending order placed by mistake.", goal="Get done: cancel", domain="retail",
                       steps=[Step(action="cancel_pending_order")])
    second = Experience(problem="Cancel a pending order that was placed by mistake.", goal="Get done: cancel",
                        domain="retail", steps=[Step(action="cancel_pending_order"), Step(action="notify")])
    kb.add_experiences([first, second])
    query = "cancel my pending order, placed by mistake"
    weights = {"utility_weight": 0.5}  # the default 0.1 moves scores by at most 10 %; make it visible
    before = kb.search(query, k=2, weights=weights)
    loser = before.ids()[1]
    winner = before.ids()[0]
    for _ in range(3):
        kb.record_feedback(retrieved=before.ids(), used=[winner], outcome=False)
        kb.record_feedback(retrieved=before.ids(), used=[loser], outcome=True)
    after = kb.search(query, k=2, weights=weights)
    assert after.ids() == [loser, winner]
    default = kb.search(query, k=2).hits
    assert default[0].breakdown.utility_factor != default[1].breakdown.utility_factor
    assert after.hits[0].breakdown.utility_factor > 1.0 > after.hits[1].breakdown.utility_factor


@pytest.mark.parametrize(("domain", "task", "named"), [("", None, "domain: empty"), ("  ", None, "domain: empty"),
                                                       (None, "", "task: empty")])
def test_an_empty_domain_or_task_is_refused_not_read_as_absent(kb: KnowledgeBase, domain: str | None, task: str | None,
                                                               named: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        kb.best_agents(domain=domain, task=task)
    assert caught.value.problems[0].startswith(named)
