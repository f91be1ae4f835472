"""A way that hands the task to a human is weaker evidence than one that resolved a task like it:
its successes count at ``handoff_credit`` (pure rule, and the same rule in Neo4j's regex dialect)."""

from __future__ import annotations

import neo4j
import pytest

from kbgraph.search.handoff import HANDOFF_PATTERN, asks_for_a_human, hands_off, is_handoff

HANDOFFS = ["transfer_to_human_agents", "transfer_to_human", "escalate_to_support", "EscalateToHumanAgent",
            "handoff_to_agent", "hand_over_to_representative", "transfer_to_live_agent", "escalate_ticket_to_supervisor"]
NOT_HANDOFFS = ["transfer_funds", "transfer_money_between_accounts", "cancel_reservation", "get_user_details",
                "book_reservation", "update_reservation_flights", "think", "escalate_priority", "agent_lookup_transfer"]


@pytest.mark.parametrize("action", HANDOFFS)
def test_handing_over_to_a_human_party_is_a_handoff(action: str) -> None:
    assert is_handoff(action)


@pytest.mark.parametrize("action", NOT_HANDOFFS)
def test_other_actions_including_moving_money_are_not(action: str) -> None:
    assert not is_handoff(action)


def test_a_way_hands_off_when_any_of_its_operations_does() -> None:
    assert hands_off(["update_reservation_flights", "transfer_to_human_agents"])
    assert not hands_off(["cancel_reservation"]) and not hands_off([])


def test_neo4j_reads_the_pattern_as_python_does(driver: neo4j.Driver) -> None:
    names = HANDOFFS + NOT_HANDOFFS
    records, _, _ = driver.execute_query("RETURN [n IN $names WHERE n =~ $pattern] AS matched",
                                         names=names, pattern=HANDOFF_PATTERN, routing_=neo4j.RoutingControl.READ)
    assert records[0]["matched"] == [n for n in names if is_handoff(n)]


ASKING_FOR_A_HUMAN = [
    "My paycheck isn't in my account and rent is due tomorrow. I want to talk to a real person!",
    "If you can't sort that out, put me through to a real person.",
    "If you can't set up a travel alert, connect me with a person who can.",
    "Get me a real person on the line now please.",
    "If you won't do it, let me speak to someone above you.",
    "I need a supervisor.",
    "Can you transfer me to a human agent?",
    "I'd like to speak with your manager about this charge.",
]
NOT_ASKING_FOR_A_HUMAN = [
    "I know I can only refer one person right now.",
    "I need a new personal checking account for a trip to Europe.",
    "Which personal card pays the most cash back?",
    "Transfer $500 from my savings to my checking account.",
    "Please add a second passenger, a person travelling with me, to my booking.",
    "If the agent says the flight can't be changed, cancel it instead.",
]


@pytest.mark.parametrize("request_text", ASKING_FOR_A_HUMAN)
def test_a_request_to_be_put_through_to_a_human_asks_for_a_human(request_text: str) -> None:
    assert asks_for_a_human(request_text)


@pytest.mark.parametrize("request_text", NOT_ASKING_FOR_A_HUMAN)
def test_naming_a_person_or_moving_money_is_not_asking_for_one(request_text: str) -> None:
    assert not asks_for_a_human(request_text)
