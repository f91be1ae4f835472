"""What the intent channel works out once from the rows of ``search_workflow_operations``
(kbgraph.search.student.workflow_operations), and how a search context keeps it by the rows' content."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kbgraph.search.scoring import NO_CHANGE
from kbgraph.search.student.bounded import BoundedMap
from kbgraph.search.student.context import KeptByContent
from kbgraph.search.student.text_vectors import IntentVectors
from kbgraph.search.student.workflow_operations import SEPARATOR, WorkflowOperations, in_domain


class CountingEmbedder:
    """A deterministic stand-in for a model: one vector per text, and the texts it was asked for."""

    name = "counting"
    dimension = 8

    def __init__(self) -> None:
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked += texts
        return np.stack([np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dimension) for t in texts])


def _row(exp_id: str, domain: str, *operations: str) -> tuple[object, ...]:
    """A row as search_workflow_operations returns it: the operations joined, each followed by the
    separator, and listed only where a name holds it."""
    listed = tuple(operations) if any(SEPARATOR in op for op in operations) else None
    return (exp_id, domain, "".join(op + SEPARATOR for op in operations), listed)


ROWS = [
    _row("e1", "retail", "cancel_pending_order"),
    _row("e2", "retail", "cancel_pending_order", "return_delivered_order_items"),
    _row("e3", "retail", "cancel_pending_order"),
    _row("e4", "airline", "book_reservation"),
    _row("e5", "retail"),
]


def _table(rows: list[tuple[object, ...]], embedder: CountingEmbedder | None = None) -> WorkflowOperations:
    return WorkflowOperations(WorkflowOperations.rows_of(rows), IntentVectors(embedder or CountingEmbedder()))


def test_each_sequence_of_operations_comes_once_with_the_experiences_that_stand_for_it() -> None:
    table = _table(ROWS)
    assert table.members == {
        ("retail", ("cancel_pending_order",)): ["e1", "e3"],
        ("retail", ("cancel_pending_order", "return_delivered_order_items")): ["e2"],
        ("airline", ("book_reservation",)): ["e4"],
        ("retail", ()): ["e5"],  # a workflow of look-ups alone
    }
    assert table.table.sequences == [(ops, domain) for domain, ops in table.members]


def test_a_name_that_holds_the_separator_is_read_from_its_list() -> None:
    odd = f"send{SEPARATOR}gift"
    assert _table([_row("e1", "retail", odd, "cancel_pending_order")]).members == {
        ("retail", (odd, "cancel_pending_order")): ["e1"]}


def test_equal_scores_are_broken_in_domain_then_operations_order() -> None:
    table = _table(ROWS)
    assert [table.keys[i] for i in np.argsort(table.tie_order)] == sorted(table.keys)


def test_an_ask_may_mean_the_operations_of_the_query_s_domain_or_of_every_domain_when_it_has_none() -> None:
    table = _table(ROWS)
    assert table.known_operations("retail") == [("cancel_pending_order", "retail"),
                                                ("return_delivered_order_items", "retail")]
    everything = [("cancel_pending_order", "retail"), ("return_delivered_order_items", "retail"),
                  ("book_reservation", "airline")]
    assert table.known_operations("banking") == everything
    assert table.known_operations(None) == everything


def test_the_vectors_of_a_table_are_the_words_of_each_sequence_and_of_each_operation_read_once() -> None:
    embedder = CountingEmbedder()
    table = _table(ROWS, embedder)
    texts = table.table.texts()
    operations, columns = table.table.operations()
    assert texts.shape == (4, CountingEmbedder.dimension)
    assert np.allclose(np.linalg.norm(texts, axis=1), 1.0)
    assert in_domain("cancel pending order, then return delivered order items", "retail") in embedder.asked
    assert in_domain("book reservation", "airline") in embedder.asked
    assert columns == [[0], [0, 1], [2], []]
    assert operations.shape == (3, CountingEmbedder.dimension)
    asked = len(embedder.asked)
    assert table.table.texts() is texts and table.table.operations()[0] is operations
    assert len(embedder.asked) == asked  # kept with the table


def test_a_table_gives_the_vectors_of_its_own_texts_without_embedding_them_again_whatever_the_process_dropped() -> None:
    # A namespace with more distinct texts than the process keeps: the candidates of the channel
    # are scored from the rows the table ranked with, not embedded again search after search.
    embedder = CountingEmbedder()
    vectors = IntentVectors(embedder, BoundedMap(1))
    table = WorkflowOperations(WorkflowOperations.rows_of(ROWS), vectors).table
    whole = in_domain("cancel pending order, then return delivered order items", "retail")
    words = in_domain("book reservation", "airline")
    texts, (operations, _) = table.texts(), table.operations()  # the channel ranked with them
    asked = len(embedder.asked)
    got = table.vectors_of([whole, words, whole])
    assert np.array_equal(got, np.stack([texts[1], operations[2], texts[1]]))
    assert len(embedder.asked) == asked  # nothing embedded again, though the process kept one vector
    assert np.array_equal(got, IntentVectors(CountingEmbedder()).of([whole, words, whole]))
    # A text the table does not hold comes from the process's vectors.
    assert np.array_equal(table.vectors_of(["something else"]), IntentVectors(CountingEmbedder()).of(["something else"]))
    assert embedder.asked[-1] == "something else"


def test_the_same_rows_give_back_the_same_table_and_changed_rows_a_new_one() -> None:
    kept: KeptByContent[tuple[tuple[object, ...], ...], WorkflowOperations] = KeptByContent(2)
    made: list[WorkflowOperations] = []

    def get(rows: list[tuple[object, ...]]) -> WorkflowOperations:
        def make() -> WorkflowOperations:
            made.append(_table(rows))
            return made[-1]

        return kept.get(tuple(rows), make)

    first = get(ROWS)
    assert get([tuple(row) for row in ROWS]) is first  # read again: equal rows, the same table
    archived = get(ROWS[1:])  # a write changed the rows
    assert archived is not first and len(made) == 2
    get(ROWS[2:])
    assert len(kept) == 2  # the oldest is dropped
    assert get(ROWS) is not first


def test_the_memory_holds_a_domain_when_some_workflow_of_it_has_operations_read() -> None:
    table = _table(ROWS)
    assert table.holds("retail") and table.holds("airline")
    assert not table.holds("banking")  # a request of banking is matched across domains
    assert table.holds(None)  # a request without a domain: any workflow is its own
    assert not _table([]).holds(None)


def test_a_value_per_operation_averages_over_each_sequence_s_distinct_operations() -> None:
    table = _table([*ROWS, _row("e6", "retail", "transfer_to_human_agents", "cancel_pending_order")]).table
    _, columns = table.operations()
    values = np.arange(len(table.column_operations()), dtype=np.float64) + 1.0
    expected = [float(values[made].mean()) if made else 0.0 for made in columns]
    assert table.sequence_means(values) == pytest.approx(expected)
    handoff_columns, hands_off = table.handoffs()
    assert list(hands_off) == [any(op == "transfer_to_human_agents" for op in ops) for ops in table.distinct]
    assert [table.column_operations()[i] for i in np.flatnonzero(handoff_columns)] == ["transfer_to_human_agents"]


def test_each_set_of_distinct_operations_is_listed_once_with_the_set_of_every_sequence() -> None:
    rows = [*ROWS, _row("e6", "airline", "book_reservation", "book_reservation"), _row("e7", "banking", "book_reservation")]
    table = _table(rows)
    sets, of_sequence = table.table.distinct_sets()
    assert sets == [("cancel_pending_order",), ("cancel_pending_order", "return_delivered_order_items"),
                    ("book_reservation",), ()]
    assert [sets[i] for i in of_sequence] == table.table.distinct
    assert table.table.distinct_sets()[1] is of_sequence  # kept with the table


def test_the_sequences_of_a_domain_are_marked_once_per_domain() -> None:
    table = _table(ROWS)
    mask = table.of_domain("retail")
    assert mask.tolist() == [d == "retail" for d, _ in table.keys]
    assert table.of_domain("retail") is mask
    assert not table.of_domain("banking").any()


def test_the_sets_laid_end_to_end_name_each_operation_once_and_a_set_of_none_no_change() -> None:
    table = _table(ROWS)
    names, flat, owner, starts = table.table.set_columns()
    sets, _ = table.table.distinct_sets()
    assert names == ["cancel_pending_order", "return_delivered_order_items", "book_reservation", NO_CHANGE]
    assert [[names[i] for i in flat[owner == s]] for s in range(len(sets))] == [
        ["cancel_pending_order"], ["cancel_pending_order", "return_delivered_order_items"], ["book_reservation"],
        [NO_CHANGE]]
    assert starts.tolist() == [0, 1, 3, 4]
