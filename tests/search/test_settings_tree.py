"""Specification of the search settings as a tree (kbgraph.core.weights, issue 54 point 3): seven
groups, every field named by its path (``intent.one_ask_penalty``) and still by its flat name
(``intent_one_ask_penalty``), wherever weights are given; the suite's ablations and opt-in variants
as named recipes over the paths; each limit defined once. No database is needed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from kbgraph.cli._common import _parse_assignments
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.settings import Settings
from kbgraph.core.weights import FLAT_NAMES, GROUPS, RETIRED, RetiredWeightWarning, ScanLimits, SearchWeights, as_paths, as_tree
from kbgraph.search import params, teacher
from kbgraph.search.candidates import ScanPolicy
from kbgraph.search.eval.recipes import ABLATIONS, KBGRAPH, RECIPES, VARIANTS, columns
from kbgraph.search.teacher import RefineWeights

DEFAULTS = SearchWeights()


# ----------------------------------------------------------------------------- the tree


def test_the_settings_are_seven_groups_in_order() -> None:
    assert list(SearchWeights.model_fields) == ["coarse", "lexical", "intent", "outcomes", "traversal", "selection",
                                                "scan"]
    assert list(GROUPS) == list(SearchWeights.model_fields)


def test_every_field_has_one_flat_name_and_one_path() -> None:
    paths = [f"{group}.{field}" for group, model in GROUPS.items() for field in model.model_fields]
    assert sorted(FLAT_NAMES.values()) == sorted(paths)
    assert len(set(FLAT_NAMES.values())) == len(FLAT_NAMES) == 50


@pytest.mark.parametrize(("flat", "path"), [
    ("alpha", "lexical.alpha"), ("intent_one_ask_penalty", "intent.one_ask_penalty"),
    ("intent_weight", "intent.weight"), ("theta_coarse", "coarse.theta"), ("structure_query_steps", "coarse.query_steps"),
    ("lexical_stop_words", "lexical.stop_words"), ("max_hops", "traversal.max_hops"),
    ("handoff_credit", "outcomes.handoff_credit"), ("candidates", "selection.candidates"),
    ("exact_scan_max", "scan.exact_scan_max"),
])
def test_a_flat_name_is_an_alias_of_its_path(flat: str, path: str) -> None:
    assert FLAT_NAMES[flat] == path


def test_flat_names_dotted_paths_and_nested_groups_build_the_same_weights() -> None:
    group, field = "intent", "one_ask_penalty"
    by_flat = SearchWeights.model_validate({"intent_one_ask_penalty": 1.0})
    by_path = SearchWeights.model_validate({"intent.one_ask_penalty": 1.0})
    by_group = SearchWeights.model_validate({group: {field: 1.0}})
    by_model = SearchWeights(intent=DEFAULTS.intent.model_copy(update={field: 1.0}))
    assert by_flat == by_path == by_group == by_model
    assert by_flat.intent.one_ask_penalty == 1.0 and by_flat.intent.weight == DEFAULTS.intent.weight


def test_a_flat_keyword_is_still_accepted_by_the_constructor() -> None:
    weights = SearchWeights(alpha=0.3, exact_scan_max=0)  # type: ignore[call-arg]  # untyped, as before the tree
    assert weights.lexical.alpha == 0.3 and weights.scan.exact_scan_max == 0


def test_a_flat_name_still_reads_the_tree() -> None:
    weights = SearchWeights.model_validate({"lexical.alpha": 0.3})
    assert weights.alpha == 0.3 == weights.lexical.alpha == weights.value("alpha") == weights.value("lexical.alpha")
    with pytest.raises(AttributeError):
        _ = weights.no_such_weight
    with pytest.raises(KeyError):
        weights.value("intent.no_such_weight")


@pytest.mark.parametrize("changes", [
    {"no_such_weight": 1}, {"intent.no_such_weight": 1}, {"nowhere.alpha": 1}, {"intent": {"alpha": 0.3}},
])
def test_unknown_names_are_refused_with_their_place(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        SearchWeights.model_validate(changes)


def test_a_group_validates_its_own_fields_together() -> None:
    with pytest.raises(ValidationError, match="intent.known_above .* must exceed intent.new_below"):
        SearchWeights.model_validate({"intent_known_above": 0.3})


# ----------------------------------------------------------------------------- changes: merged, --set, copies


def test_merged_takes_flat_dotted_and_group_names_at_once_and_keeps_the_rest() -> None:
    base = SearchWeights.model_validate({"coarse.structure_weight": 0.1})
    merged = base.merged({"alpha": 0.3, "traversal.max_hops": 2, "intent": {"spread": False}})
    assert (merged.lexical.alpha, merged.traversal.max_hops, merged.intent.spread) == (0.3, 2, False)
    assert merged.coarse.structure_weight == 0.1 and merged.intent.weight == DEFAULTS.intent.weight


def test_of_two_names_for_one_field_the_later_wins() -> None:
    assert DEFAULTS.merged({"alpha": 0.3, "lexical.alpha": 0.4}).lexical.alpha == 0.4
    assert DEFAULTS.merged({"lexical.alpha": 0.4, "alpha": 0.3}).lexical.alpha == 0.3


def test_overriding_weights_change_only_the_fields_they_were_given() -> None:
    base = SearchWeights.model_validate({"lexical.scale": "coverage", "selection.candidates": 7})
    merged = base.merged(SearchWeights.model_validate({"alpha": 0.2}))
    assert (merged.lexical.alpha, merged.lexical.scale, merged.selection.candidates) == (0.2, "coverage", 7)


def test_set_on_the_command_line_takes_dotted_and_flat_names() -> None:
    dotted = _parse_assignments(["intent.one_ask_penalty=3", "lexical.scale=coverage"], "--set")
    flat = _parse_assignments(["intent_one_ask_penalty=3", "lexical_scale=coverage"], "--set")
    assert DEFAULTS.merged(dotted) == DEFAULTS.merged(flat)
    assert DEFAULTS.merged(dotted).lexical.scale == "coverage"


@pytest.mark.parametrize(("weights", "named"), [
    ({"alpha": 2.0}, "weights: alpha: "), ({"lexical.alpha": 2.0}, "weights: lexical.alpha: "),
    ({"lexical": {"alpha": 2.0}}, "weights: lexical.alpha: "),
    ({"edge_weights": {"alternative": 2.0}}, "weights: edge_weights.ALTERNATIVE: "),
])
def test_a_bad_weight_is_named_as_the_caller_named_it(weights: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(named)):
        params.parse_search_options(DEFAULTS, None, weights)


def test_a_copy_with_an_update_is_validated_and_takes_every_name() -> None:
    assert DEFAULTS.model_copy(update={"exact_scan_max": 0}).scan.exact_scan_max == 0
    with pytest.raises(ValidationError):
        DEFAULTS.model_copy(update={"alpha": 2.0})


def test_the_settings_take_flat_and_nested_names_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBGRAPH_SEARCH__ALPHA", "0.3")
    monkeypatch.setenv("KBGRAPH_SEARCH__INTENT__ONE_ASK_PENALTY", "1")
    search = Settings().search
    assert (search.lexical.alpha, search.intent.one_ask_penalty) == (0.3, 1.0)


def test_as_paths_spells_every_change_by_its_path() -> None:
    assert as_paths({"alpha": 0, "intent": {"weight": 0}, "traversal.max_hops": 0}) == {
        "lexical.alpha": 0, "intent.weight": 0, "traversal.max_hops": 0}
    assert as_tree({"alpha": 0, "lexical.scale": "coverage"}) == {"lexical": {"alpha": 0, "scale": "coverage"}}


# ----------------------------------------------------------------------------- recipes


@pytest.mark.parametrize("name", list(RECIPES))
def test_every_recipe_names_paths_of_the_tree_and_moves_the_defaults(name: str) -> None:
    recipe = RECIPES[name]
    assert recipe.changes and all(path in FLAT_NAMES.values() for path in recipe.changes)
    weights = DEFAULTS.merged(recipe.changes)
    assert all(weights.value(path) == value for path, value in recipe.changes.items())
    assert weights != DEFAULTS


#: The ablations as the suite wrote them before the tree (main 1ca30d3), by flat name.
FLAT_ABLATIONS: dict[str, dict[str, Any]] = {
    "traversal_off": {"max_hops": 0},
    "workflows_off": {"workflows": False},
    "lexical_off": {"alpha": 0.0},
    "structure_off": {"structure_weight": 0.0, "task_structure_weight": 0.0, "intent_structure_weight": 0.0},
    "outcomes_off": {"success_floor": 1.0, "support_weight": 0.0, "handoff_credit": 1.0, "outcome_weight": 0.0},
    "intent_off": {"intent_weight": 0.0},
    "history_off": {"intent_history_weight": 0.0},
    "intent_ramp_off": {"intent_scale": "novelty"},
    "intent_spread_off": {"intent_spread": False},
    "human_asks_off": {"intent_human_asks": False},
    "state_shift_off": {"intent_state_shift": 0.0},
    "verb_shift_off": {"intent_verb_shift": 0.0},
    "order_off": {"intent_order_penalty": 0.0},
    "one_ask_penalty_off": {"intent_one_ask_penalty": 0.0},
    "payment_joins_off": {"intent_payment_joins": False},
}


def test_each_ablation_is_the_same_weights_it_was_by_flat_name() -> None:
    assert list(ABLATIONS) == list(FLAT_ABLATIONS)
    for name, flat in FLAT_ABLATIONS.items():
        assert DEFAULTS.merged(ABLATIONS[name].changes) == DEFAULTS.merged(flat), name
        assert ABLATIONS[name].changes == as_paths(flat), name


def test_the_ablations_are_the_suites_columns_and_the_variants_opt_in() -> None:
    assert columns(None) is ABLATIONS
    assert list(columns(["intent_off", "lexical_coverage"])) == ["intent_off", "lexical_coverage"]
    assert not set(ABLATIONS) & set(VARIANTS)
    with pytest.raises(InvalidInputError, match="unknown no_such_recipe"):
        columns(["no_such_recipe"])


def test_a_recipe_wins_over_the_runs_own_setting_of_the_same_field_however_named() -> None:
    recipe = ABLATIONS["one_ask_penalty_off"]
    assert recipe.on({"intent_one_ask_penalty": 1.0, "alpha": 0.3}) == {
        "intent.one_ask_penalty": 0.0, "lexical.alpha": 0.3}
    assert KBGRAPH.on({"alpha": 0.3}) == {"lexical.alpha": 0.3}


def test_a_bad_setting_of_the_run_fails_before_anything_runs() -> None:
    with pytest.raises(InvalidInputError, match="weights of kbgraph"):
        KBGRAPH.checked({"intent.no_such_weight": 1})
    assert KBGRAPH.checked({"intent.weight": 0.5}) is KBGRAPH


# ----------------------------------------------------------------------------- limits defined once


def test_the_scan_limits_are_one_model_everywhere() -> None:
    assert ScanPolicy is ScanLimits and isinstance(DEFAULTS.scan, ScanLimits)
    for name, (low, high) in {"exact_scan_max": (0, 100_000), "overfetch_limit": (1, 100_000)}.items():
        for bad in (low - 1, high + 1):  # a refine call's own limit has the search settings' bounds
            with pytest.raises(ValidationError):
                ScanLimits.model_validate({name: bad})
            with pytest.raises(ValidationError):
                RefineWeights.model_validate({name: bad})
        assert RefineWeights.model_validate({name: high}).model_dump()[name] == high


def test_the_largest_k_is_one_number_for_search_and_refine() -> None:
    assert teacher.MAX_K is params.MAX_K


# ----------------------------------------------------------------------------- retired weights


@pytest.mark.parametrize("given", [
    {"same_task_similarity": 0.5}, {"selection.same_task_similarity": 0.5}, {"selection": {"same_task_similarity": 0.5}},
], ids=["flat name", "path", "nested group"])
def test_a_weight_that_is_no_longer_a_setting_is_ignored_with_a_warning_that_says_so(given: dict[str, Any]) -> None:
    # Settings written before it was retired keep working: the weight is dropped, and the user told.
    with pytest.warns(RetiredWeightWarning, match="same_task_similarity' is no longer a setting and was ignored"):
        assert SearchWeights.model_validate(given) == DEFAULTS
    with pytest.warns(RetiredWeightWarning):
        assert DEFAULTS.merged({**given, "alpha": 0.3}) == DEFAULTS.merged({"alpha": 0.3})


def test_a_retired_weight_is_no_field_of_the_tree_and_names_what_stands_in_its_place() -> None:
    assert "selection.same_task_similarity" in RETIRED and "SAME_TASK_SIMILARITY" in RETIRED["selection.same_task_similarity"]
    assert "same_task_similarity" not in FLAT_NAMES and "same_task_similarity" not in GROUPS["selection"].model_fields
    with pytest.raises(KeyError):
        DEFAULTS.value("selection.same_task_similarity")
