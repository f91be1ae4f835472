"""The pure rules of the LangGraph store: namespace paths, ids, filters, namespace listing."""

from __future__ import annotations

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.integrations.store_values import (
    check_filter,
    check_ttl,
    encode_path,
    item_id,
    list_namespaces,
    matches_filter,
    namespace_matches,
    value_text,
)


def test_a_namespace_prefix_is_exactly_a_string_prefix_of_its_path() -> None:
    assert encode_path(("a", "b")) == "a/b/"
    assert encode_path(("a", "b")).startswith(encode_path(("a",)))
    assert not encode_path(("ab",)).startswith(encode_path(("a",)))
    assert not encode_path(("a/b",)).startswith(encode_path(("a",)))
    assert encode_path(()) == ""


def test_item_ids_differ_whenever_namespace_or_key_differ() -> None:
    ids = {item_id(ns, key) for ns, key in [(("a",), "b/c"), (("a", "b"), "c"), (("a/b",), "c"), (("a",), "b%2Fc")]}
    assert len(ids) == 4


def test_filters_match_equality_nested_maps_lists_and_comparisons() -> None:
    value = {"tag": "work", "n": 5, "nested": {"level": 1, "x": 2}, "list": [1, "x"]}
    assert matches_filter(value, None) and matches_filter(value, {})
    assert matches_filter(value, {"tag": "work", "nested": {"level": 1}, "list": [1, "x"]})
    assert not matches_filter(value, {"list": [1]})
    assert matches_filter(value, {"n": {"$gt": 4, "$lte": 5, "$ne": 4}})
    assert not matches_filter(value, {"n": {"$lt": 5}})
    assert not matches_filter(value, {"missing": {"$gt": 0}})  # nothing to compare is no match
    assert matches_filter(value, {"missing": None})


def test_an_unknown_operator_is_refused_before_any_item_is_read() -> None:
    with pytest.raises(InvalidInputError, match=r"filter\.a\.\$in: unknown operator"):
        check_filter({"a": {"$in": [1, 2]}})
    check_filter({"a": {"$gte": 1}, "b": [{"c": 1}]})


def test_values_and_ttls_that_cannot_be_stored_are_named() -> None:
    with pytest.raises(InvalidInputError, match="ns/k: value"):
        value_text({"a": object()}, "ns/k")
    with pytest.raises(InvalidInputError, match="ttl"):
        check_ttl(0, "ns/k")
    with pytest.raises(InvalidInputError, match="ttl"):
        check_ttl(float("nan"), "ns/k")
    assert check_ttl(None, "ns/k") is None and check_ttl(2, "ns/k") == 2.0


def test_namespace_conditions_take_wildcards_and_depth_pages_after_dedup() -> None:
    assert namespace_matches(("a", "b", "c"), "prefix", ("a", "*"))
    assert namespace_matches(("a", "b", "c"), "suffix", ("*", "c"))
    assert not namespace_matches(("a",), "prefix", ("a", "b"))
    namespaces = [("a", "b", "c"), ("a", "b"), ("a", "d"), ("e",)]
    assert list_namespaces(namespaces, [("prefix", ("a",))], max_depth=2, limit=10, offset=0) == [("a", "b"), ("a", "d")]
    assert list_namespaces(namespaces, [], max_depth=1, limit=1, offset=1) == [("e",)]
