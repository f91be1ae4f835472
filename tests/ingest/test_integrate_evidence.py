"""Documents built from evidence: every statement where its evidence puts it, rules merged, one part
per domain (ingest/integrate_evidence.py)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbgraph.embedders import CachedEmbedder
from kbgraph.ingest.integrate_evidence import (
    DUPLICATE_RULE_SIMILARITY,
    Evidence,
    EvidencedDocument,
    InsightEvidence,
    build_document,
    evidence_rows,
    rule_core,
)


def runs(*ids: str) -> frozenset[str]:
    return frozenset(ids)


def seen(text: str, n: int, succeeded: int = 0, went_through: int = 0, *, domain: str = "airline",
         tasks: int = 1, prefix: str = "r") -> InsightEvidence:
    ids = [f"{prefix}{i}" for i in range(n)]
    return InsightEvidence(text, domain, Evidence(runs(*ids), runs(*(f"t{i}" for i in range(tasks))),
                                                  runs(*ids[:succeeded]), runs(*ids[:went_through])))


RULE_FAILED = "Rule the agent applied: Business class reservations can always be cancelled."
RECOVERY = ("When update reservation flights fails with “gift card balance is not enough”, the agent retried it "
            "with changed payment_id.")


def test_a_rule_seen_only_in_failed_runs_is_a_pitfall_said_as_such() -> None:
    document = build_document([seen(RULE_FAILED, 1)])
    [statement] = document.statements
    assert statement.section == "pitfalls"
    assert statement.line == f"{RULE_FAILED} (seen only in failed runs: 1 run, 1 task)"


def test_how_stands_only_on_runs_that_succeeded_and_says_how_many() -> None:
    call = "To cancel reservation, call cancel_reservation with reservation_id."
    document = build_document([seen(call, 7, succeeded=7, tasks=3), seen("Before cancel reservation, get user details.", 4,
                                                                          succeeded=1, tasks=2)])
    assert [(s.section, s.line) for s in document.statements] == [
        ("how", "Before cancel reservation, get user details. (4 runs, 2 tasks, 1 succeeded)"),
        ("how", f"{call[:-1]}. (7 runs, 3 tasks, all succeeded)"),
    ]
    assert build_document([seen(call, 2)]).statements[0].section == "pitfalls"


def test_a_fix_says_what_was_done_and_its_evidence_says_how_it_went() -> None:
    [statement] = build_document([seen(RECOVERY, 4, succeeded=0, went_through=4, tasks=2)]).statements
    assert statement.section == "pitfalls"
    assert statement.line == (f"{RECOVERY} (4 runs, 2 tasks; the retried call went through in 4 of 4; "
                              "the run still failed in all 4)")
    [one] = build_document([seen(RECOVERY, 1, succeeded=1, went_through=0)]).statements
    assert one.line.endswith("(1 run, 1 task; the retried call went through in 0 of 1; the run then succeeded)")


PAYMENT = "When book reservation fails with “payment amount does not add up, total price is # but paid #”"


def test_one_failure_with_one_kind_of_recovery_is_one_statement_with_the_runs_summed_and_the_arguments_as_detail() -> None:
    # The pitfall written three times, each with its own runs: one statement.
    document = build_document([
        seen(f"{PAYMENT}, the agent retried it with changed payment_methods[].amount.", 3, went_through=2, prefix="a"),
        seen(f"{PAYMENT}, the agent retried it with changed payment_methods[], payment_methods[].amount.", 1,
             went_through=1, prefix="b"),
        seen(f"{PAYMENT}, the agent retried it with changed payment_methods[].amount, payment_methods[].payment_id.", 1,
             went_through=1, prefix="c"),
        seen(f"{PAYMENT}, the agent repeated it unchanged.", 1, prefix="d"),
    ])
    retried, repeated = document.statements
    assert retried.line == (
        f"{PAYMENT}, the agent retried it with changed arguments (payment_methods[].amount; payment_methods[], "
        "payment_methods[].amount; payment_methods[].amount, payment_methods[].payment_id). (5 runs, 1 task; the "
        "retried call went through in 4 of 5; the run still failed in all 5)")
    assert len(retried.sources) == 3
    assert repeated.text == f"{PAYMENT}, the agent repeated it unchanged.", "another kind of recovery stays apart"


def unit(rows: Sequence[Sequence[float]]) -> npt.NDArray[np.floating]:
    vectors = np.asarray(rows, dtype=np.float64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_near_identical_rules_are_one_statement_with_the_best_supported_wording_and_summed_evidence() -> None:
    a, b, c = ("Rule the agent applied: Basic economy cannot be cancelled after 24 hours.",
               "Rule the agent applied: A basic economy ticket booked over a day ago cannot be canceled.",
               "Rule the agent applied: Certificates cannot pay for a change.")
    vectors = {rule_core(a): [1.0, 0.0], rule_core(b): [0.9, 0.3], rule_core(c): [0.0, 1.0]}
    document = build_document([seen(a, 1, prefix="x"), seen(b, 3, succeeded=1, prefix="y"), seen(c, 1, prefix="z")],
                              embed=lambda texts: unit([vectors[t] for t in texts]))
    merged = next(s for s in document.statements if s.text == b)
    assert merged.evidence.runs == runs("x0", "y0", "y1", "y2") and len(merged.evidence.succeeded) == 1
    assert sorted(merged.sources) == sorted(["rule the agent applied: basic economy cannot be cancelled after 24 hours",
                                             "rule the agent applied: a basic economy ticket booked over a day ago "
                                             "cannot be canceled"])
    assert [s.text for s in document.statements] == [b, c], "the rule stated once stays apart"


def test_templated_statements_are_never_merged_however_alike_they_read() -> None:
    texts = ["Before cancel reservation, get user details.", "Before cancel reservation, get reservation details."]
    document = build_document([seen(t, 1, succeeded=1) for t in texts], embed=lambda t: unit([[1.0, 0.0]] * len(t)))
    assert sorted(s.text for s in document.statements) == sorted(texts)


#: Rules the real airline runs give "cancel reservation" (the rule-based reflector's words), and
#: which of them state one policy — what DUPLICATE_RULE_SIMILARITY was measured on.
REAL_RULES = [
    "According to the policy, business class reservations can always be cancelled, and economy class reservations "
    "can be cancelled if travel insurance is purchased.",
    "Basic economy reservations cannot be cancelled unless within 24 hours of booking, which is not the case here.",
    "It cannot be canceled for a refund unless the airline cancels the flight.",
    "It cannot be cancelled without a valid reason like airline cancellation.",
    "The reservation {id} is a basic economy ticket and was created more than 24 hours ago without travel insurance, "
    "so it cannot be canceled for a refund.",
    "The reservation {id} is a basic economy ticket and was created more than 24 hours ago without travel insurance, "
    "so it cannot be canceled for a change of plan.",
]
SAME_POLICY = {(2, 3), (4, 5)}


def test_the_threshold_merges_the_real_paraphrases_and_nothing_else(embedder: CachedEmbedder) -> None:
    vectors = embedder.embed(REAL_RULES)
    for i, j in itertools.combinations(range(len(REAL_RULES)), 2):
        similarity = float(vectors[i] @ vectors[j])
        assert (similarity >= DUPLICATE_RULE_SIMILARITY) == ((i, j) in SAME_POLICY), (i, j, similarity)
    document = build_document([seen(f"Rule the agent applied: {r}", 1, prefix=f"p{n}-") for n, r in enumerate(REAL_RULES)],
                              embed=embedder.embed)
    assert len(document.statements) == 4 and sum(len(s.sources) for s in document.statements) == 6


def test_a_document_spanning_domains_has_one_part_per_domain() -> None:
    before = "Before send confirmation, get balance."
    document = build_document([
        seen("To send confirmation, call send_confirmation with message.", 3, succeeded=3, domain="retail", prefix="a"),
        seen("To send confirmation, call send_confirmation with message.", 1, succeeded=1, domain="banking", prefix="b"),
        seen(before, 1, succeeded=1, domain="banking", prefix="b"),
    ])
    text = document.render()
    assert document.domains == ["banking", "retail"]
    assert text.index("## In banking (1 run)") < text.index(before) < text.index("## In retail (3 runs)")
    assert "### How" in text and text.count(before) == 1
    assert EvidencedDocument.from_json(document.statements_json()) == document


def test_an_insight_of_two_domains_splits_its_evidence_by_the_domain_of_each_run() -> None:
    row = {"text": "Before send confirmation, get user details.", "runs": ["a1", "a2", "b1"], "tasks": ["ta", "tb"],
           "succeeded": ["a1", "b1"], "worked": [],
           "origins": [{"domain": "airline", "runs": ["a1", "a2"], "task": "ta"},
                       {"domain": "banking", "runs": ["b1"], "task": "tb"}]}
    parts = {p.domain: p.evidence for p in evidence_rows(row)}
    assert parts["airline"] == Evidence(runs("a1", "a2"), runs("ta"), runs("a1"))
    assert parts["banking"] == Evidence(runs("b1"), runs("tb"), runs("b1"))


def test_a_rewording_keeps_where_each_statement_stands_and_what_backs_it() -> None:
    original = build_document([seen(RULE_FAILED, 1), seen("To book, call book with id.", 2, succeeded=2)])
    reworded = build_document([seen(RULE_FAILED, 1), seen("To book, call book with id.", 2, succeeded=2)],
                              reword=lambda statements: [s.__class__(s.section, s.domain, s.text.upper(), s.evidence,
                                                                     s.sources) for s in statements])
    assert [(s.section, s.evidence, s.sources) for s in reworded.statements] == [
        (s.section, s.evidence, s.sources) for s in original.statements]
    assert all(s.text.isupper() for s in reworded.statements)
