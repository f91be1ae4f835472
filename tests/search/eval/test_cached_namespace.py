"""The evaluation's kept namespaces are checked before reuse (kbgraph.search.eval.cached_namespace):
stamped when built, reused while the stamp matches, cleared and built again (and said so) when
anything else changed them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.embedders import Embedder
from kbgraph.kb import KnowledgeBase
from kbgraph.search.eval.cached_namespace import Fingerprint, fingerprint_of, ready_namespace, stamp, stamped
from tests.conftest import Neo4jTarget

SAMPLES = resources.files("kbgraph") / "samples"
NAMESPACE = "eval-test-cached"


class CountingKb:
    """A knowledge base that counts its ingestions."""

    def __init__(self, kb: KnowledgeBase):
        self.kb, self.ingested = kb, 0

    @property
    def gateway(self) -> Any:
        return self.kb.gateway

    def ingest(self, paths: Sequence[str | Path], skip_invalid: bool = False, on_progress: Any = None) -> Any:
        self.ingested += 1
        return self.kb.ingest(paths, skip_invalid, on_progress)

    def clear(self) -> None:
        self.kb.clear()


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    rows = [json.loads(line) for line in (SAMPLES / "real_runs.jsonl").read_text().splitlines() if line.strip()]
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(json.dumps(row) + "\n" for row in rows[:4]))
    second.write_text("".join(json.dumps(row) + "\n" for row in rows[4:6]))
    return [first, second]


@pytest.fixture
def kb(driver: neo4j.Driver, embedder: Embedder, neo4j_target: Neo4jTarget) -> Iterator[CountingKb]:
    opened = KnowledgeBase(driver, embedder, namespace=NAMESPACE, database=neo4j_target.database)
    opened.clear()
    yield CountingKb(opened)
    opened.clear()


@pytest.mark.neo4j
def test_a_namespace_is_built_stamped_reused_and_rebuilt_when_something_else_changed_it(
    kb: CountingKb, files: list[Path], driver: neo4j.Driver, neo4j_target: Neo4jTarget,
) -> None:
    notes: list[str] = []
    ready_namespace(kb, NAMESPACE, files[:1], None, notes.append)
    built = stamped(kb.gateway, NAMESPACE)
    assert built is not None and built.matches(fingerprint_of(kb.gateway, NAMESPACE, files[:1]))
    assert notes == [] and kb.ingested == 1 and built.counts["Experience"] > 0 and built.counts["IngestedRecord"] == 4

    ready_namespace(kb, NAMESPACE, files[:1], None, notes.append)
    assert notes == [] and kb.ingested == 1, "an unchanged namespace is reused as it is"

    # Something else changes one property of one experience: same counts, other contents.
    driver.execute_query("MATCH (e:Experience {kb: $kb}) WITH e LIMIT 1 SET e.quality = 0.01", kb=NAMESPACE,
                         database_=neo4j_target.database)
    ready_namespace(kb, NAMESPACE, files[:1], None, notes.append)
    assert len(notes) == 1 and "changed since it was built (the same counts, other contents)" in notes[0]
    assert kb.ingested == 2
    rebuilt = stamped(kb.gateway, NAMESPACE)
    assert rebuilt is not None and rebuilt.counts == built.counts
    records, _, _ = driver.execute_query("MATCH (e:Experience {kb: $kb}) WHERE e.quality = 0.01 RETURN count(e) AS n",
                                         kb=NAMESPACE, database_=neo4j_target.database)
    assert records[0]["n"] == 0

    # Something else ingests more runs into it: the counts say what.
    kb.kb.ingest(files[1:])
    notes.clear()
    ready_namespace(kb, NAMESPACE, files[:1], None, notes.append)
    assert len(notes) == 1 and "IngestedRecord 6 now, 4 when built" in notes[0]
    after = stamped(kb.gateway, NAMESPACE)
    assert after is not None and after.counts == built.counts

    # The corpus itself changed (a file rewritten): built again from the new files.
    files[0].write_text(files[0].read_text() + files[1].read_text())
    notes.clear()
    ready_namespace(kb, NAMESPACE, files[:1], None, notes.append)
    assert len(notes) == 1 and "its corpus files changed" in notes[0]
    assert (stamped(kb.gateway, NAMESPACE) or built).counts["IngestedRecord"] == 6


@pytest.mark.neo4j
def test_a_namespace_built_before_fingerprints_is_completed_and_stamped(kb: CountingKb, files: list[Path]) -> None:
    kb.kb.ingest(files[:1])
    assert stamped(kb.gateway, NAMESPACE) is None
    notes: list[str] = []
    ready_namespace(kb, NAMESPACE, files, None, notes.append)
    assert len(notes) == 1 and "built before fingerprints were kept" in notes[0]
    now = stamped(kb.gateway, NAMESPACE)
    assert isinstance(now, Fingerprint) and now.counts["IngestedRecord"] == 6


@pytest.mark.neo4j
def test_a_namespace_answers_with_the_day_it_was_built_whatever_day_it_is_reused_on(
    kb: CountingKb, files: list[Path],
) -> None:
    notes: list[str] = []
    built_at = datetime(2026, 3, 1, 23, 59, 30, tzinfo=timezone(timedelta(hours=-5)))  # 2 March in UTC
    assert ready_namespace(kb, NAMESPACE, files[:1], None, notes.append, clock=lambda: built_at) == date(2026, 3, 2)
    stamp_ = stamped(kb.gateway, NAMESPACE)
    assert stamp_ is not None and stamp_.built_at == built_at
    # Reused later (the clock says so): still the day it was built.
    later = datetime(2026, 12, 5, tzinfo=UTC)
    assert ready_namespace(kb, NAMESPACE, files[:1], None, notes.append, clock=lambda: later) == date(2026, 3, 2)
    assert notes == [] and kb.ingested == 1
    # Built again (something changed it): the day of the new build.
    kb.kb.ingest(files[1:])
    assert ready_namespace(kb, NAMESPACE, files[:1], None, notes.append, clock=lambda: later) == date(2026, 12, 5)
    assert kb.ingested == 2


@pytest.mark.neo4j
def test_a_namespace_stamped_before_its_build_time_was_kept_counts_as_built_when_its_newest_experience_was_stored(
    kb: CountingKb, files: list[Path], driver: neo4j.Driver, neo4j_target: Neo4jTarget,
) -> None:
    ready_namespace(kb, NAMESPACE, files[:1], None, lambda _: None)
    driver.execute_query("MATCH (e:Experience {kb: $kb}) SET e.created_at = datetime('2026-03-01T08:00:00Z')",
                         kb=NAMESPACE, database_=neo4j_target.database)
    driver.execute_query("MATCH (e:Experience {kb: $kb}) WITH e LIMIT 1 SET e.created_at = datetime('2026-03-04T08:00:00Z')",
                         kb=NAMESPACE, database_=neo4j_target.database)
    # The stamp such a namespace carries: what it holds, no build time.
    stamp(kb.gateway, NAMESPACE, fingerprint_of(kb.gateway, NAMESPACE, files[:1]))
    notes: list[str] = []
    assert ready_namespace(kb, NAMESPACE, files[:1], None, notes.append) == date(2026, 3, 4)
    assert kb.ingested == 1, "reused, not built again"
    assert len(notes) == 1 and "stamped before the build time was kept; counted as built on 2026-03-04" in notes[0]
    restamped = stamped(kb.gateway, NAMESPACE)
    assert restamped is not None and restamped.built_at == datetime(2026, 3, 4, 8, tzinfo=UTC)
    notes.clear()
    assert ready_namespace(kb, NAMESPACE, files[:1], None, notes.append) == date(2026, 3, 4) and notes == []


def test_a_fingerprint_matches_what_a_namespace_holds_whenever_either_was_taken() -> None:
    held = Fingerprint(corpus="c", counts={"Experience": 2}, contents="x")
    built = held.model_copy(update={"built_at": datetime(2026, 3, 1, tzinfo=UTC)})
    assert built.matches(held) and held.matches(built)
    assert not built.matches(held.model_copy(update={"contents": "y"}))
    assert Fingerprint.model_validate_json(built.model_dump_json()) == built
    # A stamp written before the build time was kept still reads.
    assert Fingerprint.model_validate_json('{"corpus": "c", "counts": {"Experience": 2}, "contents": "x"}') == held
