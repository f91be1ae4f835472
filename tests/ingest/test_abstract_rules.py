"""The rule-based abstractor: deterministic, offline, generalised."""

from kbgraph.core.experience_rules import classify_issue, failed_for_the_moment, problem_from_task
from kbgraph.ingest.abstract import RuleBasedAbstractor
from kbgraph.ingest.reflect import RuleBasedReflector
from kbgraph.core.models import Trajectory


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


def test_a_failure_mode_keeps_what_the_agent_did_next_as_the_reflectors_record() -> None:
    traj = trajectory()
    [failure] = RuleBasedAbstractor().abstract(traj).failure_modes
    # The tool switched to is data, not words to read back (search's teacher names the form from it).
    assert failure.record is not None
    assert (failure.record.kind, failure.record.recovery, failure.record.action) == (
        "recovery", "switch", "find_user_id_by_name_zip")
    assert failure.looked_up is False
    # The record is the reflector's: the failure mode is evidence for the statement it says.
    fix = next(p for p in RuleBasedReflector().reflect(traj, RuleBasedAbstractor().abstract(traj))
               if p.concept == "find user id by email")
    assert fix.record == failure.record
    # Nothing tried after the error, only look-ups: the record says none, the failure mode that it looked things up.
    looked = trajectory(outcome={"success": False}, steps=[
        {"action": "book_reservation", "arguments": {"user_id": "jo_1"}, "error": "Error: not enough seats"},
        {"action": "get_user_details", "arguments": {"user_id": "jo_1"}}])
    [failure] = RuleBasedAbstractor().abstract(looked).failure_modes
    assert failure.record is not None and failure.record.recovery == "none" and failure.looked_up is True


def test_a_run_that_calls_its_tools_through_a_wrapper_takes_the_way_of_the_tools_it_called() -> None:
    banking = trajectory(domain="banking", task="Close my debit card ending 4721.", steps=[
        {"action": "log_verification", "arguments": {"user_id": "755bcb4d5d"}},
        {"action": "unlock_discoverable_agent_tool", "arguments": {"agent_tool_name": "close_debit_card_4721"}},
        {"action": "call_discoverable_agent_tool",
         "arguments": {"agent_tool_name": "close_debit_card_4721", "arguments": "{\"card_id\": \"dc_1\"}"}},
    ])
    exp = RuleBasedAbstractor().abstract(banking)
    call = exp.steps[-1]
    assert call.action == "call_discoverable_agent_tool" and call.tool == "close_debit_card"  # the call made stays
    assert exp.actions() == ["log_verification", "unlock_discoverable_agent_tool", "close_debit_card"]
    assert exp.structure_text().endswith("-> close_debit_card")
    # Checking identity and unlocking a tool change nothing the customer holds: the goal is the change.
    assert exp.goal == "Get done: close debit card"
    assert all(s.tool is None for s in exp.steps[:2])


def test_a_failed_call_through_a_wrapper_is_signed_by_the_tool_it_called() -> None:
    def failing(tool: str) -> Trajectory:
        return trajectory(domain="banking", task="Close my card.", steps=[
            {"action": "call_discoverable_agent_tool", "arguments": {"agent_tool_name": f"{tool}_4721"},
             "error": "Error: card dc_1 is not active"},
            {"action": "call_discoverable_agent_tool", "arguments": {"agent_tool_name": f"{tool}_4721"}},
        ])
    [close] = RuleBasedAbstractor().abstract(failing("close_debit_card")).failure_modes
    [freeze] = RuleBasedAbstractor().abstract(failing("freeze_debit_card")).failure_modes
    assert close.signature == "close_debit_card|error: card # is not active"
    assert close.signature != freeze.signature  # one wrapper, two tools: two failures
    assert close.description.startswith("close debit card failed:")
    assert close.recovery_kind == "repeat" and close.recovered  # the same call again went through


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
    # Failures of the moment, whatever else their words say ("too many" is no limit of the task's).
    for message in ("503 Service Unavailable", "HTTP 429 Too Many Requests", "502 Bad Gateway",
                    "upstream temporarily unavailable, try again later"):
        assert classify_issue(message) == "transient", message
    assert classify_issue("Error: payment method not found") == "not_found"
    assert failed_for_the_moment("503 Service Unavailable") and failed_for_the_moment("Request timed out")
    assert not failed_for_the_moment("Error: payment method not found")


def test_long_tasks_are_cut_to_a_readable_problem() -> None:
    assert len(problem_from_task("Word. " * 100_000)) <= 600


def test_reflection_learns_the_fix_the_preconditions_and_the_call_under_each_operation() -> None:
    traj = trajectory()
    pairs = RuleBasedReflector().reflect(traj, RuleBasedAbstractor().abstract(traj))
    by_concept = {p.concept: [q.insight for q in pairs if q.concept == p.concept] for p in pairs}
    # The error, its values masked, with what got past it (the next look-up, another way to find the user).
    fix = next(p for p in pairs if p.concept == "find user id by email")
    assert fix.insight == ("When find user id by email fails with “UserNotFound: no user”, "
                           "the agent switched to find user id by name zip.")
    assert fix.worked is True
    # What was read before the change, and the call that made it.
    assert "Before return delivered order items, get order details." in by_concept["return delivered order items"]
    assert "To return delivered order items, call return_delivered_order_items with item_ids, order_id, " \
           "payment_method_id." in by_concept["return delivered order items"]
    assert not any("check the preconditions" in p.insight for p in pairs)  # no filler


def test_a_failed_run_teaches_its_errors_but_not_how_to_do_it() -> None:
    traj = trajectory(outcome={"success": False})
    concepts = {p.concept for p in RuleBasedReflector().reflect(traj, RuleBasedAbstractor().abstract(traj))}
    assert concepts == {"find user id by email"}


def test_a_rule_the_agent_stated_is_learnt_under_the_change_it_made_next() -> None:
    traj = trajectory(steps=[
        {"action": "get_order_details", "arguments": {"order_id": "#W1"}},
        {"action": "think", "arguments": {"thought": "I need to check the status first. Orders can only be cancelled "
                                                     "if they are still pending."}},
        {"action": "cancel_pending_order", "arguments": {"order_id": "#W1", "reason": "ordered by mistake"}},
    ])
    pairs = RuleBasedReflector().reflect(traj, RuleBasedAbstractor().abstract(traj))
    assert ("cancel pending order", "Rule the agent applied: Orders can only be cancelled if they are still pending.") in [
        (p.concept, p.insight) for p in pairs]  # the plan ("I need to …") is not a rule


def test_a_rule_is_filed_under_the_operation_it_names_or_not_at_all() -> None:
    rule = "It was created more than 24 hours ago, so it cannot be cancelled due to a change of plans."
    steps = [{"action": "get_reservation_details", "arguments": {"reservation_id": "ABC"}, "thought": rule},
             {"action": "update_reservation_flights", "arguments": {"reservation_id": "ABC", "cabin": "economy"}}]
    cancel = {"action": "cancel_reservation", "arguments": {"reservation_id": "ABC"}}
    for later, concept in (([cancel], "cancel reservation"), ([], None)):
        traj = trajectory(steps=[*steps, *later])
        filed = [p.concept for p in RuleBasedReflector().reflect(traj, RuleBasedAbstractor().abstract(traj))
                 if p.insight.startswith("Rule the agent applied:")]
        # About cancelling (what "cannot" governs), not creating or the update the run made next; not
        # kept when the run never cancelled.
        assert filed == ([concept] if concept else []), later


def test_a_long_result_is_stored_cut_and_says_how_long_it_was() -> None:
    from kbgraph.core.models import STORED_OBSERVATION_CHARS

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
