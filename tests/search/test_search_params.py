"""Specification of kbgraph.search.params (the weights, filters and query of student retrieval) and
of the pure ranking expansion of kbgraph.search.eval.evaluate. No database is needed.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from kbgraph.core.models import RelationType
from kbgraph.search.eval.evaluate import expand_to_trajectories
from kbgraph.search.params import QueryStep, SearchFilters, SearchQuery, SearchWeights

NAN, INF = float("nan"), float("inf")


# ----------------------------------------------------------------------------- SearchWeights


def test_every_default_weight_is_within_its_bounds() -> None:
    schema = SearchWeights.model_json_schema()
    checked = 0
    fields = [(f"{group}.{name}", field) for group, model in schema["$defs"].items()
              if "properties" in model for name, field in model["properties"].items()]
    for name, field in fields:
        if "default" not in field or not isinstance(field["default"], (int, float)):
            continue
        value = field["default"]
        assert math.isfinite(value), name
        if "minimum" in field:
            assert value >= field["minimum"], name
        if "exclusiveMinimum" in field:
            assert value > field["exclusiveMinimum"], name
        if "maximum" in field:
            assert value <= field["maximum"], name
        checked += 1
    assert checked >= 20


def test_the_defaults_pass_their_own_validation() -> None:
    # Pydantic does not validate defaults; validating a dump of them does.
    defaults = SearchWeights()
    assert SearchWeights.model_validate(defaults.model_dump()) == defaults


def test_default_edge_weights_cover_every_relation_within_the_unit_interval() -> None:
    weights = SearchWeights().edge_weights
    assert set(weights) == set(RelationType)
    assert all(0.0 <= w <= 1.0 for w in weights.values())


def test_merged_without_overrides_is_the_same_weights() -> None:
    weights = SearchWeights(alpha=0.3)
    assert weights.merged(None) is weights
    assert weights.merged({}) == weights


def test_merged_applies_a_dict_of_overrides_and_keeps_the_rest() -> None:
    base = SearchWeights(structure_weight=0.1)
    merged = base.merged({"alpha": 0.3, "max_hops": 1})
    assert (merged.alpha, merged.max_hops, merged.structure_weight) == (0.3, 1, 0.1)
    changed: Any = {"lexical": {"alpha"}, "traversal": {"max_hops"}}
    assert merged.model_dump(exclude=changed) == base.model_dump(exclude=changed)
    assert base.alpha == SearchWeights().alpha  # the original is unchanged


def test_merged_applies_only_the_fields_set_on_overriding_weights() -> None:
    base = SearchWeights(structure_weight=0.1)
    merged = base.merged(SearchWeights(alpha=0.3))
    assert merged.alpha == 0.3
    assert merged.structure_weight == 0.1  # not reset to the override's default


@pytest.mark.parametrize(
    "overrides",
    [{"alpha": NAN}, {"alpha": INF}, {"alpha": 1.5}, {"alpha": -0.1}, {"hop_decay": 1.5},
     {"max_hops": 4}, {"tau": 0.0}, {"no_such_weight": 0.5}, {"edge_weights": {"sibling": 0.5}}],
    ids=["nan", "inf", "above-1", "negative", "hop_decay", "max_hops", "tau-zero", "unknown-name", "unknown-relation"],
)
def test_merged_validates_the_result(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SearchWeights().merged(overrides)


@pytest.mark.parametrize("field", ["alpha", "structure_weight", "success_floor", "support_weight", "threshold"])
@pytest.mark.parametrize("bad", [NAN, INF, -0.01, 1.5])
def test_unit_weights_reject_nan_and_values_outside_the_unit_interval(field: str, bad: float) -> None:
    with pytest.raises(ValidationError, match=field):
        SearchWeights.model_validate({field: bad})


def test_unknown_weight_names_are_rejected() -> None:
    with pytest.raises(ValidationError, match="alpah"):
        SearchWeights.model_validate({"alpah": 0.5})


def test_weights_are_frozen() -> None:
    weights = SearchWeights()
    with pytest.raises(ValidationError):
        setattr(weights, "alpha", 0.1)


def test_edge_weights_accept_lower_case_names_and_keep_defaults_for_the_others() -> None:
    defaults = SearchWeights().edge_weights
    weights = SearchWeights.model_validate({"edge_weights": {"abstraction": 0.5, "Alternative": 0.1}})
    assert weights.edge_weights[RelationType.ABSTRACTION] == 0.5
    assert weights.edge_weights[RelationType.ALTERNATIVE] == 0.1
    assert weights.edge_weights[RelationType.COMPOSITION] == defaults[RelationType.COMPOSITION]
    assert weights.edge_weights[RelationType.ADAPTATION] == defaults[RelationType.ADAPTATION]
    assert set(weights.edge_weights) == set(RelationType)


def test_edge_weights_accept_relation_types_and_upper_case_names() -> None:
    weights = SearchWeights.model_validate(
        {"edge_weights": {RelationType.COMPOSITION: 0.2, "ADAPTATION": 0.3}}
    )
    assert weights.edge_weights[RelationType.COMPOSITION] == 0.2
    assert weights.edge_weights[RelationType.ADAPTATION] == 0.3


def test_edge_weights_can_be_overridden_through_merged() -> None:
    merged = SearchWeights().merged({"edge_weights": {"composition": 0.1}})
    assert merged.edge_weights[RelationType.COMPOSITION] == 0.1
    assert merged.edge_weights[RelationType.ABSTRACTION] == SearchWeights().edge_weights[RelationType.ABSTRACTION]


@pytest.mark.parametrize("relation", ["sibling", "", "abstractions", "RELATED_TO"])
def test_unknown_relation_names_are_rejected(relation: str) -> None:
    with pytest.raises(ValidationError, match="unknown relation"):
        SearchWeights.model_validate({"edge_weights": {relation: 0.5}})


@pytest.mark.parametrize("bad", [1.5, -0.2, NAN])
def test_edge_weights_must_lie_in_the_unit_interval(bad: float) -> None:
    with pytest.raises(ValidationError):
        SearchWeights.model_validate({"edge_weights": {"abstraction": bad}})


# ----------------------------------------------------------------------------- SearchFilters


def test_filters_default_to_active_experiences_of_every_domain_and_kind() -> None:
    filters = SearchFilters()
    assert filters.statuses == ["active"]
    assert filters.domains is None and filters.kinds is None
    assert (filters.min_success, filters.min_quality) == (0.0, 0.0)


@pytest.mark.parametrize(
    "statuses", [["rejected"], ["active", "rejected"], ["archived"], ["active", "archived"], ["deleted"], []])
def test_archived_and_rejected_experiences_can_never_be_asked_for(statuses: list[str]) -> None:
    with pytest.raises(ValidationError):
        SearchFilters.model_validate({"statuses": statuses})


@pytest.mark.parametrize(
    "fields",
    [{"kinds": ["template"]}, {"domains": [""]}, {"min_success": 1.5}, {"min_quality": NAN}, {"colour": "red"}],
)
def test_other_invalid_filters_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SearchFilters.model_validate(fields)


# ----------------------------------------------------------------------------- QueryStep, SearchQuery


def test_a_step_action_is_stripped_and_must_not_be_blank() -> None:
    assert QueryStep(action="  search_orders ").action == "search_orders"
    for blank in ("", "   "):
        with pytest.raises(ValidationError):
            QueryStep(action=blank)


def test_a_query_needs_something_to_search_for() -> None:
    with pytest.raises(ValidationError, match="nothing to search for"):
        SearchQuery()
    with pytest.raises(ValidationError, match="nothing to search for"):
        SearchQuery(task="   \n\t")
    with pytest.raises(ValidationError, match="nothing to search for"):
        SearchQuery(task=" ", problem=" ", goal="")


def test_a_task_or_problem_or_goal_or_steps_is_enough() -> None:
    assert SearchQuery(task="Cancel my order").task == "Cancel my order"
    assert SearchQuery(problem="Order arrived broken").problem == "Order arrived broken"
    assert SearchQuery(goal="Refund issued").goal == "Refund issued"
    query = SearchQuery(steps_so_far=[QueryStep(action="find_user")])
    assert [s.action for s in query.steps_so_far] == ["find_user"]


def test_query_defaults() -> None:
    query = SearchQuery(task="t")
    assert query.k == 5 and query.exclude == [] and query.steps_so_far == []


@pytest.mark.parametrize("fields", [{"k": 0}, {"domain": ""}, {"agent": ""}, {"unknown": 1}])
def test_invalid_query_fields_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SearchQuery.model_validate({"task": "t", **fields})


def test_pg_text_is_the_stripped_task_without_problem_or_goal() -> None:
    assert SearchQuery(task="  Cancel my order \n").pg_text() == "Cancel my order"


def test_pg_text_uses_problem_and_goal_when_given() -> None:
    query = SearchQuery(task="The whole story", problem="Order arrived broken", goal="Refund issued")
    assert query.pg_text() == "Order arrived broken\nRefund issued"


def test_pg_text_with_a_problem_only() -> None:
    assert SearchQuery(task="story", problem="Order arrived broken").pg_text() == "Order arrived broken"


def test_pg_text_with_a_goal_only_uses_the_task_as_the_problem() -> None:
    assert SearchQuery(task="Order arrived broken", goal="Refund issued").pg_text() == (
        "Order arrived broken\nRefund issued"
    )


def test_pg_text_ignores_blank_problem_and_goal() -> None:
    assert SearchQuery(task="Cancel my order", problem="  ", goal="").pg_text() == "Cancel my order"


# ----------------------------------------------------------------------------- expand_to_trajectories

SOURCES = {
    "e1": ["t1", "t2"],
    "e2": ["t2", "t3"],  # t2 also stands behind e1
    "e3": ["t4"],
    "e4": [],  # an experience with no known sources
}


def test_runs_that_failed_come_after_every_run_that_worked() -> None:
    failed = {"e1": ["f1"], "e3": ["f3", "t4"]}
    assert expand_to_trajectories(["e1", "e2", "e3"], SOURCES, set(), 10, failed) == ["t1", "t2", "t3", "t4", "f1", "f3"]
    assert expand_to_trajectories(["e1", "e3"], SOURCES, {"f1"}, 4, failed) == ["t1", "t2", "t4", "f3"]


def test_trajectories_are_listed_in_rank_order() -> None:
    assert expand_to_trajectories(["e1", "e2", "e3"], SOURCES, set(), 10) == ["t1", "t2", "t3", "t4"]
    assert expand_to_trajectories(["e3", "e2", "e1"], SOURCES, set(), 10) == ["t4", "t2", "t3", "t1"]


def test_a_trajectory_is_listed_once() -> None:
    assert expand_to_trajectories(["e1", "e2", "e1"], SOURCES, set(), 10) == ["t1", "t2", "t3"]


def test_excluded_trajectories_are_skipped() -> None:
    exclude = frozenset({"t1", "t3"})
    assert expand_to_trajectories(["e1", "e2", "e3"], SOURCES, exclude, 10) == ["t2", "t4"]
    assert exclude == {"t1", "t3"}


def test_a_mutable_exclude_set_is_not_changed() -> None:
    exclude = {"t4"}
    assert expand_to_trajectories(["e1", "e3"], SOURCES, exclude, 10) == ["t1", "t2"]
    assert exclude == {"t4"}


def test_listing_stops_at_k() -> None:
    assert expand_to_trajectories(["e1", "e2", "e3"], SOURCES, set(), 3) == ["t1", "t2", "t3"]
    assert expand_to_trajectories(["e1", "e2", "e3"], SOURCES, set(), 1) == ["t1"]
    # Excluded and repeated trajectories do not count towards k.
    assert expand_to_trajectories(["e1", "e2", "e3"], SOURCES, {"t1"}, 2) == ["t2", "t3"]


def test_experiences_without_known_sources_contribute_nothing() -> None:
    assert expand_to_trajectories(["e4", "unknown", "e3"], SOURCES, set(), 10) == ["t4"]
    assert expand_to_trajectories(["unknown"], SOURCES, set(), 10) == []
    assert expand_to_trajectories([], SOURCES, set(), 10) == []
