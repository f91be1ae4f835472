"""Documents built from evidence: every statement where its evidence puts it, rules merged, one part
per domain (ingest/integrate_evidence.py). Insights are records (what they say), worded by
ingest/wording.py."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbgraph.core.models import StatementRecord
from kbgraph.embedders import CachedEmbedder
from kbgraph.ingest.integrate_evidence import (
    DUPLICATE_RULE_SIMILARITY,
    Evidence,
    EvidencedDocument,
    InsightEvidence,
    build_document,
    evidence_rows,
)
from kbgraph.ingest.wording import sentence


def runs(*ids: str) -> frozenset[str]:
    return frozenset(ids)


def seen(record: StatementRecord, n: int, succeeded: int = 0, went_through: int = 0, *, domain: str = "airline",
         tasks: int = 1, prefix: str = "r") -> InsightEvidence:
    ids = [f"{prefix}{i}" for i in range(n)]
    return InsightEvidence(record, domain, Evidence(runs(*ids), runs(*(f"t{i}" for i in range(tasks))),
                                                    runs(*ids[:succeeded]), runs(*ids[:went_through])))


def rule(text: str, operation: str = "cancel reservation") -> StatementRecord:
    return StatementRecord(kind="rule", operation=operation, text=text)


def before(operation: str, lookup: str) -> StatementRecord:
    return StatementRecord(kind="before", operation=operation, action=lookup)


def call(operation: str, action: str, *arguments: str) -> StatementRecord:
    return StatementRecord(kind="how", operation=operation, action=action, arguments=arguments)


def retried(operation: str, error: str, *changed: str) -> StatementRecord:
    return StatementRecord(kind="recovery", operation=operation, error=error, recovery="retry",
                           changed=(changed,) if changed else ())


RULE_FAILED = rule("Business class reservations can always be cancelled.")
RECOVERY = retried("update reservation flights", "gift card balance is not enough", "payment_id")


def test_a_rule_seen_only_in_failed_runs_is_a_pitfall_said_as_such() -> None:
    document = build_document([seen(RULE_FAILED, 1)])
    [statement] = document.statements
    assert statement.section == "pitfalls"
    assert statement.line == ("Rule the agent applied: Business class reservations can always be cancelled. "
                              "(seen only in failed runs: 1 run, 1 task)")


def test_a_rule_stands_where_its_own_words_put_it_and_a_condition_it_opens_with_does_not_make_it_when_to_use() -> None:
    # The rule as the agent stated it is read, never its sentence; the sentence opens with the words
    # every rule's does, so a rule is never placed by a condition it opens with.
    placed = {text: build_document([seen(rule(text), 2, succeeded=2)]).statements[0].section for text in (
        "Never cancel a basic economy reservation without insurance.",
        "Cancellations are refunded to the original payment method because the policy says so.",
        "If the flight has departed, the reservation is kept.",
        "Reservations of fewer than five passengers are refunded in full.")}
    assert list(placed.values()) == ["pitfalls", "why", "how", "how"]
    lesson = StatementRecord(kind="lesson", text="If the flight has departed, keep the reservation.")
    assert build_document([seen(lesson, 2, succeeded=2)]).statements[0].section == "when_to_use"


def test_statements_are_compared_by_what_they_say_a_rule_without_the_words_every_rule_opens_with() -> None:
    document = build_document([seen(RULE_FAILED, 1), seen(RECOVERY, 2, went_through=1)])
    assert sorted(s.meaning for s in document.statements) == sorted([RULE_FAILED.text, sentence(RECOVERY)])
    reworded = document.statements[0].__class__("pitfalls", "airline", "Business class can be cancelled.",
                                                 Evidence(), (), RULE_FAILED)
    assert reworded.meaning == "Business class can be cancelled."


def test_how_stands_only_on_runs_that_succeeded_and_says_how_many() -> None:
    cancel = call("cancel reservation", "cancel_reservation", "reservation_id")
    document = build_document([seen(cancel, 7, succeeded=7, tasks=3),
                               seen(before("cancel reservation", "get_user_details"), 4, succeeded=1, tasks=2)])
    assert [(s.section, s.line) for s in document.statements] == [
        ("how", "Before cancel reservation, get user details. (4 runs, 2 tasks, 1 succeeded)"),
        ("how", "To cancel reservation, call cancel_reservation with reservation_id. (7 runs, 3 tasks, all succeeded)"),
    ]
    assert build_document([seen(cancel, 2)]).statements[0].section == "pitfalls"


def test_a_fix_says_what_was_done_and_its_evidence_says_how_it_went() -> None:
    [statement] = build_document([seen(RECOVERY, 4, succeeded=0, went_through=4, tasks=2)]).statements
    assert statement.section == "pitfalls"
    assert statement.line == ("When update reservation flights fails with “gift card balance is not enough”, the agent "
                              "retried it with changed payment_id. (4 runs, 2 tasks; the retried call went through in 4 "
                              "of 4; the run still failed in all 4)")
    assert statement.record == RECOVERY, "it keeps what it says as data"
    [one] = build_document([seen(RECOVERY, 1, succeeded=1, went_through=0)]).statements
    assert one.line.endswith("(1 run, 1 task; the retried call went through in 0 of 1; the run then succeeded)")


PAYMENT_ERROR = "payment amount does not add up, total price is # but paid #"
PAYMENT = f"When book reservation fails with “{PAYMENT_ERROR}”"


def test_one_failure_with_one_kind_of_recovery_is_one_statement_with_the_runs_summed_and_the_arguments_as_detail() -> None:
    # The pitfall written three times, each with its own runs: one statement.
    document = build_document([
        seen(retried("book reservation", PAYMENT_ERROR, "payment_methods[].amount"), 3, went_through=2, prefix="a"),
        seen(retried("book reservation", PAYMENT_ERROR, "payment_methods[]", "payment_methods[].amount"), 1,
             went_through=1, prefix="b"),
        seen(retried("book reservation", PAYMENT_ERROR, "payment_methods[].amount", "payment_methods[].payment_id"), 1,
             went_through=1, prefix="c"),
        seen(StatementRecord(kind="recovery", operation="book reservation", error=PAYMENT_ERROR, recovery="repeat"), 1,
             prefix="d"),
    ])
    retry, repeated = document.statements
    assert retry.line == (
        f"{PAYMENT}, the agent retried it with changed arguments (payment_methods[].amount; payment_methods[], "
        "payment_methods[].amount; payment_methods[].amount, payment_methods[].payment_id). (5 runs, 1 task; the "
        "retried call went through in 4 of 5; the run still failed in all 5)")
    assert len(retry.sources) == 3 and retry.record is not None and retry.record.merged
    assert repeated.text == f"{PAYMENT}, the agent repeated it unchanged.", "another kind of recovery stays apart"


def unit(rows: Sequence[Sequence[float]]) -> npt.NDArray[np.floating]:
    vectors = np.asarray(rows, dtype=np.float64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_near_identical_rules_are_one_statement_with_the_best_supported_wording_and_summed_evidence() -> None:
    a, b, c = (rule("Basic economy cannot be cancelled after 24 hours."),
               rule("A basic economy ticket booked over a day ago cannot be canceled."),
               rule("Certificates cannot pay for a change."))
    vectors = {a.text: [1.0, 0.0], b.text: [0.9, 0.3], c.text: [0.0, 1.0]}
    document = build_document([seen(a, 1, prefix="x"), seen(b, 3, succeeded=1, prefix="y"), seen(c, 1, prefix="z")],
                              embed=lambda texts: unit([vectors[t] for t in texts]))
    merged = next(s for s in document.statements if s.record == b)
    assert merged.evidence.runs == runs("x0", "y0", "y1", "y2") and len(merged.evidence.succeeded) == 1
    assert sorted(merged.sources) == sorted(["rule the agent applied: basic economy cannot be cancelled after 24 hours",
                                             "rule the agent applied: a basic economy ticket booked over a day ago "
                                             "cannot be canceled"])
    assert [s.record for s in document.statements] == [b, c], "the rule stated once stays apart"


def test_templated_statements_are_never_merged_however_alike_they_read() -> None:
    records = [before("cancel reservation", "get_user_details"), before("cancel reservation", "get_reservation_details")]
    document = build_document([seen(r, 1, succeeded=1) for r in records], embed=lambda t: unit([[1.0, 0.0]] * len(t)))
    assert sorted(s.text for s in document.statements) == sorted(sentence(r) for r in records)


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
    document = build_document([seen(rule(r), 1, prefix=f"p{n}-") for n, r in enumerate(REAL_RULES)],
                              embed=embedder.embed)
    assert len(document.statements) == 4 and sum(len(s.sources) for s in document.statements) == 6


def test_a_document_spanning_domains_has_one_part_per_domain() -> None:
    send = call("send confirmation", "send_confirmation", "message")
    document = build_document([
        seen(send, 3, succeeded=3, domain="retail", prefix="a"),
        seen(send, 1, succeeded=1, domain="banking", prefix="b"),
        seen(before("send confirmation", "get_balance"), 1, succeeded=1, domain="banking", prefix="b"),
    ])
    text = document.render()
    balance = "Before send confirmation, get balance."
    assert document.domains == ["banking", "retail"]
    assert text.index("## In banking (1 run)") < text.index(balance) < text.index("## In retail (3 runs)")
    assert "### How" in text and text.count(balance) == 1
    assert EvidencedDocument.from_json(document.statements_json()) == document


def test_an_insight_of_two_domains_splits_its_evidence_by_the_domain_of_each_run() -> None:
    row = {"text": "Before send confirmation, get user details.",
           "record": before("send confirmation", "get_user_details").model_dump_json(),
           "runs": ["a1", "a2", "b1"], "tasks": ["ta", "tb"],
           "succeeded": ["a1", "b1"], "worked": [],
           "origins": [{"domain": "airline", "runs": ["a1", "a2"], "task": "ta"},
                       {"domain": "banking", "runs": ["b1"], "task": "tb"}]}
    parts = {p.domain: p.evidence for p in evidence_rows(row)}
    assert parts["airline"] == Evidence(runs("a1", "a2"), runs("ta"), runs("a1"))
    assert parts["banking"] == Evidence(runs("b1"), runs("tb"), runs("b1"))
    assert {p.record.kind for p in evidence_rows(row)} == {"before"}
    assert {p.record for p in evidence_rows({**row, "record": None})} == {StatementRecord(kind="lesson", text=row["text"])}, \
        "an insight stored without a record is a lesson"


def test_a_rewording_keeps_where_each_statement_stands_and_what_backs_it() -> None:
    insights = [seen(RULE_FAILED, 1), seen(call("book", "book", "id"), 2, succeeded=2), seen(RECOVERY, 2, went_through=1)]
    original = build_document(insights)
    reworded = build_document(insights, reword=lambda statements: [
        s.__class__(s.section, s.domain, s.text.upper(), s.evidence, s.sources) for s in statements])
    assert [(s.section, s.evidence, s.sources, s.record, s.backing) for s in reworded.statements] == [
        (s.section, s.evidence, s.sources, s.record, s.backing) for s in original.statements]
    assert all(s.text.isupper() for s in reworded.statements)
    assert "the retried call went through in 1 of 2" in reworded.render(), "a reworded recovery keeps its evidence"
    assert EvidencedDocument.from_json(reworded.statements_json()) == reworded
