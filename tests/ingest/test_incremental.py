"""Adding runs a few at a time ends where adding them at once does (real Neo4j, real MiniLM): the
same experiences, provenance, workflows, counts and inferred relations, and the linker writes only
what changed (an ingest that changes nothing rewrites no relation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbgraph.kb import KnowledgeBase
from tests.conftest import REAL_RUNS
from tests.reliability.snapshots import canonical

SLICES = 10


def relations(kb: KnowledgeBase) -> list[tuple[Any, ...]]:
    rows = kb.gateway.read("relations_inferred_list", kb=kb.namespace)
    return sorted((r["type"], r["source_id"], r["target_id"], r["weight"], r["reason"]) for r in rows)


@pytest.fixture
def runs() -> list[str]:
    lines = [line for path in sorted(REAL_RUNS.glob("*.jsonl")) for line in path.read_text().splitlines() if line.strip()]
    assert len(lines) >= SLICES * 5
    return lines


def test_ten_slices_end_where_one_ingest_does(kb: KnowledgeBase, runs: list[str], tmp_path: Path) -> None:
    whole = tmp_path / "all.jsonl"
    whole.write_text("\n".join(runs) + "\n")
    kb.ingest([whole])
    at_once, at_once_relations = canonical(kb), relations(kb)

    kb.clear()
    size = -(-len(runs) // SLICES)
    ways = []
    for index in range(SLICES):
        part = tmp_path / f"slice-{index}.jsonl"
        part.write_text("\n".join(runs[index * size:(index + 1) * size]) + "\n")
        report = (kb.add_trajectories([json.loads(line) for line in part.read_text().splitlines()]) if index % 2
                  else kb.ingest([part]))
        ways.append(report.consolidated)
    # The first slice plans from scratch; the others only what they add (automatic maintenance,
    # which changes the namespace behind the remembered plan, makes the next one start over).
    assert ways[0] == "from scratch" and ways.count("incremental") >= SLICES // 2, ways
    assert canonical(kb) == at_once
    assert relations(kb) == at_once_relations


def relationship_ids(kb: KnowledgeBase) -> set[str]:
    records, _, _ = kb.driver.execute_query(
        "MATCH (:Experience {kb: $kb})-[r:ABSTRACTION|COMPOSITION|ADAPTATION|ALTERNATIVE]->() "
        "WHERE r.inferred RETURN elementId(r) AS id", kb=kb.namespace, database_=kb.gateway.database)
    return {r["id"] for r in records}


def test_consolidating_again_rewrites_no_relation(kb: KnowledgeBase, runs: list[str], tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(runs[:40]) + "\n")
    kb.ingest([path])
    before, ids = relations(kb), relationship_ids(kb)
    assert before and ids
    kb.recluster()  # plans every relation again from the stored graph
    assert relations(kb) == before
    assert relationship_ids(kb) == ids, "unchanged relations were deleted and written again"


def test_two_processes_adding_in_turn_follow_each_other_and_end_where_one_ingest_does(
        kb: KnowledgeBase, runs: list[str], tmp_path: Path) -> None:
    whole = tmp_path / "all.jsonl"
    whole.write_text("\n".join(runs) + "\n")
    kb.ingest([whole])
    at_once, at_once_relations = canonical(kb), relations(kb)

    kb.clear()
    # A second KnowledgeBase on the namespace remembers its own link state, as another process does.
    other = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, database=kb.gateway.database,
                          settings=kb.settings, ensure_schema=False)
    try:
        size = -(-len(runs) // SLICES)
        reports = []
        for index in range(SLICES):
            adder = (kb, other)[index % 2]
            reports.append(adder.add_trajectories([json.loads(line) for line in runs[index * size:(index + 1) * size]]))
    finally:
        other.close()
    ways = [(r.consolidated, r.consolidations_followed) for r in reports]
    # Each KnowledgeBase's first add plans from scratch; later ones follow the other's one add
    # (automatic maintenance changes the namespace without a log entry: the next starts over).
    assert ways[0] == ("from scratch", 0) and ways[1] == ("from scratch", 0), ways
    assert sum(1 for way in ways if way == ("incremental", 1)) >= SLICES // 2, ways
    assert canonical(kb) == at_once
    assert relations(kb) == at_once_relations
