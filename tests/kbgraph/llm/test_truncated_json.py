"""usable_json_object: what can be kept of a JSON object a model did not finish, and nothing more."""

from __future__ import annotations

import json

import pytest

from kbgraph.llm.truncated_json import usable_json_object


@pytest.mark.parametrize(("text", "kept"), [
    # Cut inside a string: the string and its key go, the rest is closed.
    ('{"problem": "a return", "goal": "the refu', {"problem": "a return"}),
    # Cut inside a list element: a half-written step is no step.
    ('{"steps": [{"action": "a", "text": "x"}, {"action": "b", "te', {"steps": [{"action": "a", "text": "x"}]}),
    # Cut after a key, after a comma, after a colon.
    ('{"a": 1, "b"', {"a": 1}),
    ('{"a": 1,', {"a": 1}),
    ('{"a": 1, "b":', {"a": 1}),
    # A number at the very end may be missing digits: dropped, never guessed.
    ('{"a": [1, 2', {"a": [1]}),
    ('{"n": 0.8', {}),
    # Nested objects that are values (not list elements) keep their complete members.
    ('{"args": {"order_id": "string", "item', {"args": {"order_id": "string"}}),
    # Escapes inside strings are read as JSON reads them.
    ('{"a": "say \\"hi\\"", "b": "\\u00e9t', {"a": 'say "hi"'}),
    ('{"a": [], "b": {}, "c": [true, false, null], "d": "e', {"a": [], "b": {}, "c": [True, False, None]}),
])
def test_an_object_cut_short_keeps_its_complete_values_and_is_closed(text: str, kept: dict[str, object]) -> None:
    usable = usable_json_object(text)
    assert usable is not None and json.loads(usable) == kept


def test_a_complete_object_is_taken_from_the_chat_around_it() -> None:
    text = 'Sure! Here is the JSON:\n{"pairs": [{"concept": "c", "insight": "i"}]}\nHope this helps {!}'
    assert usable_json_object(text) == '{"pairs": [{"concept": "c", "insight": "i"}]}'


def test_a_complete_object_comes_back_as_written() -> None:
    text = '{"a": {"b": [1, 2.5e3, "x"]}, "c": null}'
    assert usable_json_object(text) == text


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2, 3]", '"just a string"'])
def test_text_without_an_object_gives_nothing(text: str) -> None:
    assert usable_json_object(text) is None


def test_an_object_cut_right_after_its_brace_is_the_empty_object() -> None:
    assert usable_json_object('{"') == "{}"


def test_what_is_not_json_ends_the_usable_part() -> None:
    # A raw line break inside a string is not JSON (a model writing free text into a field).
    assert json.loads(usable_json_object('{"a": "ok", "b": "line\nbreak", "c": 1}') or "") == {"a": "ok"}
    assert json.loads(usable_json_object("{\"a\": 1, 'b': 2}") or "") == {"a": 1}
