"""The audit catches each thing a document or a skill can say against its evidence — each check on a
document or skill built to contain the problem — and finds nothing in one built from the evidence."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kbgraph.audit import DocumentInput, Finding, audit_document, audit_skill
from kbgraph.core.models import StatementRecord
from kbgraph.core.recovery import ErrorSignature
from kbgraph.embedders import CachedEmbedder
from kbgraph.ingest.integrate import sentence_key
from kbgraph.ingest.integrate_evidence import Evidence, Statement, build_document, evidence_rows
from kbgraph.ingest.wording import sentence
from kbgraph.skills.plan import ConceptDoc, FailureRow, Member, group_workflows, plan_skills
from kbgraph.skills.render import RenderInput, render_skill
from kbgraph.skills.shown import SkillShows, pitfall_groups, skill_shows


def insight(text: str, runs: list[str], succeeded: list[str], worked: list[str] | None = None,
            domain: str = "airline", record: StatementRecord | None = None) -> dict[str, Any]:
    """An insight as the query insight_evidence reads it."""
    return {"text": text, "record": record.model_dump_json() if record else None,
            "runs": runs, "tasks": [f"task-{r}" for r in runs], "succeeded": succeeded,
            "worked": worked or [], "origins": [{"domain": domain, "runs": runs, "task": f"task-{r}"} for r in runs]}


def old_document(name: str, sections: dict[str, list[str]], rendered: str, rows: list[dict[str, Any]]) -> DocumentInput:
    """A document as kbgraph wrote it before statements kept their evidence: sentences only."""
    statements = [Statement(section, "", text, Evidence(), (sentence_key(text),))  # type: ignore[arg-type]
                  for section, texts in sections.items() for text in texts]
    return DocumentInput(name, statements, rendered, rows)


def runs(*ids: str) -> frozenset[str]:
    return frozenset(ids)


def checks(findings: list[Finding]) -> list[str]:
    return sorted(f.check for f in findings)


RULE = ("Rule the agent applied: According to the policy, business class reservations can always be cancelled, and "
        "economy class reservations can be cancelled if travel insurance is purchased.")
CALL = "To cancel reservation, call cancel_reservation with reservation_id."


def test_a_how_backed_only_by_failed_runs_is_found_with_its_evidence() -> None:
    rows = [insight(RULE, ["f1"], []), insight(CALL, ["s1", "s2"], ["s1", "s2"])]
    document = old_document("cancel reservation", {"how": [CALL, RULE]},
                            f"## How\n- {CALL} (2 runs, 2 tasks)\n- {RULE} (1 run, 1 task, 0 succeeded)", rows)
    [finding] = audit_document(document, embed=None)
    assert (finding.check, finding.statement, finding.where) == ("how-from-failed-runs", RULE,
                                                                "document “cancel reservation”")
    assert finding.evidence.startswith("1 runs, 1 tasks, 0 succeeded")


PAYMENT_ERROR = "payment amount does not add up, total price is # but paid #"


def retried(*changed: str) -> StatementRecord:
    return StatementRecord(kind="recovery", operation="book reservation", error=PAYMENT_ERROR, recovery="retry",
                           changed=(changed,))


def test_the_counts_a_document_shows_are_the_runs_counts() -> None:
    # Issue 52: a document said "went through in 5 of 7" and "(7 runs," where its evidence was 1 run, 0 succeeded.
    record = retried("payment_methods[].amount")
    rows = [insight(sentence(record), ["f1"], [], record=record)]
    shown = Evidence(runs("f1", "f2", "f3", "f4", "f5", "f6", "f7"), runs("t1"), frozenset(),
                     runs("f1", "f2", "f3", "f4", "f5"))
    lying = Statement("pitfalls", "airline", sentence(record), shown, (sentence_key(sentence(record)),), record)
    document = DocumentInput("book reservation", [lying], "", rows)
    found = audit_document(document, embed=None)
    assert checks(found) == ["outcome-wording", "outcome-wording"]
    assert {f.detail for f in found} == {"the document counts the runs behind it (7); its runs give 1",
                                         "the document counts calls that went through (5); its runs give 0"}
    built = build_document([p for row in rows for p in evidence_rows(row)])
    assert audit_document(DocumentInput("book reservation", built.statements, built.render(), rows), None) == []
    assert "(1 run, 1 task; the retried call went through in 0 of 1; the run still failed)" in built.render()


def test_a_count_a_line_does_not_show_is_not_a_claim() -> None:
    rule = StatementRecord(kind="rule", operation="book reservation", text="Basic economy cannot be changed.")
    rows = [insight(sentence(rule), ["f1", "f2"], ["f2"], worked=["f1"], record=rule)]
    [statement] = build_document([p for row in rows for p in evidence_rows(row)]).statements
    # A rule's line shows no call that went through: one recounted differently claims nothing.
    moved = replace(statement, evidence=replace(statement.evidence, went_through=frozenset()))
    assert audit_document(DocumentInput("book reservation", [moved], "", rows), embed=None) == []
    assert checks(audit_document(DocumentInput("book reservation", [replace(moved, evidence=Evidence(
        runs("f1", "f2"), runs("task-f1", "task-f2"), runs("f1", "f2")))], "", rows), embed=None)) == ["outcome-wording"]


DUPLICATES = ["Rule the agent applied: It cannot be canceled for a refund unless the airline cancels the flight.",
              "Rule the agent applied: It cannot be cancelled without a valid reason like airline cancellation."]


def test_two_wordings_of_one_rule_are_duplicates(embedder: CachedEmbedder) -> None:
    rows = [insight(DUPLICATES[0], ["r1"], ["r1"]), insight(DUPLICATES[1], ["r2"], ["r2"])]
    document = old_document("cancel reservation", {"pitfalls": DUPLICATES},
                            "## Pitfalls\n" + "\n".join(f"- {d} (1 run, 1 task)" for d in DUPLICATES), rows)
    [finding] = audit_document(document, embed=embedder.embed)
    assert finding.check == "duplicate-rules" and DUPLICATES[0] in finding.statement and DUPLICATES[1] in finding.statement
    merged = build_document([p for row in rows for p in evidence_rows(row)], embed=embedder.embed)
    assert audit_document(DocumentInput("cancel reservation", merged.statements, merged.render(), rows),
                          embed=embedder.embed) == []


def test_one_failure_with_one_kind_of_recovery_said_twice_is_a_near_duplicate(embedder: CachedEmbedder) -> None:
    records = [retried("payment_methods[].amount"), retried("payment_methods[].amount", "payment_methods[].payment_id")]
    rows = [insight(sentence(r), [f"r{n}"], [], record=r) for n, r in enumerate(records)]
    parts = [p for row in rows for p in evidence_rows(row)]
    apart = [Statement("pitfalls", "airline", p.text, p.evidence, (sentence_key(p.text),), p.record) for p in parts]
    document = DocumentInput("book reservation", apart, "", rows)
    assert checks(audit_document(document, embed=None)) == ["near-duplicate-statements"]
    # The embeddings say it too, but the pair is named once.
    assert checks(audit_document(document, embed=embedder.embed)) == ["near-duplicate-statements"]
    merged = build_document([p for row in rows for p in evidence_rows(row)], embed=embedder.embed)
    assert audit_document(DocumentInput("book reservation", merged.statements, merged.render(), rows),
                          embed=embedder.embed) == []


def test_one_domains_steps_in_another_domains_document_are_found() -> None:
    steps = {"Before send confirmation, get reservation details.": "airline",
             "Before send confirmation, get order details.": "retail",
             "Before send confirmation, check return eligibility.": "retail",
             "Before send confirmation, get balance.": "banking"}
    rows = [insight(text, [f"{domain}-{n}"], [f"{domain}-{n}"], domain=domain)
            for n, (text, domain) in enumerate(steps.items())]
    document = old_document("send confirmation", {"how": list(steps)},
                            "## How\n" + "\n".join(f"- {s} (1 run, 1 task)" for s in steps), rows)
    found = audit_document(document, embed=None)
    assert checks(found) == ["cross-domain-how", "cross-domain-how"]
    assert {f.statement for f in found} == {"Before send confirmation, get reservation details.",
                                            "Before send confirmation, get balance."}
    scoped = build_document([p for row in rows for p in evidence_rows(row)])
    assert audit_document(DocumentInput("send confirmation", scoped.statements, scoped.render(), rows), None) == []
    flattened = scoped.render().replace("## In ", "## Also ")
    assert set(checks(audit_document(DocumentInput("send confirmation", scoped.statements, flattened, rows), None))) \
        == {"cross-domain-how"}


# -- skills -----------------------------------------------------------------------------------------


def member(id: str, problem: str, actions: tuple[str, ...], ops: tuple[str, ...], metas: tuple[str, ...] = ()) -> Member:
    return Member(id=id, problem=problem, domain="airline", actions=actions, operations=ops, task_key=id,
                  source_ids=(f"{id}-r",), failed_source_ids=frozenset(), meta_ids=metas)


def failure(experience: str, action: str, error: str) -> FailureRow:
    return FailureRow(experience_id=experience, id=f"fm-{experience}", description=error, action=action,
                      signed=ErrorSignature(action, error), recovery="retried it", recovery_kind="retry", recovered=True,
                      concrete=True, run_id=f"{experience}-r", run_succeeded=True, step_order=2)


def cancel_skill() -> tuple[Any, dict[str, str], SkillShows]:
    """A concept skill whose runs also updated flights and hit an error there: the skill, its
    files and what it shows (what the audit reads)."""
    actions = ("get_reservation_details", "update_reservation_flights", "cancel_reservation")
    members = [member("a", "You want to cancel your reservation.", actions, actions[1:], ("m",)),
               member("b", "Cancel my flight, please.", actions, actions[1:], ("m",))]
    rule = "Rule the agent applied: Basic economy cannot be cancelled after 24 hours."
    doc = build_document([p for row in [insight(rule, ["a-r"], ["a-r"])] for p in evidence_rows(row)])
    concept = ConceptDoc("m", "cancel reservation", 1, doc.statements)
    [skill] = plan_skills([concept], group_workflows(members), min_runs=1).skills
    given = RenderInput("ns", {}, {"a": [failure("a", "update_reservation_flights", "payment method not found"),
                                         failure("a", "cancel_reservation", "reservation is basic economy")]})
    return skill, render_skill(skill, given), skill_shows(skill, given.failures)


def test_a_skill_built_from_the_evidence_has_no_findings() -> None:
    skill, files, shows = cancel_skill()
    assert "`cancel_reservation` fails with" in files["SKILL.md"]
    assert "update_reservation_flights` fails" not in files["SKILL.md"], "another action's error is not its pitfall"
    assert [g.action for g in shows.pitfalls] == ["cancel_reservation"], "what it shows is what it lists"
    assert audit_skill(skill, shows, []) == []


def pitfall(statement: str, record: StatementRecord | None) -> Statement:
    """A statement of the skill's document under Pitfalls (one run, which succeeded)."""
    return Statement("pitfalls", "airline", statement, Evidence(runs("a-r"), runs("task-a-r"), runs("a-r")),
                     (sentence_key(statement),), record)


def test_a_pitfall_about_another_action_is_found() -> None:
    skill, _, shows = cancel_skill()
    [other] = pitfall_groups([failure("a", "update_reservation_flights", "payment method not found")])
    [finding] = audit_skill(skill, replace(shows, pitfalls=(*shows.pitfalls, other)), [])
    assert finding.check == "pitfall-about-another-action" and "update_reservation_flights" in finding.detail
    assert finding.statement.startswith("**`update_reservation_flights` fails with “payment method not found”**")
    rule = "The flights cannot be changed to another cabin."
    said = pitfall(f"Rule the agent applied: {rule}", StatementRecord(kind="rule", operation="update reservation flights",
                                                                      text=rule))
    [finding] = audit_skill(skill, replace(shows, warnings=(said,)), [])
    assert finding.check == "pitfall-about-another-action" and "update" in finding.detail


def test_a_pitfall_is_about_the_operation_its_record_names_not_the_words_of_its_error() -> None:
    # The error's words name a cancellation; the record says it is an error of changing flights.
    skill, _, shows = cancel_skill()
    record = StatementRecord(kind="recovery", operation="update reservation flights",
                             error="reservation cannot be cancelled", recovery="repeat")
    said = pitfall(sentence(record), record)
    [finding] = audit_skill(skill, replace(shows, warnings=(said,)), [])
    assert finding.check == "pitfall-about-another-action"
    assert finding.detail == "a pitfall of update reservation flights, which is not one of its own actions"
    assert finding.statement.startswith("When update reservation flights fails with “reservation cannot be cancelled”")
    # The same error of the skill's own operation is its pitfall.
    own = record.model_copy(update={"operation": "cancel reservation"})
    assert audit_skill(skill, replace(shows, warnings=(pitfall(sentence(own), own),)), []) == []


def test_a_pitfall_whose_counts_are_not_its_failure_modes_is_found() -> None:
    skill, _, shows = cancel_skill()
    [group] = shows.pitfalls
    assert (group.times, group.runs, group.got_past, group.run_succeeded) == (1, 1, 1, 1)
    overstated = replace(group, times=4, runs=4, got_past=4, run_succeeded=4)
    [finding] = audit_skill(skill, replace(shows, pitfalls=(overstated,)), [])
    assert finding.check == "outcome-wording" and "seen 4 times in 4 runs" in finding.statement
    assert finding.evidence.startswith("1 failure modes in 1 runs")
    stranger = replace(group.best, id="fm-elsewhere")
    [finding] = audit_skill(skill, replace(shows, pitfalls=(replace(group, best=stranger),)), [])
    assert finding.check == "outcome-wording" and "not one of its failure modes" in finding.detail


def test_a_when_to_use_its_examples_contradict_is_found() -> None:
    members = [member("a", "You want to cancel your flights. You insist to cancel and have the refund.",
                      ("get_reservation_details",), ())]
    [skill] = plan_skills([], group_workflows(members), min_runs=1).skills
    shows = skill_shows(skill, {})
    assert not shows.information_only, "its when to use follows the tasks where it worked"
    assert audit_skill(skill, shows, []) == []
    [finding] = audit_skill(skill, replace(shows, information_only=True), [])
    assert finding.check == "when-to-use-contradicted" and "cancel" in finding.evidence
    assert finding.statement == "“You want to cancel your flights. You insist to cancel and have the refund.”"
    skill, _, shows = cancel_skill()
    assert shows.needs == "cancel reservation" and shows.example is not None
    booking = replace(shows.example, problem="You want to book a flight.")
    [finding] = audit_skill(skill, replace(shows, example=booking), [])
    assert finding.check == "when-to-use-contradicted"
    assert finding.statement == "Use when a task needs to cancel reservation, e.g. “You want to book a flight.”"


def test_a_documents_finding_follows_its_statement_into_the_skill() -> None:
    skill, _, shows = cancel_skill()
    statement = "Rule the agent applied: Basic economy cannot be cancelled after 24 hours."
    finding = Finding(check="how-from-failed-runs", where="document “cancel reservation”", statement=statement,
                      evidence="1 runs", detail="…", about=(statement,))
    [again] = audit_skill(skill, shows, [finding])
    assert again.where == f"skill {skill.name}" and again.statement == statement
    # Two statements that say the same follow only when the skill shows both.
    pair = finding.model_copy(update={"statement": f"{statement} ≈ Another rule.", "about": (statement, "Another rule.")})
    assert audit_skill(skill, shows, [pair]) == []
    # What a finding is about is not part of the report.
    assert "about" not in again.model_dump()
