"""Named queries (kbgraph.store.queries): one that begins by unwinding a list is not sent when the
list is empty, and every such query, run on Neo4j with its list empty, indeed changes nothing and
returns the answer declared for it — the skip is exact."""

from __future__ import annotations

import re
from typing import Any

import neo4j
import pytest

from kbgraph.store.gateway import run_named
from kbgraph.store.search_version import BUMP
from kbgraph.store.queries import EMPTY_LIST_ANSWERS, empty_list_answer, nothing_to_unwind, query, query_names, unwound_list

from tests.conftest import Neo4jTarget

UNWOUND = [name for name in query_names() if unwound_list(name) is not None]


def test_the_list_a_query_begins_by_unwinding_is_named_and_other_queries_have_none() -> None:
    assert unwound_list("relation_upsert") == "rows"
    assert unwound_list("abstract_experiences_dissolve_ids") == "ids"
    assert unwound_list("search_hits_get") is None, "it unwinds $ids after reading the namespace's version"
    assert len(UNWOUND) > 20


def test_only_an_empty_list_of_that_name_is_nothing_to_unwind() -> None:
    assert nothing_to_unwind("relation_upsert", {"kb": "x", "rows": []})
    assert not nothing_to_unwind("relation_upsert", {"kb": "x", "rows": [{"source_id": "a"}]})
    assert not nothing_to_unwind("relation_upsert", {"kb": "x"}), "a missing list is Neo4j's error to give"
    assert not nothing_to_unwind("relation_upsert", {"kb": "x", "rows": None})
    assert not nothing_to_unwind("search_hits_get", {"kb": "x", "ids": []})


def test_the_declared_answers_are_of_such_queries_and_given_anew_each_time() -> None:
    assert set(EMPTY_LIST_ANSWERS) <= set(UNWOUND)
    answer = empty_list_answer("step_upsert")
    assert answer == [{"written": 0, "missing": []}]
    answer[0]["missing"].append("changed by a caller")
    assert empty_list_answer("step_upsert") == [{"written": 0, "missing": []}]
    assert empty_list_answer("experience_relations_present") == [], "a grouped count of nothing is no row"


class RecordingTransaction:
    """A real transaction that notes the statements sent through it."""

    def __init__(self, tx: neo4j.Transaction) -> None:
        self.tx, self.sent = tx, []  # type: list[str]

    def run(self, text: str, params: Any = None) -> neo4j.Result:
        self.sent.append(text)
        return self.tx.run(text, params)


def test_a_query_with_nothing_to_unwind_is_not_sent_but_the_version_bump_before_it_is(
    driver: neo4j.Driver, neo4j_target: Neo4jTarget, namespace: str,
) -> None:
    with driver.session(database=neo4j_target.database) as session, session.begin_transaction() as tx:
        recording = RecordingTransaction(tx)
        empty = {"kb": namespace, "rows": []}
        assert run_named(recording, "relation_upsert", empty) == [{"written": 0}]  # type: ignore[arg-type]
        # The search version is bumped where it was (a transaction locks in the same order), once.
        assert recording.sent == [query(BUMP)]
        run_named(recording, "relation_upsert", {"kb": namespace, "rows": [  # type: ignore[arg-type]
            {"source_id": "a", "target_id": "b", "type": "COMPOSITION", "props": {}}]})
        assert recording.sent == [query(BUMP), query("relation_upsert")]
        tx.rollback()


@pytest.mark.parametrize("name", UNWOUND)
def test_every_query_that_begins_by_unwinding_returns_nothing_and_changes_nothing_for_an_empty_list(
    driver: neo4j.Driver, neo4j_target: Neo4jTarget, name: str,
) -> None:
    unwound = unwound_list(name)
    params: dict[str, Any] = dict.fromkeys(re.findall(r"\$(\w+)", query(name)))
    params[str(unwound)] = []
    with driver.session(database=neo4j_target.database) as session, session.begin_transaction() as tx:
        result = tx.run(query(name), params)
        rows = list(result)
        counters = result.consume().counters
        tx.rollback()
    assert not counters.contains_updates, counters
    assert [dict(row) for row in rows] == empty_list_answer(name), (
        f"{name} answers {rows} for an empty ${unwound}: declare it in EMPTY_LIST_ANSWERS")
