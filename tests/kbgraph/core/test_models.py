"""The experience tuple and its validation: bad input is rejected naming the field."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from kbgraph.core.models import MAX_PROBLEM_CHARS, ConceptDocument, Experience, Relation, RelationType, Step


def minimal(**overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "problem": "Customer wants to return a delivered item",
        "goal": "Item returned and refund issued",
        "domain": "retail",
        "steps": [{"action": "get_order_details", "text": "look up {order_id}"},
                  {"action": "return_items", "text": "return {item_id} to {payment_method}"}],
    }
    data.update(overrides)
    return data


def error_fields(exc: ValidationError) -> set[str]:
    return {".".join(str(p) for p in e["loc"]) for e in exc.errors()}


def test_steps_take_their_order_from_the_list_when_none_is_given() -> None:
    exp = Experience.model_validate(minimal())
    assert [s.order for s in exp.steps] == [0, 1]


def test_explicit_step_orders_are_sorted() -> None:
    steps = [{"action": "b", "order": 5}, {"action": "a", "order": 2}]
    exp = Experience.model_validate(minimal(steps=steps))
    assert [s.action for s in exp.steps] == ["a", "b"]


def test_duplicate_step_orders_are_rejected() -> None:
    with pytest.raises(ValidationError, match="same order"):
        Experience.model_validate(minimal(steps=[{"action": "a", "order": 1}, {"action": "b", "order": 1}]))


def test_the_id_is_a_stable_hash_of_the_content() -> None:
    a = Experience.model_validate(minimal())
    b = Experience.model_validate(minimal(quality=0.9, retrieved=7))  # learning state is not content
    assert a.id == b.id and a.id is not None and a.id.startswith("exp_")
    assert Experience.model_validate(minimal(goal="something else")).id != a.id
    assert Experience.model_validate(minimal(problem="  Customer wants to return a delivered   item ")).id == a.id


def test_a_missing_problem_is_named() -> None:
    data = minimal()
    del data["problem"]
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(data)
    assert "problem" in error_fields(caught.value)


def test_a_blank_problem_is_rejected() -> None:
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(minimal(problem="   "))
    assert "problem" in error_fields(caught.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("quality", "0.5"), ("retrieved", "3"), ("steps", "step one"), ("domain", 7), ("success_rate", 1.5),
     ("status", "deleted"), ("kind", "concrete-ish"), ("retrieved", -1)],
)
def test_wrong_types_and_ranges_are_named(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(minimal(**{field: value}))
    assert any(f.startswith(field) for f in error_fields(caught.value))


def test_unknown_fields_are_rejected_to_catch_typos() -> None:
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(minimal(probelm="typo"))
    assert "probelm" in error_fields(caught.value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinite_embedding_values_are_rejected(bad: float) -> None:
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(minimal(pg_embedding=[0.1, bad, 0.3]))
    assert any(f.startswith("pg_embedding") for f in error_fields(caught.value))


def test_nan_in_a_step_embedding_names_the_step() -> None:
    steps = [{"action": "a", "embedding": [0.1, math.nan]}]
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(minimal(steps=steps))
    assert any(f.startswith("steps.0.embedding") for f in error_fields(caught.value))


def test_oversized_text_is_rejected() -> None:
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(minimal(problem="x" * (MAX_PROBLEM_CHARS + 1)))
    assert "problem" in error_fields(caught.value)


def test_succeeded_cannot_exceed_used() -> None:
    with pytest.raises(ValidationError, match="succeeded"):
        Experience.model_validate(minimal(used=1, succeeded=2))


def test_relation_types_come_from_the_allow_list_only() -> None:
    assert Relation.model_validate({"type": "alternative", "target_id": "exp_1"}).type is RelationType.ALTERNATIVE
    with pytest.raises(ValidationError, match="must be one of"):
        Relation.model_validate({"type": "DELETE_ALL", "target_id": "exp_1"})
    with pytest.raises(ValidationError):
        Relation.model_validate({"type": "ALTERNATIVE", "target_id": "x`]->() DETACH DELETE n //"})


def test_timestamps_are_timezone_aware() -> None:
    exp = Experience.model_validate(minimal(created_at="2026-01-02T03:04:05"))
    assert exp.created_at.tzinfo is not None


def test_texts_behind_the_embeddings() -> None:
    exp = Experience.model_validate(minimal())
    assert exp.structure_text() == "get_order_details -> return_items"
    assert "return a delivered item" in exp.pg_text()
    assert Experience(problem="p").structure_text() == "(no steps)"


def test_a_call_that_failed_for_the_moment_is_no_part_of_the_way_the_run_went() -> None:
    # A "503 Service Unavailable" retried changed nothing and says nothing about the task: runs that
    # did the same things share actions and shape however often a service was down on the way.
    retried = Experience.model_validate(minimal(steps=[
        {"action": "get_order_details", "text": "look up {order_id}"},
        {"action": "return_items", "text": "return {item_id} — failed: 503 Service Unavailable",
         "issue_type": "transient", "signature": "return_items: 503 service unavailable"},
        {"action": "return_items", "text": "return {item_id} to {payment_method}"}]))
    clean = Experience.model_validate(minimal())
    assert retried.actions() == clean.actions() == ["get_order_details", "return_items"]
    assert retried.structure_text() == clean.structure_text()
    assert [s.failed_for_the_moment for s in retried.steps] == [False, True, False]
    assert len(retried.steps) == 3  # the failed step stays, for the teacher


def test_a_call_refused_for_what_it_asked_stays_in_the_way_the_run_went() -> None:
    # A wrong payment method, then another one: trying the first is part of how the task went.
    refused = Experience.model_validate(minimal(steps=[
        {"action": "return_items", "text": "return {item_id} — failed: payment method not found",
         "issue_type": "not_found", "signature": "return_items: payment method not found"},
        {"action": "return_items", "text": "return {item_id} to {payment_method}"}]))
    assert refused.actions() == ["return_items", "return_items"]


def test_a_concept_document_renders_its_sections_in_order() -> None:
    doc = ConceptDocument(when_to_use=["a return is asked"], how=["look up the order", "return items"])
    assert doc.render() == "## When to use\n- a return is asked\n\n## How\n- look up the order\n- return items"


def test_steps_are_models_with_defaults() -> None:
    step = Step(action="click")
    assert step.text == "" and step.args_schema == {} and step.embedding is None


# --- real agent steps: untidy forms are accepted and represented ------------------------------------


def test_arguments_given_as_a_json_string_are_decoded_and_a_malformed_one_is_kept_raw() -> None:
    from kbgraph.core.models import RAW_ARGUMENTS, TrajectoryStep

    assert TrajectoryStep(action="a", arguments='{"reservation_id": "ABC123"}').arguments == {"reservation_id": "ABC123"}
    assert TrajectoryStep(action="a", arguments="").arguments == {}
    assert TrajectoryStep(action="a", arguments="{'reservation_id': ABC").arguments == {
        RAW_ARGUMENTS: "{'reservation_id': ABC"}
    assert TrajectoryStep(action="a", arguments='["not", "an", "object"]').arguments == {
        RAW_ARGUMENTS: '["not", "an", "object"]'}


def test_blank_thoughts_and_results_are_absent_and_json_results_are_kept_as_text() -> None:
    from kbgraph.core.models import TrajectoryStep

    step = TrajectoryStep(action="a", thought="  ", observation={"flights": [{"number": "HAT1"}]}, error="")
    assert step.thought is None and step.error is None
    assert step.observation == '{"flights": [{"number": "HAT1"}]}'
    assert TrajectoryStep(action="a").observation is None  # a call with no result


def test_a_result_of_kilobytes_is_accepted() -> None:
    from kbgraph.core.models import TrajectoryStep

    assert len(TrajectoryStep(action="search", observation="x" * 200_000).observation or "") == 200_000
    with pytest.raises(ValidationError, match="observation"):
        TrajectoryStep(action="search", observation="x" * 2_000_000)


def nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize(("overrides", "message"), [
    ({"retrieved": 10**20}, "retrieved: 100000000000000000000 is outside the 64-bit integer range"),
    ({"used": 2**63}, "used: 9223372036854775808 is outside the 64-bit integer range"),
    ({"steps": [{"action": "a", "order": -(2**63) - 1}]}, "steps.0.order: -9223372036854775809 is outside"),
    ({"steps": [{"action": "a", "args_schema": nested(5_000)}]}, "steps.0.args_schema.a.a.a.a.a…: nested deeper than 64"),
    ({"problem": "cancel \udcff"}, "problem: contains a lone surrogate"),
    ({"goal": "{not a template}\ud800"}, "goal: contains a lone surrogate"),
])
def test_values_beyond_what_neo4j_stores_are_refused_by_field_before_pydantic_recurses(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        Experience.model_validate(minimal(**overrides))
    (error,) = caught.value.errors()
    assert error["msg"].startswith(message) and "Value error" not in error["msg"]


@pytest.mark.parametrize("field", ["retrieved", "used", "succeeded"])
def test_counters_are_never_negative_and_leave_room_to_grow(field: str) -> None:
    # At INT64_MAX every feedback on the experience failed ("long overflow"): refused at add.
    from kbgraph.core.value_bounds import MAX_COUNT

    with pytest.raises(ValidationError, match=field):
        Experience.model_validate(minimal(**{field: -1}))
    for too_large in (MAX_COUNT + 1, 2**63 - 1):
        with pytest.raises(ValidationError, match=f"(?s){field}.*less than or equal to {MAX_COUNT}"):
            Experience.model_validate(minimal(**{field: too_large}))
    counters = {"retrieved": MAX_COUNT, "used": MAX_COUNT, "succeeded": MAX_COUNT}
    assert Experience.model_validate(minimal(**counters)).retrieved == MAX_COUNT


@pytest.mark.parametrize(("arguments", "message"), [
    ('{"a": ' * 5_000 + "1" + "}" * 5_000, "the JSON text is nested deeper than 64 levels"),
    ('{"a": ' * 70 + "1" + "}" * 70, "in the JSON text: a.a.a.a.a.a.a.a…: nested deeper than 64 levels"),
    ('{"name": "\\udcff"}', "in the JSON text: name: contains a lone surrogate"),
    ('{"count": 100000000000000000000}', "in the JSON text: count: 100000000000000000000 is outside"),
])
def test_arguments_given_as_json_text_keep_the_same_bounds_once_decoded(arguments: str, message: str) -> None:
    # The record's bounds were checked on the text; what it decodes to is checked here, or a deep
    # text raised RecursionError and a "\udcff" escape reached the driver as an encoding error.
    from kbgraph.core.models import TrajectoryStep

    with pytest.raises(ValidationError) as caught:
        TrajectoryStep(action="a", arguments=arguments)
    (error,) = caught.value.errors()
    assert error["loc"] == ("arguments",) and error["msg"].startswith(message)
    assert TrajectoryStep(action="a", arguments='{"name": "\\\\udcff"}').arguments == {"name": "\\udcff"}
