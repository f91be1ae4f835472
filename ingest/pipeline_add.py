"""An add of the ingestion pipeline as a group commit runs it (ingest/group_commit.py): an input
of one write batch, written in a transaction it may share with other adds of its process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from kbgraph.ingest.context import IngestContext
from kbgraph.ingest.report import IngestReport

if TYPE_CHECKING:
    from kbgraph.ingest.pipeline import IngestPipeline, RecordSource

__all__ = ["PipelineAdd", "WriteBaseline"]


class WriteBaseline(NamedTuple):
    """What the embedder had counted when pass 1 began (the report gives what it did since)."""

    hits: int
    misses: int
    model_seconds: float


class PipelineAdd:
    """``pipeline``'s add of ``records`` (validated: ``total`` records, ``problems`` by where they
    were read) in three steps (:class:`~kbgraph.ingest.group_commit.AddWork`)."""

    def __init__(self, pipeline: IngestPipeline, records: RecordSource, total: int,
                 problems: dict[str, tuple[str, ...]], skip_invalid: bool, started: float):
        self.pipeline = pipeline
        self.validated = pipeline.report.model_copy(deep=True)  # the report as validation left it
        self.records = records
        self.total = total
        self.problems = problems
        self.skip_invalid = skip_invalid
        self.started = started
        self._before: WriteBaseline | None = None

    def write(self, context: IngestContext) -> None:
        """Pass 1, after the records are checked again under the namespace's lock (as under the
        lease); an attempt run again starts from the validated report."""
        pipeline = self.pipeline
        pipeline.report = self.validated.model_copy(deep=True)
        with pipeline.writing_in(context):
            rejected = pipeline.recheck(self.problems, self.skip_invalid)
            self._before = pipeline.write_records(self.records, self.total, rejected)

    def consolidate(self, context: IngestContext) -> None:
        with self.pipeline.writing_in(context):
            self.pipeline.consolidate()

    def finish(self, context: Any, leader: Any, group_size: int, growth: tuple[int, int]) -> IngestReport:
        """The report of this add: its own records and experiences, the group's consolidation."""
        pipeline = self.pipeline
        report = pipeline.report
        if leader is not self:
            assert isinstance(leader, PipelineAdd)
            report.take_consolidation(leader.pipeline.report)
            if pipeline.llm is not None:
                report.llm = pipeline.llm.counts()
        report.committed_with = group_size - 1
        report.growth_checked = growth
        assert self._before is not None, "finish before write"
        return pipeline.summarised(self.started, self._before)
