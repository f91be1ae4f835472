"""The bounds every outside value keeps (depth, 64-bit integers, valid Unicode), checked without
recursion, and how the models and feedback events apply them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from kbgraph.core.errors import InvalidInputError
from kbgraph.learning.feedback import FeedbackEvent
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import STORED, Experience
from kbgraph.core.value_bounds import INT64_MAX, INT64_MIN, ValueFault, value_fault, value_problem


def nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


def test_values_within_bounds_have_no_problem() -> None:
    assert value_problem({"a": [1, INT64_MAX, INT64_MIN, "é😀", {"b": None}], "c": nested(60)}) is None


def test_a_fault_keeps_its_place_as_data_and_each_caller_names_the_value_its_own_way() -> None:
    inside = value_fault({"a": [1, 2**70]})
    at_root = value_fault("\ud800")
    too_deep = value_fault(nested(100))
    assert inside == ValueFault(("a", 1), f"{2**70} is outside the 64-bit integer range Neo4j stores")
    assert at_root is not None and at_root.path == () and too_deep is not None and too_deep.cut
    assert str(inside) == f"a.1: {inside.reason}" and str(at_root) == f"(value): {at_root.reason}"
    assert inside.within("--param x") == f"--param x: a.1: {inside.reason}"
    assert at_root.within("query") == f"query: {at_root.reason}"
    assert too_deep.within("query") == "query: a.a.a.a.a.a.a.a…: nested deeper than 64 levels"
    assert inside.under("value") == f"value.a.1: {inside.reason}" and at_root.under("value") == f"value: {at_root.reason}"


def test_depth_is_measured_without_recursion_even_far_beyond_the_interpreter_limit() -> None:
    assert value_problem(nested(1_000_000)) == "a.a.a.a.a.a.a.a…: nested deeper than 64 levels"
    assert value_problem(nested(63)) is None


@pytest.mark.parametrize("number", [INT64_MAX + 1, INT64_MIN - 1, 10**20])
def test_integers_beyond_64_bits_are_named_by_their_path(number: int) -> None:
    assert value_problem({"steps": [{"n": number}]}) == f"steps.0.n: {number} is outside the 64-bit integer range Neo4j stores"


def test_lone_surrogates_in_values_and_keys_are_named() -> None:
    assert (value_problem({"a": ["ok", "x\udcff"]}) or "").startswith("a.1: contains a lone surrogate ('\\udcff')")
    assert (value_problem({"\ud800": 1}) or "").startswith("(value): a key contains a lone surrogate")


def test_the_models_refuse_out_of_bounds_values_with_the_field_named() -> None:
    with pytest.raises(ValidationError, match="retrieved: 100000000000000000000 is outside"):
        Experience(problem="p", retrieved=10**20)
    with pytest.raises(ValidationError, match=r"steps\.0\.args_schema\.a\.a.*nested deeper"):
        Experience.model_validate({"problem": "p", "steps": [{"action": "x", "args_schema": nested(5_000)}]})


@pytest.mark.parametrize("outcome", ["yes", "true", "1", "", [1], {"success": True}])
def test_an_outcome_given_as_text_or_a_container_is_refused_not_read_as_a_success(outcome: Any) -> None:
    with pytest.raises(ValidationError, match="outcome"):
        FeedbackEvent(retrieved=["e-1"], outcome=outcome)


@pytest.mark.parametrize("outcome", [True, False, 0, 1, 0.25])
def test_booleans_and_scores_in_the_unit_interval_are_outcomes(outcome: Any) -> None:
    assert FeedbackEvent(retrieved=["e-1"], outcome=outcome).outcome_score == float(outcome)


def test_reads_and_deletes_through_the_api_refuse_out_of_bounds_arguments_by_name(kb: KnowledgeBase) -> None:
    deep = nested(5_000)
    calls = {
        "get": lambda: kb.get("\udcff"),
        "get_many": lambda: kb.get_many([deep]),  # type: ignore[list-item]
        "delete": lambda: kb.delete(["x\ud800"]),
        "search": lambda: kb.search("cancel \udcff"),
        "search_steps": lambda: kb.search_steps("cancel_pending_order", deep),
        "refine": lambda: kb.refine([{"action": "cancel_pending_order", "arguments": deep}]),
    }
    for name, call in calls.items():
        with pytest.raises(InvalidInputError) as raised:
            call()
        text = str(raised.value)
        assert "lone surrogate" in text or "nested deeper" in text, (name, text)


def test_models_rebuilt_from_the_store_are_not_bounds_checked_again_but_everything_else_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What the store returns passed the check on its way in; reading it back (a search reads ~150
    # models a query) skips it. Without the STORED context every model is checked.
    import kbgraph.core.models._base

    checked: list[Any] = []
    real = kbgraph.core.models._base.within_bounds
    monkeypatch.setattr(kbgraph.core.models._base, "within_bounds", lambda data: checked.append(data) or real(data))
    data = {"problem": "Cancel order 7", "goal": "g", "domain": "retail", "steps": [{"action": "cancel_order"}]}
    Experience.model_validate(data)
    assert len(checked) == 2, "the experience and its step"
    checked.clear()
    assert Experience.model_validate(data, context=STORED).steps[0].action == "cancel_order"
    assert checked == []
    with pytest.raises(ValidationError):  # the model's own rules still hold
        Experience.model_validate({**data, "problem": ""}, context=STORED)


@pytest.mark.parametrize(("vector", "problem"), [
    ([0.0, 0.0, 0.0], "every value is 0"),
    ([0.1, float("nan")], "NaN or infinite"),
    ([float("-inf"), 0.1], "NaN or infinite"),
    ([1e308, 1e308], "length overflows 32-bit floats"),
    ([1e20, 1.0], "length overflows 32-bit floats"),
    ([1e-30, 1e-30], "length rounds to 0 in 32-bit floats"),
    ([10**400, 1], "too large for a 32-bit float"),
    ([True, 1.0], "holds bool, not a number"),
])
def test_a_vector_cosine_cannot_use_is_named(vector: list[float], problem: str) -> None:
    from kbgraph.core.value_bounds import vector_problem

    assert problem in (vector_problem(vector) or "")


def test_a_real_embedding_is_usable() -> None:
    from kbgraph.core.value_bounds import vector_problem

    assert vector_problem([0.03, -0.2, 0.5] * 128) is None
    assert vector_problem([1e-10] * 384) is None  # small but its length is a normal float32
