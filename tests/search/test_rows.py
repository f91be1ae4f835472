"""The rows searches read become typed records once, where they come back from the store
(``search/student/rows.py``, ``search/teacher/_rows.py``). Each record's fields are exactly the keys
its Cypher returns, read here from the query's text, so a key added, renamed or dropped on either
side fails here instead of as a missing attribute in the middle of a search."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any

import pytest

from kbgraph.core.models import RelationType
from kbgraph.search.steps import StoredStepRow
from kbgraph.search.student.rows import CandidateFacts, ChannelHit, Neighbour, PastFailure, WorkflowEdge
from kbgraph.search.teacher._rows import FailureGroupRow, FailureRow, GroupBest, SignatureRow, StepRow
from kbgraph.store.queries import query

_OPEN, _CLOSE = "([{", ")]}"


def _code(text: str) -> str:
    """``text`` with its ``//`` comments blanked out (not those inside string literals)."""
    out, quote, i = [], "", 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                out.append(text[i : i + 2])
                i += 2
                continue
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _outside_strings(text: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth before it) of each character of ``text`` outside string
    literals."""
    depth, quote, escaped = 0, "", False
    for i, char in enumerate(text):
        if quote:
            escaped, quote = (not escaped and char == "\\"), ("" if char == quote and not escaped else quote)
            continue
        if char in "'\"`":
            quote = char
            continue
        yield i, char, depth
        depth += (char in _OPEN) - (char in _CLOSE)


def _top_level(text: str) -> list[str]:
    """``text`` split at each comma outside brackets and string literals."""
    cuts = [i for i, char, depth in _outside_strings(text) if depth == 0 and char == ","]
    parts = [text[a + 1 : b] for a, b in zip([-1, *cuts], [*cuts, len(text)])]
    return [part.strip() for part in parts if part.strip()]


def _closing(text: str, start: int) -> int:
    """The index of the bracket that closes the one at ``text[start]``."""
    for i, char, depth in _outside_strings(text[start:]):
        if depth == 1 and char in _CLOSE:
            return start + i
    raise AssertionError(f"unbalanced brackets from {text[start : start + 40]!r}")


def map_literal(text: str, start: int) -> dict[str, str]:
    """The keys of the map literal that opens at ``text[start]`` (``{``), each with its value's text."""
    assert text[start] == "{", text[start : start + 40]
    entries = _top_level(text[start + 1 : _closing(text, start)])
    return {key.strip().strip("`"): value.strip() for key, value in (e.split(":", 1) for e in entries)}


def collected_map(name: str) -> dict[str, str]:
    """The map a query collects last (``collect({...}) AS rows``): one row of its ``rows``."""
    text = _code(query(name))
    return map_literal(text, text.rindex("collect({") + len("collect("))


def returned_columns(name: str) -> dict[str, str]:
    """The columns of a query's last RETURN, each with its expression's text."""
    text = _code(query(name))
    columns: dict[str, str] = {}
    for item in _top_level(text[text.rindex("RETURN ") + len("RETURN ") :]):
        expression, _, alias = item.rpartition(" AS ")
        columns[alias or item] = expression or item
    return columns


def projected_map(name: str) -> dict[str, str]:
    """The keys of the map projection a query collects last (``collect(p {.id, .score}) AS rows``)."""
    text = _code(query(name))
    start = text.rindex("collect(p {") + len("collect(p {")
    return {key.strip().lstrip("."): "" for key in text[start : text.index("}", start)].split(",")}


def _channel_keys(name: str) -> dict[str, str]:
    text = _code(query(name))
    if "collect(p {" in text:
        return projected_map(name)
    if "collect({" in text:
        return collected_map(name)
    line = text[text.rindex("RETURN ") + len("RETURN ") :].split("\n")[0]  # RETURN id, score\nORDER BY …
    return {column.strip(): column.strip() for column in line.split(",")}


def _workflow_edge() -> dict[str, str]:
    workflow = collected_map("search_candidates_score")["workflow"]
    return map_literal(workflow, workflow.index("RETURN {") + len("RETURN "))


def _group_best() -> dict[str, str]:
    members = returned_columns("refine_failure_groups")["members"]
    return map_literal(members, members.index("{"))


#: Each record, the query it reads, and where in that query's text its keys are.
RECORDS: list[tuple[type[Any], str, Callable[[], dict[str, str]]]] = [
    (CandidateFacts, CandidateFacts.QUERY, lambda: collected_map(CandidateFacts.QUERY)),
    (WorkflowEdge, CandidateFacts.QUERY, _workflow_edge),
    (Neighbour, Neighbour.QUERY, lambda: collected_map(Neighbour.QUERY)),
    (PastFailure, PastFailure.QUERY, lambda: returned_columns(PastFailure.QUERY)),
    *((StepRow, name, lambda name=name: collected_map(name)) for name in StepRow.QUERIES),
    *((FailureRow, name, lambda name=name: collected_map(name)) for name in FailureRow.QUERIES),
    (FailureGroupRow, "refine_failure_groups", lambda: returned_columns("refine_failure_groups")),
    (GroupBest, "refine_failure_groups", _group_best),
    (SignatureRow, "refine_failure_signatures", lambda: returned_columns("refine_failure_signatures")),
    *((ChannelHit, name, lambda name=name: _channel_keys(name)) for name in ChannelHit.QUERIES),
    *((StoredStepRow, name, lambda name=name: collected_map(name)) for name in StoredStepRow.QUERIES),
]


@pytest.mark.parametrize(("record", "name", "keys"), RECORDS, ids=[f"{r.__name__}-{n}" for r, n, _ in RECORDS])
def test_each_record_has_exactly_the_keys_its_query_returns(
    record: type[Any], name: str, keys: Callable[[], dict[str, str]],
) -> None:
    read = [f.name for f in fields(record) if not f.metadata.get("derived")]
    returned = list(keys())
    assert sorted(read) == sorted(returned), (
        f"{record.__name__} reads {sorted(set(read) - set(returned))} that {name}.cypher does not return, and "
        f"{name}.cypher returns {sorted(set(returned) - set(read))} that {record.__name__} does not read")


def test_the_parser_reads_nested_maps_lists_and_strings_as_one_value_each() -> None:
    text = "collect({a: {x: 1, y: [2, 3]}, b: 'a, b: {c}', c: f(d, e)}) AS rows"
    assert map_literal(text, text.index("{")) == {"a": "{x: 1, y: [2, 3]}", "b": "'a, b: {c}'", "c": "f(d, e)"}
    assert _code("RETURN 1 // a comment, with: {brackets}\n, '//kept'") == "RETURN 1 \n, '//kept'"


def _facts_row(**changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": "e1", "kind": "concrete", "domain": "airline", "scope": "shared", "task_key": "t1",
        "operations": ["cancel_reservation"], "text": "cancel\n\nairline", "success_rate": 1, "quality": 0.5,
        "support": 2, "runs": 3, "remaining": 2, "runs_left": 3,
        "workflow": {"id": "a1", "weight": 1, "reason": ""}, "semantic": None, "structural": None,
        "has_steps": True, "utility": 0.4, "outcomes": [[0.9, 1]],
    }
    return row | changes


def test_the_facts_take_the_scores_the_vector_channels_returned_where_the_query_left_them_out() -> None:
    facts = CandidateFacts.from_record(_facts_row(), semantic=0.8, structural=0.7)
    assert (facts.semantic, facts.structural) == (0.8, 0.7)
    own = CandidateFacts.from_record(_facts_row(semantic=0.6, structural=0.5), semantic=0.8, structural=0.7)
    assert (own.semantic, own.structural) == (0.6, 0.5), "a score the query computed is kept"


def test_an_experience_without_steps_has_no_structural_score_whatever_the_channels_said() -> None:
    facts = CandidateFacts.from_record(_facts_row(has_steps=False), structural=0.7)
    assert facts.structural is None


def test_the_facts_are_read_as_their_types() -> None:
    facts = CandidateFacts.from_record(_facts_row(), share=0.5, hands_off=True)
    assert facts.operations == ("cancel_reservation",) and facts.workflow == WorkflowEdge("a1", 1.0, "")
    assert isinstance(facts.success_rate, float) and facts.outcomes == ((0.9, 1.0),)
    assert (facts.share, facts.hands_off) == (0.5, True)
    assert CandidateFacts.from_record(_facts_row(workflow=None, operations=None)).workflow is None


@pytest.mark.parametrize("record", [CandidateFacts, Neighbour])
def test_every_field_is_read_from_the_key_of_its_name(record: type[CandidateFacts | Neighbour]) -> None:
    # from_record builds positionally, for speed: a row whose values all differ shows each lands
    # in its own field.
    names = [f.name for f in fields(record) if not f.metadata.get("derived")]
    typed = {"relation": ("ABSTRACTION", RelationType.ABSTRACTION), "operations": (["op"], ("op",)),
             "workflow": ({"id": "a", "weight": 0.5, "reason": "r"}, WorkflowEdge("a", 0.5, "r")),
             "outcomes": ([[0.25, 0.75]], ((0.25, 0.75),)), "text": ("t", "t"), "has_steps": (True, True),
             "outgoing": (True, True), "reason": ("r", "r")}
    row = {name: typed[name][0] if name in typed else i for i, name in enumerate(names)}
    parsed = record.from_record(row)
    assert {name: getattr(parsed, name) for name in names} == {
        name: typed[name][1] if name in typed else row[name] for name in names}


def test_a_neighbour_names_its_relation_as_the_data_model_does() -> None:
    row = {"seed": "s", "relation": "ADAPTATION", "outgoing": False, "weight": 1, "reason": "", "id": "n",
           "kind": "concrete", "domain": "retail", "success_rate": 1, "quality": 0.5, "semantic": 0.9,
           "support": 1, "runs": 1, "scope": "shared", "utility": 0.5}
    neighbour = Neighbour.from_record(row)
    assert neighbour.relation is RelationType.ADAPTATION and neighbour.weight == 1.0


def test_a_failure_mode_without_a_group_shows_itself_with_its_recovery_unknown() -> None:
    row = FailureRow.from_record({
        "experience_id": "e", "problem": None, "goal": "g", "domain": "d", "success_rate": None, "failure_id": "f",
        "description": "declined", "issue_type": None, "recovery": None, "step_order": 2, "score": 0.9,
        "signature": None, "signature_action": None, "signature_error": None, "run_id": "r"})
    shown = GroupBest.of_failure(row)
    assert (shown.problem, shown.recovery, shown.run_id, shown.score) == ("", "", "r", 0.9)
    assert not shown.worked and shown.recovery_kind is None and shown.concrete is None
