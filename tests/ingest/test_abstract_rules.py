"""The rule-based abstractor: deterministic, offline, generalised."""

from kbgraph.ingest.abstract import RuleBasedAbstractor, classify_issue, problem_from_task
from kbgraph.ingest.reflect import RuleBasedReflector
from kbgraph.models import Trajectory


def trajectory(**overrides: object) -> Trajectory:
    data: dict[str, object] = {
        "id": "t-1", "domain": "retail",
        "task": "jo@x.com. You are rigid, confident, happy. Return #W6067464 via credit_card_4190576: Electric Kettle;",
        "steps": [
            {"action": "find_user_id_by_email", "arguments": {"email": "jo@x.com"}, "error": "UserNotFound: no user"},
            {"action": "find_user_id_by_name_zip", "arguments": {"first_name": "Jo", "last_name": "Li", "zip": "10001"}},
            {"action": "get_order_details", "arguments": {"order_id": "#W6067464"}},
            {"action": "return_delivered_order_items",
             "arguments": {"order_id": "#W6067464", "item_ids": ["9624127908"], "payment_method_id": "credit_card_4190576"}},
        ],
        "outcome": {"success": True},
    }
    data.update(overrides)
    return Trajectory.model_validate(data)


def test_problem_drops_the_persona_and_generalises_values() -> None:
    exp = RuleBasedAbstractor().abstract(trajectory())
    assert exp.problem == "Return {id} via {id}: Electric Kettle;"
    assert exp.goal == "Get done: return delivered order items"
    assert exp.source_ids == ["t-1"] and exp.domain == "retail" and exp.success_rate == 1.0


def test_steps_are_generalised_with_an_argument_schema() -> None:
    exp = RuleBasedAbstractor().abstract(trajectory())
    last = exp.steps[-1]
    assert last.action == "return_delivered_order_items"
    assert "#W" not in last.text and "{order_id}" in last.text
    assert last.args_schema == {"item_ids": "list[string]", "order_id": "string", "payment_method_id": "string"}
    assert [s.order for s in exp.steps] == [0, 1, 2, 3]


def test_an_errored_step_becomes_a_failure_mode_with_its_recovery() -> None:
    exp = RuleBasedAbstractor().abstract(trajectory())
    [failure] = exp.failure_modes
    assert failure.issue_type == "not_found" and failure.step_order == 0
    # A failed look-up is fixed by the next look-up, here another way to find the user.
    assert failure.recovery.startswith("switched to find user id by name zip")
    assert failure.recovery_kind == "switch" and failure.recovered and failure.concrete and failure.run_id == "t-1"
    assert failure.signature == "find_user_id_by_email|usernotfound: no user"
    assert exp.steps[0].issue_type == "not_found" and exp.steps[0].resolution_effectiveness == 1.0
    assert exp.efficiency == 0.75


def test_abstraction_is_deterministic() -> None:
    assert RuleBasedAbstractor().abstract(trajectory()) .key == RuleBasedAbstractor().abstract(trajectory()).key


def test_a_task_without_steps_becomes_a_question_to_answer() -> None:
    exp = RuleBasedAbstractor().abstract(trajectory(task="What is the top-1 best-selling product in 2022", steps=[]))
    assert exp.problem == "What is the top-1 best-selling product in 2022"  # numbers carry its meaning
    assert exp.goal.startswith("Answer: ") and exp.difficulty is None and exp.steps == []


def test_issue_types() -> None:
    assert classify_issue("Request timed out after 30s") == "timeout"
    assert classify_issue("403 Forbidden") == "permission_denied"
    assert classify_issue("something odd") == "error"


def test_long_tasks_are_cut_to_a_readable_problem() -> None:
    assert len(problem_from_task("Word. " * 100_000)) <= 600


def test_reflection_names_operations_and_pitfalls() -> None:
    traj = trajectory()
    pairs = RuleBasedReflector().reflect(traj, RuleBasedAbstractor().abstract(traj))
    concepts = [p.concept for p in pairs]
    assert "return delivered order items" in concepts
    assert any(c.startswith("not found during find user id by email") for c in concepts)
    how = next(p for p in pairs if p.concept == "return delivered order items")
    assert how.insight.startswith("To return delivered order items, first find user id by email")


def test_a_long_result_is_stored_cut_and_says_how_long_it_was() -> None:
    from kbgraph.models import STORED_OBSERVATION_CHARS

    flights = "[" + ", ".join(f'{{"flight_number": "HAT{i:03d}", "price": {100 + i}}}' for i in range(300)) + "]"
    exp = RuleBasedAbstractor().abstract(trajectory(steps=[
        {"action": "search_direct_flight", "arguments": {"origin": "JFK"}, "observation": flights},
        {"action": "book_reservation", "arguments": "{\"flight_number\": \"HAT001\"}"},
    ]))
    first, second = exp.steps
    assert first.observation_chars == len(flights) and first.observation is not None
    assert len(first.observation) <= STORED_OBSERVATION_CHARS and first.observation.endswith("…")
    assert "HAT001" not in first.observation  # generalised like every stored text
    assert second.observation is None and second.observation_chars is None
    assert second.args_schema == {"flight_number": "string"}  # arguments given as JSON text were decoded
