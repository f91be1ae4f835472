"""The teacher phase on real agent runs (real Neo4j, real MiniLM): identical failure modes are one
match with their counts, the recovery shown is concrete, and the leave-one-run-out benchmark puts
kbgraph at the oracle, above a text retriever."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import pytest

from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.search.teacher import TeacherRetriever
from kbgraph.search.eval.pipeline import ready_opener
from kbgraph.search.eval.teacher import run_teacher_eval, run_teacher_phase
from tests.conftest import REAL_RUNS

PAYMENT = {"action": "book_reservation", "arguments": {"payment_methods": [{"payment_id": "certificate_1", "amount": 250}]},
           "error": "Error: payment amount does not add up, total price is 420, but paid 400"}


@pytest.fixture
def real_kb(real_runs_read_only: KnowledgeBase) -> KnowledgeBase:
    """The tests here only read the real runs: the module's namespace of them (tests/conftest.py)."""
    return real_runs_read_only


def test_identical_failure_modes_are_one_match_with_how_often_they_were_seen_and_fixed(real_kb: KnowledgeBase) -> None:
    results = real_kb.refine([PAYMENT], domain="airline", k=5)
    signatures = [f.signature for f in results.failures]
    assert len(signatures) == len(set(signatures)), "the same failure is listed once"
    first = results.failures[0]
    assert first.signature == "book_reservation|error: payment amount does not add up, total price is # but paid #"
    assert (first.seen, first.tasks) == (10, 3) and 0 < first.recovered < first.seen
    # In the runs' numbers first: every run that hit this error failed in the end.
    assert first.summary.startswith("after this error, 0 of 6 runs reached their goal. Shown: retried the call with "
                                    "changed arguments; it only made the call go through, the run still failed")
    assert first.summary.endswith("this failure seen 10 times in 3 tasks")
    # The recovery shown teaches: a retry that says what changed and how, with the agent's reasoning.
    assert first.recovery_kind == "retry" and first.concrete and first.fix_recovered
    assert "payment_methods[" in first.recovery and "amount" in first.recovery and "thought:" in first.recovery
    assert "{thought}" not in first.recovery and "$305" in first.recovery  # amounts are kept


def test_a_step_that_failed_the_same_way_is_the_best_step_match(real_kb: KnowledgeBase) -> None:
    step = real_kb.refine([PAYMENT], domain="airline", k=3).steps[0]
    assert step.step.action == "book_reservation" and step.breakdown.issue_similarity == 1.0
    assert step.score > 0


def test_a_run_left_out_is_neither_counted_nor_shown(real_kb: KnowledgeBase) -> None:
    full = real_kb.refine([PAYMENT], domain="airline", k=5).failures[0]
    without = real_kb.refine([PAYMENT], domain="airline", k=5, exclude_runs=["gpt4o-airline-08-t1"]).failures[0]
    assert "gpt4o-airline-08-t1" in full.runs and "gpt4o-airline-08-t1" not in without.runs
    assert without.seen == full.seen - 3 and without.tasks == full.tasks - 1


def test_leave_one_run_out_kbgraph_recovers_like_the_oracle_and_above_a_text_retriever(real_kb: KnowledgeBase) -> None:
    report = run_teacher_eval(TeacherRetriever(real_kb.gateway, real_kb.embedder, real_kb.namespace), REAL_RUNS)
    scores = {s.system: s for s in report.systems}
    assert report.queries == 21 and report.judged > 0 and report.split is None and report.memory_runs == 100
    ours, oracle, tfidf = scores["kbgraph"], scores["oracle"], scores["tfidf_failure_text"]
    # good: the first failure match is of the same error class, from a run that then reached its
    # goal; per error class, good is the oracle's everywhere.
    assert ours.same_class == oracle.same_class
    assert ours.good == oracle.good and report.short_classes == []
    assert all(c.good == c.oracle for c in report.classes) and sum(c.queries for c in report.classes) == 21
    assert ours.concrete_success >= oracle.concrete_success - 0.1
    assert ours.good >= tfidf.good and ours.concrete_success > tfidf.concrete_success
    assert ours.ndcg >= 0.9
    print(f"\nteacher: kbgraph nDCG@5 {ours.ndcg} same {ours.same_class} good {ours.good} concrete "
          f"{ours.concrete_success}; tfidf {tfidf.ndcg} {tfidf.good}; oracle {oracle.same_class} / "
          f"{oracle.good} / {oracle.concrete_success}")


def test_a_split_asks_the_other_half_of_the_tasks_of_a_memory_of_one_half(real_kb: KnowledgeBase) -> None:
    retriever = TeacherRetriever(real_kb.gateway, real_kb.embedder, real_kb.namespace)
    even, odd = (run_teacher_eval(retriever, REAL_RUNS, split=split) for split in ("even", "odd"))
    # 25 tasks of 4 runs: 13 at even positions, 12 at odd ones; the errored steps split between them.
    assert (even.memory_runs, odd.memory_runs) == (52, 48) and even.queries + odd.queries == 21
    for report in (even, odd):
        scores = {s.system: s for s in report.systems}
        assert scores["kbgraph"].good == scores["oracle"].good and report.short_classes == []
        assert scores["kbgraph"].same_class == scores["oracle"].same_class


def test_a_corpus_without_errored_steps_is_refused_by_name(kb: KnowledgeBase, tmp_path: Path) -> None:
    (tmp_path / "ok.jsonl").write_text(json.dumps({"id": "ok-1", "domain": "airline", "task": "cancel it",
                                                   "steps": [{"action": "cancel_reservation"}],
                                                   "outcome": {"success": True}}) + "\n")
    with pytest.raises(InvalidInputError) as caught:
        run_teacher_eval(TeacherRetriever(kb.gateway, kb.embedder, kb.namespace), tmp_path)
    assert "no step of its runs has an error" in caught.value.problems[0]


def test_the_phase_opens_its_namespace_through_the_pipelines_opener_built_once_then_reused(
        kb: KnowledgeBase, tmp_path: Path) -> None:
    """``kbgraph eval --phase teacher``'s way: the namespace is built from the corpus the first time
    the run opens it, checked and reused after, and the report is the benchmark's over it."""
    (tmp_path / "runs.jsonl").write_text((resources.files("kbgraph") / "samples" / "real_runs.jsonl").read_text())
    opened: list[str] = []
    ingested: list[str] = []

    @contextmanager
    def open_kb(name: str) -> Iterator[KnowledgeBase]:
        opened.append(name)
        yield kb

    notes: list[str] = []
    open_ready = ready_opener(open_kb, lambda stage, done, total: ingested.append(stage), notes.append)
    first = run_teacher_phase(open_ready, tmp_path, kb.namespace)
    assert opened == [kb.namespace] and ingested and notes == []
    assert first.queries > 0 and first.namespace == kb.namespace and first.corpus == str(tmp_path)
    ingested.clear()
    again = run_teacher_phase(open_ready, tmp_path, kb.namespace)
    assert opened == [kb.namespace] * 2 and ingested == [], "opened again, not built again"
    direct = run_teacher_eval(TeacherRetriever(kb.gateway, kb.embedder, kb.namespace), tmp_path)
    assert [s.model_copy(update={"seconds": 0.0}) for s in again.systems] == \
        [s.model_copy(update={"seconds": 0.0}) for s in direct.systems]
    assert again.model_copy(update={"systems": []}) == direct.model_copy(update={"systems": []})
