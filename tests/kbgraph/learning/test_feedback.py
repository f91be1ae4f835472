"""Feedback: counters, quality, utility, step rewards and ability, written atomically (real Neo4j)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import neo4j
import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.utility import decay_rate_per_day, impact_after_use
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, Step
from tests.conftest import Neo4jTarget
from tests.one_utc_day import on_one_utc_day

CANCEL = Experience(
    problem="Cancel order {id} because it was ordered by mistake.", goal="Get done: cancel pending order",
    domain="retail", steps=[Step(action="get_order_details"), Step(action="cancel_pending_order")],
)
RETURN = Experience(
    problem="Return {id} via {id}: Desk Lamp;", goal="Get done: return delivered order items", domain="retail",
    steps=[Step(action="get_order_details"), Step(action="return_delivered_order_items")],
)
FLIGHT = Experience(problem="Book a one-way flight from JFK to SFO.", goal="Get done: book reservation",
                    domain="airline", steps=[Step(action="search_direct_flight"), Step(action="book_reservation")])


def state(kb: KnowledgeBase, experience: Experience) -> dict[str, object]:
    return kb.learning_state([experience.key])[0].model_dump()


def test_a_successful_use_updates_counters_quality_utility_and_last_use(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL, RETURN])
    report = kb.record_feedback(retrieved=[CANCEL.key, RETURN.key], used=[CANCEL.key], outcome=True)
    assert report.retrieved == 2 and report.used == 1 and report.outcome == 1.0
    cancel, ret = state(kb, CANCEL), state(kb, RETURN)
    assert (cancel["retrieved"], cancel["used"], cancel["succeeded"]) == (1, 1, 1)
    assert cancel["quality"] == pytest.approx(0.5 * 0.8 + 0.2)
    assert cancel["utility"] == pytest.approx(0.6 + 0.05), "quality plus one success's impact"
    assert (ret["retrieved"], ret["used"], ret["succeeded"], ret["quality"]) == (1, 0, 0, 0.5)
    stored = kb.get(CANCEL.key)
    assert stored is not None and stored.last_used_at is not None
    assert abs((stored.last_used_at - report.at).total_seconds()) < 1


def test_a_failure_lowers_quality_and_utility_and_counts_no_success(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL])
    kb.record_feedback(used=[CANCEL.key], outcome=False)
    kb.record_feedback(used=[CANCEL.key], outcome=0.25)
    after = state(kb, CANCEL)
    assert (after["used"], after["succeeded"]) == (2, 0)
    assert after["quality"] == pytest.approx((0.5 * 0.8) * 0.8 + 0.2 * 0.25)
    assert after["utility"] < after["quality"], "two failures' impact pulls utility below quality"


def test_use_without_an_outcome_counts_the_use_only(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL])
    kb.record_feedback(used=[CANCEL.key])
    after = state(kb, CANCEL)
    assert (after["used"], after["succeeded"], after["quality"]) == (1, 0, 0.5)


def test_utility_decays_with_time_since_the_last_use(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL])
    long_ago = datetime.now(UTC) - timedelta(days=60)
    kb.record_feedback(used=[CANCEL.key], outcome=True, at=long_ago)
    after = state(kb, CANCEL)
    # Two half-lives (30 days each) since the use: quality 0.6 and impact 0.05 fall to a quarter.
    assert after["utility"] == pytest.approx((0.6 + 0.05) / 4)
    stored = kb.get(CANCEL.key)
    assert stored is not None and stored.last_used_at is not None
    kb.record_feedback(used=[CANCEL.key], at=long_ago - timedelta(days=1))
    again = kb.get(CANCEL.key)
    assert again is not None and again.last_used_at == stored.last_used_at, "last use never moves back"


def test_the_usage_impact_feedback_stores_is_the_accumulator_of_the_learning_loop(
    kb: KnowledgeBase, driver: neo4j.Driver, neo4j_target: Neo4jTarget,
) -> None:
    """The sum of D.3 is kept by feedback_used.cypher and written in Python as impact_after_use:
    three outcomes days apart must leave the stored sum (and its time) where Python puts them."""
    kb.add_experiences([CANCEL])
    learning = kb.settings.learning
    rate = decay_rate_per_day(learning.utility_half_life_days)
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=40)
    impact, last = 0.0, None
    for days_later, outcome in ((0.0, 1.0), (10.5, 0.0), (25.25, 0.75)):
        at = start + timedelta(days=days_later)
        kb.record_feedback(used=[CANCEL.key], outcome=outcome, at=at)
        since = 0.0 if last is None else (at - last).total_seconds() / 86400
        impact, last = impact_after_use(impact, since, rate, outcome=outcome, step=learning.usage_impact), at
    [record], _, _ = driver.execute_query(
        "MATCH (e:Experience {kb: $kb, id: $id}) RETURN e.usage_impact AS impact, e.usage_impact_at AS at",
        kb=kb.namespace, id=CANCEL.key, database_=neo4j_target.database)
    assert record["impact"] == pytest.approx(impact, abs=1e-12)
    assert record["at"].to_native() == last


def test_step_rewards_average_every_report_mael(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL])
    kb.record_feedback(step_rewards=[{"experience_id": CANCEL.key, "order": 1, "reward": 1.0}])
    kb.record_feedback(step_rewards=[{"experience_id": CANCEL.key, "order": 1, "reward": -0.5},
                                     {"experience_id": CANCEL.key, "order": 0, "reward": 0.5}])
    stored = kb.get(CANCEL.key)
    assert stored is not None
    assert [s.reward for s in stored.steps] == [pytest.approx(0.5), pytest.approx(0.25)]


def test_outcomes_with_an_agent_fill_the_ability_matrix(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL, FLIGHT])
    kb.record_feedback(used=[CANCEL.key], outcome=True, agent="alpha")
    kb.record_feedback(used=[CANCEL.key], outcome=False, agent="alpha")
    kb.record_feedback(used=[FLIGHT.key], outcome=True, agent="beta")
    kb.record_feedback(used=[CANCEL.key], outcome=True, agent="beta", domain="banking")
    cells = {(c.agent, c.domain): (c.attempts, c.successes) for c in kb.ability_matrix().cells}
    assert cells == {("alpha", "retail"): (2, 1), ("beta", "airline"): (1, 1), ("beta", "banking"): (1, 1)}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"used": ["exp-does-not-exist"], "outcome": True}, "not in namespace"),
        ({"step_rewards": [{"experience_id": "CANCEL", "order": 7, "reward": 1.0}]}, "has no step 7"),
        ({"used": ["CANCEL"], "outcome": 1.5}, "outcome"),
        ({"used": ["CANCEL"], "outcome": float("nan")}, "outcome"),
        ({"step_rewards": [{"experience_id": "CANCEL", "order": 0, "reward": 3}]}, "reward"),
        ({"used": ["CANCEL"], "mood": "great"}, "mood"),
        ({}, "nothing to record"),
    ],
)
def test_bad_feedback_is_refused_and_writes_nothing(kb: KnowledgeBase, fields: dict[str, object], message: str) -> None:
    kb.add_experiences([CANCEL])
    resolved = {key: ([CANCEL.key if v == "CANCEL" else v for v in value] if isinstance(value, list)
                      and value and isinstance(value[0], str) else value) for key, value in fields.items()}
    if "step_rewards" in resolved:
        resolved["step_rewards"] = [{**r, "experience_id": CANCEL.key} for r in resolved["step_rewards"]]  # type: ignore[union-attr]
    with pytest.raises(InvalidInputError, match=message):
        kb.record_feedback(**resolved)
    after = state(kb, CANCEL)
    assert (after["retrieved"], after["used"], after["succeeded"], after["quality"]) == (0, 0, 0, 0.5)


def test_one_event_with_an_unknown_id_changes_none_of_the_known_ones(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL])
    with pytest.raises(InvalidInputError, match="exp-missing"):
        kb.record_feedback(retrieved=[CANCEL.key, "exp-missing"], used=[CANCEL.key], outcome=True)
    assert state(kb, CANCEL)["retrieved"] == 0


def test_eight_threads_of_500_events_lose_no_update(kb: KnowledgeBase) -> None:
    kb.add_experiences([CANCEL, RETURN])
    threads, per_thread = 8, 500

    def report(thread: int) -> None:
        for n in range(per_thread):
            success = (thread + n) % 2 == 0
            kb.record_feedback(retrieved=[CANCEL.key, RETURN.key], used=[CANCEL.key if n % 2 else RETURN.key],
                               outcome=success, agent=f"agent-{thread % 2}",
                               step_rewards=[{"experience_id": CANCEL.key, "order": 0, "reward": 1.0 if success else -1.0}])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(report, range(threads)))
    total = threads * per_thread
    cancel, ret = state(kb, CANCEL), state(kb, RETURN)
    assert cancel["retrieved"] == ret["retrieved"] == total
    assert cancel["used"] + ret["used"] == total and cancel["used"] == ret["used"] == total // 2
    successes = sum((t + n) % 2 == 0 for t in range(threads) for n in range(per_thread))
    assert cancel["succeeded"] + ret["succeeded"] == successes
    cells = kb.ability_matrix().cells
    assert sum(c.attempts for c in cells) == total and sum(c.successes for c in cells) == successes
    stored = kb.get(CANCEL.key)
    assert stored is not None and stored.steps[0].reward == pytest.approx((2 * successes - total) / total)


def test_an_outcome_reported_with_its_task_steers_search_for_tasks_like_it(kb: KnowledgeBase) -> None:
    first = Experience(problem="Cancel a pending order placed by mistake.", goal="Get done: cancel", domain="retail",
                       steps=[Step(action="cancel_pending_order")])
    second = Experience(problem="Cancel a pending order that was placed by mistake.", goal="Get done: cancel",
                        domain="retail", steps=[Step(action="get_order_details"), Step(action="cancel_pending_order")])
    kb.add_experiences([first, second])
    task = "I placed an order by mistake and want to cancel it while it is pending"
    other = "Book a flight from Boston to Denver"
    before = kb.search(task, k=2)
    top, runner_up = before.ids()
    report = kb.record_feedback(retrieved=before.ids(), used=[top], outcome=False, task=task)
    assert report.used == 1 and kb.stats().nodes["Outcome"] == 1
    after = kb.search(task, k=2)
    assert after.ids() == [runner_up, top], "what failed on this task drops below the alternative"
    demoted = after.hits[1].breakdown
    assert demoted.outcomes == 1 and demoted.context == pytest.approx(0.5, abs=0.03)
    unrelated = kb.search(other, k=2)
    assert all(h.breakdown.context == 1.0 for h in unrelated.hits), "a different kind of task is not evidence"
    kb.record_feedback(used=[runner_up], outcome=True, task=task)
    assert kb.search(task, k=2).hits[0].breakdown.context > 1.0


def test_the_explanation_shows_what_feedback_did_to_a_score(kb: KnowledgeBase) -> None:
    from kbgraph.search.explain import explain_results

    task = "cancel my order, I ordered it by mistake"

    def stored_and_read() -> str:
        # Stored and searched on one UTC day: across midnight the new experiences are a day old,
        # and their decayed utility rightly shows as a factor before any feedback.
        kb.clear()
        kb.add_experiences([CANCEL, RETURN])
        return explain_results(kb.search(task, k=2))

    assert "× utility" not in on_one_utc_day(stored_and_read)
    kb.record_feedback(used=[CANCEL.key], outcome=False, task=task)
    text = explain_results(kb.search(task, k=2))
    assert "× utility" in text and "1 outcome(s) on tasks like this one" in text
