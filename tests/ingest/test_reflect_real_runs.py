"""Reflection over the real agent runs (real Neo4j, real MiniLM): one meta-concept per operation,
documents of what the runs showed — fixes of errors, preconditions, the agent's rules — each
with the runs and tasks behind it, and nothing generic."""

from __future__ import annotations

import re

import pytest

from kbgraph.kb import KnowledgeBase

#: The operations the runs teach something about. (Update reservation baggages is not one: the one
#: lesson filed under it was a rule about cancelling, stated before a run changed its bags; a rule
#: is filed under the operation it names, and that run never cancelled.)
OPERATIONS = {"book reservation", "cancel reservation", "update reservation flights", "transfer to human agents",
              "send certificate"}


@pytest.fixture
def documents(real_runs_read_only: KnowledgeBase) -> dict[str, str]:
    kb = real_runs_read_only
    rows = kb.gateway.read("meta_concepts_top", kb=kb.namespace, limit=50)
    with kb.driver.session(database=kb.gateway.database) as session:
        members = session.run(
            "MATCH (c:Concept {kb: $kb})-[:INSTANCE_OF]->(m:MetaConcept) RETURN m.name AS meta, collect(c.label) AS labels",
            kb=kb.namespace).data()
    for row in members:  # opposite or different operations never share a meta-concept
        assert len({label for label in row["labels"] if label in OPERATIONS}) <= 1, row
    return {row["name"]: row["document"] for row in rows}


def test_each_operation_has_its_own_document_about_it(documents: dict[str, str]) -> None:
    assert OPERATIONS <= set(documents)
    for name, document in documents.items():
        for line in document.splitlines():
            match = re.match(r"- (?:To|Before) (.+?),", line)
            if match:
                assert match.group(1) == name, f"{name!r} holds a line about {match.group(1)!r}"


def test_documents_teach_fixes_preconditions_and_rules_with_their_evidence(documents: dict[str, str]) -> None:
    flights = documents["update reservation flights"]
    assert re.search(r"When update reservation flights fails with “payment method not found”, the agent retried it "
                     r"with changed payment_id\. \(4 runs, 2 tasks; the retried call went through in 3 of 4; the run "
                     r"then succeeded in all 4\)", flights), flights
    assert re.search(r"Before update reservation flights, get reservation details\. \(\d+ runs, \d+ tasks, all succeeded\)",
                     flights)
    booking = documents["book reservation"]
    assert "payment amount does not add up, total price is # but paid #" in booking
    assert re.search(r"the run still failed in all \d+\)", booking), "failed runs say so"
    assert "## How" not in booking, "no run of it succeeded: nothing to follow"
    everything = "\n".join(documents.values())
    assert "Rule the agent applied:" in everything and "cannot" in everything
    lines = [line for line in everything.splitlines() if line.startswith("- ")]
    assert lines and all(re.search(r"\((?:seen only in failed runs: )?\d+ runs?, \d+ tasks?", line) for line in lines), \
        "every line shows its evidence"
    assert "check the preconditions before trying it" not in everything and "{thought}" not in everything
