"""The ingestion pipeline of docs/design.md §2, in two passes.

Pass 1 streams the input in batches: read → abstract → reflect → write experiences, concepts
and insights. Every write is a MERGE on a content hash, and trajectories already in some
experience's provenance are skipped, so a batch written twice changes nothing.

Pass 2 works on what is stored: merge duplicates (stage 6), deduplicate concepts and integrate
documents (stages 4–5), link the four relations (stage 7) — for the experiences written since
the last consolidation, or from scratch (ingest/consolidate.py). Each is computed from the graph
and written in one transaction, so it is a function of the stored state: re-running after a
crash (or ingesting the same files again) ends in the same graph.

Before pass 1 the whole input is validated (a cheap streaming pass): by default any bad record
stops the run before anything is written; with ``skip_invalid`` bad records are skipped and
listed in the report.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError, KbgraphError
from kbgraph.core.ids import normalise_text
from kbgraph.ingest.abstract import Abstractor, RuleBasedAbstractor
from kbgraph.ingest.consolidate import Consolidation
from kbgraph.ingest.context import IngestContext
from kbgraph.ingest.failure_records import with_records
from kbgraph.ingest.integrate_evidence import DocumentRewriter
from kbgraph.ingest.read import Record, read_records
from kbgraph.ingest.reflect import Reflector, RuleBasedReflector
from kbgraph.ingest.lease import IngestLease
from kbgraph.ingest.one_transaction import add_in_one_transaction, count_refusal
from kbgraph.ingest.pipeline_add import PipelineAdd, WriteBaseline
from kbgraph.ingest.report import IngestReport
from kbgraph.core.models import ConceptInsight, Experience, Insight, Trajectory
from kbgraph.core.votes import apply_votes, check_votes
from kbgraph.store.writer import ExperienceWriter
from kbgraph.store.transaction import DeletedInTransaction

if TYPE_CHECKING:
    from kbgraph.ingest.llm_fallback import LLMStages

Progress = Callable[[str, int, int | None], None]  # (stage, done, total)
RecordSource = Callable[[], Iterable[Record]]  # called once per pass


def _record_key(record: Record) -> str:
    if isinstance(record.item, Trajectory):
        return f"trajectory:{record.item.id}"
    assert isinstance(record.item, Experience)
    return f"experience:{record.item.key}"


def _fingerprint(record: Record) -> str:
    """What must match for a repeated id to be the same record: a trajectory's whole record; an
    experience's content (what its content id hashes; learning fields may differ)."""
    if isinstance(record.item, Experience):
        return record.item.content_id()
    return record.fingerprint


def _shown_id(key: str) -> str:
    return repr(key.split(":", 1)[1])


class IngestPipeline:
    def __init__(
        self, kb: IngestContext, abstractor: Abstractor | None = None, reflector: Reflector | None = None,
        document_writer: DocumentRewriter | None = None, batch_size: int | None = None,
        on_progress: Progress | None = None, llm: LLMStages | None = None,
    ):
        self.kb = kb
        self.llm = llm  # the LLM stages among the above, whose counts go into the report
        self.abstractor = abstractor or RuleBasedAbstractor()
        self.reflector = reflector or RuleBasedReflector()
        self.document_writer = document_writer
        self.batch_size = batch_size or kb.settings.write_batch_size
        self.on_progress = on_progress
        self.report = IngestReport()
        self._duplicates: set[str] = set()  # where records repeat an earlier one exactly
        self._first_seen: dict[str, tuple[str, str]] = {}  # record key -> (fingerprint, where first read)
        self._ingested_before: set[str] = set()  # record keys an earlier ingest marked done

    # -- public --------------------------------------------------------------------------------

    def ingest(self, paths: list[Path], skip_invalid: bool = False) -> IngestReport:
        """Ingests JSON Lines files (``file:line`` names each record)."""
        return self.ingest_records(lambda: read_records(paths), skip_invalid)

    def ingest_records(self, records: RecordSource, skip_invalid: bool = False) -> IngestReport:
        """Validates every record (nothing is written if one is bad, unless ``skip_invalid``),
        then writes holding the namespace's ingest lease (kbgraph.ingest.lease): a second ingest
        of the same namespace waits, then finds the records already ingested. An input of one
        write batch (a run an agent adds) is written in ONE transaction instead, which takes its
        turn on the namespace's state node (ingest/one_transaction.py). ``records`` is called
        once per pass (validation, writing), so files are streamed, never held."""
        started = time.perf_counter()
        self.report = IngestReport()
        if self.llm is not None:
            self.llm.reset()
        with self._stage("validate"):
            total, problems = self._validate(records)
        self.report.records_read = total
        self._refuse_or_list(problems, skip_invalid)
        if total - len(problems) <= self.batch_size:
            # One batch (a run, as an agent adds it): one write transaction (ingest/one_transaction.py),
            # shared with the adds of this process waiting beside it (ingest/group_commit.py).
            add = PipelineAdd(self, records, total, problems, skip_invalid, started)
            try:
                return add_in_one_transaction(self.kb, add, self._waiting)
            except DeletedInTransaction as refused:
                # Rolled back whole; Neo4j refused a statement reaching a node the transaction had
                # deleted: written under the lease instead, batch by batch (a safety net, counted).
                count_refusal(refused)
                self.report = add.validated.model_copy(deep=True)
                self.report.one_transaction_refused = 1
        with IngestLease(self.kb.gateway, self.kb.namespace, self.kb.settings.ingest_lease_s, on_wait=self._waiting):
            # Validation ran before the lease (a refused file writes nothing, not even the lease's
            # state node), so what another ingest marked meanwhile is checked again under it: an
            # id it ingested with other content is refused here, not skipped as "already ingested".
            rejected = self.recheck(problems, skip_invalid)
            before = self.write_records(records, total, rejected)
            self.consolidate()
            return self.summarised(started, before)

    @contextmanager
    def writing_in(self, context: IngestContext) -> Iterator[None]:
        """This pipeline reading and writing through ``context`` (an add's one transaction)."""
        outer, self.kb = self.kb, context
        try:
            yield
        finally:
            self.kb = outer

    def recheck(self, problems: dict[str, tuple[str, ...]], skip_invalid: bool) -> set[str]:
        """The records to leave out, once what another ingest marked since validation is checked
        (under the lease, or the namespace's lock): refused unless ``skip_invalid``."""
        with self._stage("validate"):
            problems = problems | self._earlier_run_problems()
        self._refuse_or_list(problems, skip_invalid)
        return set(problems)

    def _refuse_or_list(self, problems: dict[str, tuple[str, ...]], skip_invalid: bool) -> None:
        listed = [p for record_problems in problems.values() for p in record_problems]
        if problems and not skip_invalid:
            raise InvalidInputError(listed)
        self.report.records_rejected = len(problems)
        self.report.rejected = listed

    def _waiting(self, message: str) -> None:
        if self.on_progress is not None:
            self.on_progress(message, 0, None)

    def write_records(self, records: RecordSource, total: int, rejected: set[str]) -> WriteBaseline:
        """Pass 1 over every record not ``rejected`` (where it was read); what the embedder had
        counted before, for :meth:`summarised`."""
        before = WriteBaseline(*self._cache_counts(), self._embedding_seconds())
        batch: list[Record] = []
        done = 0
        for record in records():
            if record.item is None or record.where in rejected:
                continue
            batch.append(record)
            if len(batch) >= self.batch_size:
                done += self._pass_one(batch)
                self._progress("ingest", done, total - len(rejected))
                batch = []
        if batch:
            done += self._pass_one(batch)
            self._progress("ingest", done, total - len(rejected))
        return before

    def summarised(self, started: float, before: WriteBaseline) -> IngestReport:
        """The report, with the time since ``started`` and the embedder's work since ``before``."""
        report = self.report
        report.total_seconds = round(time.perf_counter() - started, 2)
        ingested = report.records_read - report.records_rejected
        report.trajectories_per_second = round(ingested / report.total_seconds, 2) if report.total_seconds else 0.0
        report.peak_memory_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        hits1, misses1 = self._cache_counts()
        report.embedding_cache_hits, report.embedding_cache_misses = hits1 - before.hits, misses1 - before.misses
        # Embedding happens inside "write" and "concepts"; shown on its own so the model's share is visible.
        report.stage_seconds["embedding model (within write/concepts)"] = round(
            self._embedding_seconds() - before.model_seconds, 3)
        return report

    def consolidate(self, recluster: bool = False, merge: bool = True, run: str | None = None) -> IngestReport:
        """Pass 2 (ingest/consolidate.py): merge (unless ``merge`` is off: maintenance merges by
        its own plan), concepts and documents, links — for what changed since this
        KnowledgeBase's last consolidation, or from scratch (``recluster``, or when it cannot
        know). Workflows that dissolve are archived under ``run`` (by default
        ``consolidate-<time>``)."""
        report = self.report
        Consolidation(self.kb, report, self._stage, self.document_writer).run(recluster, merge, run)
        if self.llm is not None:
            report.llm = self.llm.counts()
        return report

    # -- pass 1 --------------------------------------------------------------------------------

    def _validate(self, records: RecordSource) -> tuple[int, dict[str, tuple[str, ...]]]:
        """Every record's problems by where it was read, before anything is written. An id read
        twice with the same content is a duplicate (skipped and counted); with other content, or
        with other content than when an earlier run ingested it, it is a problem of that record."""
        total = 0
        problems: dict[str, tuple[str, ...]] = {}
        first_seen: dict[str, tuple[str, str]] = {}
        self._duplicates = set()
        for record in records():
            total += 1
            if record.problems:
                problems[record.where] = record.problems
                continue
            key, fingerprint = _record_key(record), _fingerprint(record)
            seen = first_seen.setdefault(key, (fingerprint, record.where))
            if seen[1] == record.where:
                continue
            if seen[0] == fingerprint:
                self._duplicates.add(record.where)
            else:
                problems[record.where] = (f"{record.where}: id: {_shown_id(key)} was read at {seen[1]} with different "
                                          "content (one id, one record: give the other run its own id)",)
        self.report.duplicates_skipped = len(self._duplicates)
        self._first_seen = first_seen
        problems |= self._earlier_run_problems()
        return total, problems

    def _earlier_run_problems(self) -> dict[str, tuple[str, ...]]:
        """Records whose id an earlier run ingested with other content, by where they were read.
        A marker without a fingerprint (written before kbgraph kept one) says nothing about its
        content: its record is skipped as already ingested, as those versions did."""
        problems: dict[str, tuple[str, ...]] = {}
        keys = list(self._first_seen)
        # What was ingested before: read again under the lease (no other ingest marks records
        # while it is held), it is what pass 1 skips.
        self._ingested_before.clear()
        for start in range(0, len(keys), 5000):
            for row in self.kb.gateway.read("ingested_record_fingerprints", kb=self.kb.namespace,
                                            keys=keys[start : start + 5000]):
                self._ingested_before.add(row["key"])
                fingerprint, where = self._first_seen[row["key"]]
                if row["fingerprint"] is not None and row["fingerprint"] != fingerprint:
                    problems[where] = (f"{where}: id: {_shown_id(row['key'])} was ingested before with different "
                                       f"content (at {row['ingested_at']}): one id, one record",)
        return problems

    def _pass_one(self, batch: list[Record]) -> int:
        """Abstracts, reflects and writes one batch. A record counts as ingested once its marker is
        written, in the same transaction as its concepts and insights (after its experience): a
        crash before that makes the next run redo the record, which MERGE makes harmless."""
        report = self.report
        keys = [_record_key(r) for r in batch]
        done = {k for k in keys if k in self._ingested_before}
        report.records_already_ingested += sum(1 for r, k in zip(batch, keys, strict=True)
                                               if k in done and r.where not in self._duplicates)
        marks = {k: _fingerprint(r) for r, k in zip(batch, keys, strict=True)
                 if k not in done and r.where not in self._duplicates}
        experiences: list[Experience] = []
        labels: list[str] = []
        reflections: list[tuple[Experience, list[ConceptInsight]]] = []
        for record, key in zip(batch, keys, strict=True):
            if key in done or record.where in self._duplicates:
                continue
            if isinstance(record.item, Experience):
                experiences.append(record.item)
                labels.append(record.where)
                continue
            trajectory = record.item
            assert isinstance(trajectory, Trajectory)
            with self._stage("abstract"):
                try:
                    experience = self.abstractor.abstract(trajectory)
                except KbgraphError as exc:
                    raise KbgraphError(f"{record.where}: abstraction failed: {exc}") from None
                if trajectory.metadata.get("adapted_from"):
                    experience.adapted_from = [str(trajectory.metadata["adapted_from"])]
            with self._stage("reflect"):
                try:
                    pairs = self.reflector.reflect(trajectory, experience)
                except KbgraphError as exc:
                    raise KbgraphError(f"{record.where}: reflection failed: {exc}") from None
            votes = trajectory.metadata.get("votes")
            # EDV: with votes, the experience goes to the shared bank, the approvers' private
            # banks, or is stored rejected; without, it is shared as before.
            stored = apply_votes(experience, check_votes(votes))[1] if votes is not None else [experience]
            for copy in stored:
                experiences.append(copy)
                labels.append(record.where)
                reflections.append((copy, pairs))
        if not experiences:
            return len(batch)
        with self._stage("write"):
            # Counted towards the maintenance checkpoints as they are written (the check is the
            # façade's, after the ingest): what a crashed run wrote stays counted.
            written = ExperienceWriter(self.kb.store, self.kb.embedder, with_records).add(experiences, labels=labels,
                                                                             count_growth=True)
            report.experiences_new += written.new
            report.experiences_existing += written.existing
            calls: list[tuple[str, dict[str, Any]]] = []
            concept_rows = self._concept_rows(reflections)
            if concept_rows:
                calls.append(("concept_insight_upsert", {"kb": self.kb.namespace, "rows": concept_rows}))
            calls.append(("ingested_records_mark", {"kb": self.kb.namespace,
                                                     "rows": [{"key": k, "fingerprint": f} for k, f in marks.items()]}))
            self.kb.gateway.write_all(calls)
        return len(batch)

    def _concept_rows(self, reflections: list[tuple[Experience, list[ConceptInsight]]]) -> list[dict[str, Any]]:
        """One row per insight of each run, with the run's evidence: its id, task and outcome, and
        whether the insight's fix went through there (identical insights of many runs add up)."""
        rows: list[dict[str, Any]] = []
        for experience, pairs in reflections:
            run = experience.source_ids[0] if experience.source_ids else experience.key
            for pair in pairs:
                insight = Insight(text=normalise_text(pair.insight), concept=normalise_text(pair.concept),
                                  experience_id=experience.key)
                rows.append({"concept_id": insight.concept_id, "label": insight.concept, "text": insight.text,
                             "insight_id": insight.id, "experience_id": experience.key, "run": run,
                             "task": experience.task_key(), "succeeded": not experience.only_failed,
                             "worked": pair.worked, "record": pair.record.model_dump_json(exclude_defaults=True) if pair.record else None})
        if rows:
            vectors = self.kb.embedder.embed([row["label"] for row in rows])
            for row, vector in zip(rows, vectors, strict=True):
                row["embedding"] = vector.tolist()
        return rows

    # -- bookkeeping ---------------------------------------------------------------------------

    @contextmanager
    def _stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            seconds = self.report.stage_seconds.get(name, 0.0) + time.perf_counter() - started
            self.report.stage_seconds[name] = round(seconds, 3)

    def _progress(self, stage: str, done: int, total: int | None) -> None:
        if self.on_progress:
            self.on_progress(stage, done, total)

    def _embedding_seconds(self) -> float:
        embedder = self.kb.embedder
        return embedder.model_seconds if isinstance(embedder, CachedEmbedder) else 0.0

    def _cache_counts(self) -> tuple[int, int]:
        embedder = self.kb.embedder
        if isinstance(embedder, CachedEmbedder):
            return embedder.hits, embedder.misses
        return 0, 0


def pipeline_from_settings(kb: IngestContext, on_progress: Progress | None = None) -> IngestPipeline:
    """Rule-based by default; the LLM abstractor, reflector and document writer when configured,
    each falling back to the rule-based result for an item the model gives no usable answer for
    (ingest/llm_fallback.py)."""
    settings = kb.settings
    abstractor: Abstractor = RuleBasedAbstractor()
    reflector: Reflector = RuleBasedReflector()
    writer: DocumentRewriter | None = None
    llm: LLMStages | None = None
    if settings.abstractor == "llm" or settings.reflector == "llm":
        from kbgraph.ingest.llm_fallback import LLMStages

        llm = LLMStages.from_settings(settings)
        abstractor = llm.abstractor or abstractor
        reflector = llm.reflector or reflector
        writer = llm.document_writer
    return IngestPipeline(kb, abstractor, reflector, writer, on_progress=on_progress, llm=llm)
