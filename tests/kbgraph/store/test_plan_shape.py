"""The id lists a search sends come in the one shape Neo4j plans for lists of two or more
(kbgraph.store.plan_shape): padded with an id no experience or run has, which changes no result.
Real Neo4j, real MiniLM for the searches."""

from __future__ import annotations

from typing import Any

import pytest

from kbgraph.kb import KnowledgeBase
from kbgraph.store.plan_shape import NO_ID, at_least_two, id_list

from tests.search.test_vector_model import experience, kept_current

#: The statements a search sends with id lists, and those lists.
ID_LISTS = {
    "search_hits_get": ("ids",),
    "search_hits_get_since": ("ids", "known", "kept"),
    "search_candidates_score": ("ids", "exclude", "semantic_known", "structural_known"),
    "search_candidates_feedback": ("ids", "semantic_ids", "structural_ids"),
}


def test_a_list_of_fewer_than_two_is_padded_with_the_filler_and_a_longer_one_kept_as_it_is() -> None:
    assert id_list([]) == [NO_ID, NO_ID]
    assert id_list(["a"]) == ["a", NO_ID]
    assert id_list(iter(["a", "b", "c"])) == ["a", "b", "c"]
    assert at_least_two([["x", 0, []]], ["", -1, []]) == [["x", 0, []], ["", -1, []]]


def record_params(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, sent: list[tuple[str, dict[str, Any]]]) -> None:
    read = kb.gateway.read

    def recording_read(name: str, **params: Any) -> list[dict[str, Any]]:
        sent.append((name, params))
        return read(name, **params)

    monkeypatch.setattr(kb.gateway, "read", recording_read)


@pytest.mark.parametrize("exact_scan_max", [0, 1000], ids=["index path", "exact scan"])
def test_every_id_list_a_search_sends_has_two_elements_or_more_and_the_filler_changes_no_result(
    kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch, exact_scan_max: int,
) -> None:
    kb.add_experiences([experience(n) for n in range(12)])
    if exact_scan_max == 0:
        kept_current(kb)
    weights = {"exact_scan_max": exact_scan_max}
    five = kb.search("I want to return the lamp and get my money back", k=5, weights=weights)
    sent: list[tuple[str, dict[str, Any]]] = []
    record_params(kb, monkeypatch, sent)
    kb.student.context.kept_hits.held = 0  # nothing kept: every hit read
    one = kb.search("I want to return the lamp and get my money back", k=1, weights=weights)
    left_out = five.hits[0]
    without = kb.search("I want to return the lamp and get my money back", k=5, weights=weights,
                        exclude=[left_out.id])
    assert one.hits and one.hits[0].id == five.hits[0].id
    assert left_out.id not in [h.id for h in without.hits] and len(without.hits) == 5
    assert [h.id for h in without.hits[:4]] == [h.id for h in five.hits[1:]], "the filler excludes nothing else"
    lists = [(name, key, params[key]) for name, params in sent for key in ID_LISTS.get(name, ()) if key in params]
    assert lists, "the searches read their hits"
    assert all(len(value) >= 2 for _, _, value in lists), [(n, k, v) for n, k, v in lists if len(v) < 2]
    assert any(NO_ID in value for _, _, value in lists), "a list of one id was padded"
