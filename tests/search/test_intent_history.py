"""The intent channel's history of requests (kbgraph.search.student.intent_history): read once per
search version for a domain, with each query's own runs taken off in the client. What a query is
told must be exactly what counting only the runs it does not exclude gives."""

from __future__ import annotations

import random

from kbgraph.search.scoring import WordOperationCounts, ask_history_association, history_association
from kbgraph.search.student.intent_history import HistoryRow, IntentHistory, is_left_out

WORDS = ["cancel", "order", "return", "lamp", "refund", "address", "move", "flight", "seat", "bag", "kettle", "mug"]
OPERATIONS = ["cancel_pending_order", "return_delivered_order_items", "modify_pending_order_address",
              "update_reservation_flights", "book_reservation"]


def history(seed: int, runs: int = 60) -> list[HistoryRow]:
    rnd = random.Random(seed)
    rows: list[HistoryRow] = []
    for n in range(runs):
        sources = tuple(f"t-{rnd.randrange(runs // 2)}" for _ in range(rnd.randrange(0, 3)))
        words = tuple(rnd.sample(WORDS, rnd.randrange(1, 6)))
        operations = tuple(rnd.sample(OPERATIONS, rnd.randrange(0, 3)))
        rows.append((f"e-{n:03d}", sources, words, operations))
    return rows


def counted(rows: list[HistoryRow], excluded: set[str]) -> WordOperationCounts:
    """What ``search_intent_history`` with the exclusion in Cypher gave: the rows left, counted."""
    return WordOperationCounts.of((words, ops) for exp_id, sources, words, ops in rows
                                  if not is_left_out(exp_id, sources, excluded))


def test_a_query_is_told_what_the_runs_it_does_not_exclude_say_of_its_words() -> None:
    for seed in range(20):
        rows = history(seed)
        kept = IntentHistory(rows)
        rnd = random.Random(seed)
        for _ in range(5):
            excluded = {*rnd.sample([r[0] for r in rows], 3), *(f"t-{rnd.randrange(30)}" for _ in range(4))}
            words = rnd.sample(WORDS, 4)
            asks = [words[:2], words[2:]]
            reference, mine = counted(rows, excluded), kept.counts(words, excluded)
            assert mine.runs == reference.runs
            for operations in ([], *([o] for o in OPERATIONS), OPERATIONS[:2], OPERATIONS[1:4]):
                assert history_association(words, operations, mine) == history_association(words, operations, reference)
                assert ask_history_association(asks, operations, mine) == ask_history_association(asks, operations, reference)


def test_an_experience_is_left_out_when_it_is_excluded_or_all_its_runs_are() -> None:
    assert is_left_out("e-1", (), {"e-1"})
    assert is_left_out("e-1", ("t-1", "t-2"), {"t-1", "t-2"})
    assert not is_left_out("e-1", ("t-1", "t-2"), {"t-1"}), "a run of its own is left to learn from"
    assert not is_left_out("e-1", (), {"t-1"})


def test_without_exclusions_the_counts_are_every_run_s() -> None:
    rows = history(7)
    kept = IntentHistory(rows)
    reference = counted(rows, set())
    mine = kept.counts(WORDS)
    assert (mine.runs, dict(mine.by_word), dict(mine.by_operation), dict(mine.together)) == (
        reference.runs, dict(reference.by_word), dict(reference.by_operation), dict(reference.together))
    assert kept.left_out({"nothing"}) == [] and len(kept) == len(rows)
