"""A candidate's share of its task: its way's successful runs over the best way's."""

from __future__ import annotations

from kbgraph.search.task_ways import task_ways, way_share

RESOLVED = ["get_order_details", "cancel_pending_order"]
HANDED_OFF = ["get_order_details", "transfer_to_human_agents"]


def test_the_way_that_worked_most_often_keeps_its_score_and_rarer_ways_are_discounted() -> None:
    ways = task_ways([["t1", RESOLVED, 4], ["t1", ["get_order_details", "modify_pending_order_items"], 1]], 0.5)
    assert way_share("t1", RESOLVED, ways) == 1.0
    assert way_share("t1", ["get_order_details", "modify_pending_order_items"], ways) == 0.25


def test_a_way_that_hands_the_task_to_a_human_counts_its_runs_at_the_handoff_credit() -> None:
    ways = task_ways([["t1", RESOLVED, 2], ["t1", HANDED_OFF, 2]], 0.5)
    assert way_share("t1", HANDED_OFF, ways) == 0.5
    assert way_share("t1", HANDED_OFF, task_ways([["t1", RESOLVED, 2], ["t1", HANDED_OFF, 2]], 1.0)) == 1.0


def test_nothing_known_or_a_way_that_never_worked_shares_fully() -> None:
    ways = task_ways([["t1", RESOLVED, 3], ["t2", RESOLVED, 0]], 0.5)
    assert way_share("t3", RESOLVED, ways) == 1.0, "a task no candidate's siblings took"
    assert way_share(None, RESOLVED, ways) == 1.0
    assert way_share("t2", RESOLVED, ways) == 1.0, "no way of the task worked"
    assert way_share("t1", ["something_else"], ways) == 1.0, "its own way never worked: its success rate says so"
    assert way_share("t1", None, ways) == 1.0, "no operations: no way to compare"


def test_runs_of_one_way_add_up_and_a_way_without_operations_matches_none() -> None:
    ways = task_ways([["t1", RESOLVED, 1], ["t1", RESOLVED, 1], ["t1", None, 6], ["t1", [], 1]], 0.5)
    assert way_share("t1", RESOLVED, ways) == 2 / 6
    assert way_share("t1", [], ways) == 1 / 6
