"""Placeholders are written once, by kbgraph.core.generalise, and read back by nobody (issue 54):
an error a lesson quotes gets ``#`` where generalisation finds a value, a recovery asks
generalisation whether a value identifies, and search leaves out what the same module writes."""

from __future__ import annotations

import pytest

from kbgraph.core.generalise import PLACEHOLDER, generalise_text, placeholder_for
from kbgraph.core.recovery._values import Run, identifying
from kbgraph.ingest.reflect import masked_error
from kbgraph.search.lexical import query_terms


def test_generalisation_writes_each_placeholder_as_it_is_told() -> None:
    text = "Order #W6067464 of mia.li@example.com (Mia Li), call 555-123-4567 or see https://shop.example.com"
    assert generalise_text(text, names={"Mia Li"}) == (
        "Order {id} of {email} ({name}), call {number} or see {url}")
    assert generalise_text(text, names={"Mia Li"}, placeholder=lambda kind: f"<{kind}>") == (
        "Order <id> of <email> (<name>), call <number> or see <url>")


def test_an_error_a_lesson_quotes_has_its_values_as_hashes_and_no_error_prefix() -> None:
    error = "Error: order #W6067464 of HXDUBJ for Mia Li: total price is $1,204.50 but paid 3 times."
    assert masked_error(error, names=frozenset({"Mia Li"}), ids=frozenset({"HXDUBJ"})) == (
        "order # of # for #: total price is # but paid # times")


def test_an_error_that_names_a_placeholder_itself_keeps_it() -> None:
    # Only what generalisation replaces is masked: a tool's own braces are its words.
    assert masked_error("template {id} is missing") == "template {id} is missing"


@pytest.mark.parametrize(("key", "value", "identifies"), [
    ("reservation", "HAT136", True),  # a record code
    ("note", "mia@example.com", True),
    ("cabin", "economy", False),
    ("cabin", "{economy}", False),  # braces of its own are not a placeholder generalisation wrote
])
def test_a_recovery_masks_a_value_when_generalisation_replaces_something_in_it(key: str, value: str,
                                                                                identifies: bool) -> None:
    assert identifying(key, value, Run()) is identifies


@pytest.mark.parametrize(("name", "value"), [
    ("order_id", "#W6067464"), ("email", "a@b.example.com"), ("url", "https://x.example.com"), ("gift", True),
    ("amount", 12.5), ("item_ids", ["1", "2"]),
])
def test_search_leaves_out_every_placeholder_a_stored_text_gets(name: str, value: object) -> None:
    written = placeholder_for(name, value)
    assert PLACEHOLDER.search(written), written
    assert query_terms(f"cancel {written} now") == ["cancel"]
