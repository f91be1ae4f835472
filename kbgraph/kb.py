"""The public façade: one object per (database, namespace) that agents and tools talk to. Each method checks its
arguments and delegates: to :mod:`kbgraph.store.writer`, :mod:`kbgraph.ingest.pipeline` (this object is its
:class:`~kbgraph.ingest.context.IngestContext`), :mod:`kbgraph.search`, :mod:`kbgraph.learning` and :mod:`kbgraph.store.namespace_stats`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import neo4j

from kbgraph.learning.agents import AbilityCell, AbilityMatrix, VerifiedReport, ability_matrix, add_verified, best_agents
from kbgraph.store.connection import connect
from kbgraph.embedders import Embedder, embedder_from_settings
from kbgraph.core.errors import InvalidInputError
from kbgraph.store.experiences import ExperienceStore
from kbgraph.learning.feedback import ExperienceLearningState, FeedbackEvent, FeedbackRecorder, FeedbackReport
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import PgVectorCache
from kbgraph.ingest.failure_records import with_records
from kbgraph.ingest.link_state import RememberedLinks
from kbgraph.ingest.pipeline import pipeline_from_settings
from kbgraph.ingest.read import listed_items, records_from_items
from kbgraph.ingest.report import IngestReport
from kbgraph.learning.maintenance import Maintainer, MaintenanceReport
from kbgraph.core.models import Experience, Trajectory
from kbgraph.store.namespace_stats import KbStats, experience_count, namespace_stats
from kbgraph.plan_warmup import PlanWarmup, warm_plans, warmed_after_writing
from kbgraph.store.schema import IndexStatus, index_status
from kbgraph.store.step_texts import open_namespace
from kbgraph.search.params import QueryStep, SearchFilters, SearchQuery, SearchWeights
from kbgraph.search.results import SearchResults
from kbgraph.search.steps import StepHit, StepRetriever
from kbgraph.search.student import StudentRetriever, parse_query
from kbgraph.search.teacher import ProblematicStep, RefineResults, RefineWeights, TeacherRetriever
from kbgraph.core.blas_threads import limit_blas_threads
from kbgraph.core.settings import Settings, checked_namespace
from kbgraph.core.value_bounds import check_bounds
from kbgraph.store.writer import ExperienceWriter, WriteReport

if TYPE_CHECKING:
    from kbgraph.skills.export import SkillsExportReport
    from kbgraph.transfer import ExportReport, ImportReport

__all__ = ["KbStats", "KnowledgeBase", "VerifiedReport", "WriteReport"]


class KnowledgeBase:
    """kbgraph's memory for one namespace of one Neo4j database.

    Give it a driver and an embedder (dependency injection, e.g. in tests), or build both from
    settings with :meth:`from_settings`. Use it as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        driver: neo4j.Driver,
        embedder: Embedder,
        *,
        namespace: str = "default",
        database: str = "neo4j",
        settings: Settings | None = None,
        ensure_schema: bool = True,
        owns_driver: bool = False,
        browser_url: str | None = None,
        gateway: Neo4jGateway | None = None,
    ):
        self.namespace = checked_namespace(namespace)
        self.settings = settings or Settings(namespace=namespace, neo4j_database=database)
        limit_blas_threads(self.settings.blas_threads)
        self.embedder, self.driver = embedder, driver
        # AsyncKnowledgeBase passes its own gateway (kbgraph.store.aio.AsyncGateway, on the AsyncDriver).
        self.gateway = gateway or Neo4jGateway(driver, database, timeout_s=self.settings.query_timeout_s,
                                               bulk_timeout_s=self.settings.bulk_query_timeout_s)
        self.store = ExperienceStore(self.gateway, namespace, self.settings.write_batch_size)
        self.browser_url = browser_url
        self._owns_driver = owns_driver
        self._student: StudentRetriever | None = None
        #: Problem+goal vectors the ingestion pipeline has read (ids are content hashes: they never change).
        self.pg_vectors = PgVectorCache()
        #: The namespace's link state as this KnowledgeBase's last consolidation left it (ingest/consolidate.py).
        self.link_state = RememberedLinks()
        if ensure_schema:  # the schema applied, the namespace's steps converted to one vector per text
            open_namespace(self.gateway, embedder.dimension, self.namespace)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, *, quiet: bool = False, **overrides: Any) -> KnowledgeBase:
        """Connects as configured (NEO4J_URI, or the managed server, started when needed)."""
        settings = settings or Settings(**overrides)
        connection = connect(settings, quiet=quiet)
        try:
            return cls(
                connection.driver, embedder_from_settings(settings), namespace=settings.namespace,
                database=connection.database, settings=settings, owns_driver=True,
                browser_url=connection.browser_url,
            )
        except BaseException:
            connection.driver.close()
            raise

    # -- writing ---------------------------------------------------------------------------------

    def validate(self, items: Iterable[Experience | Mapping[str, Any]], labels: Sequence[str] | None = None) -> list[Experience]:
        """Validates everything (types, limits, embedding sizes, relation targets) before any write.

        Raises InvalidInputError listing every problem as ``where: field: reason``, where ``where``
        is ``labels[i]`` (e.g. ``file.jsonl:12``) or ``experiences[i]``.
        """
        return self._writer.validate(items, labels)

    def embed_missing(self, experiences: Sequence[Experience]) -> None:
        """Fills every absent embedding, with one embedder call per kind of text."""
        self._writer.embed_missing(experiences)

    def add_experiences(self, items: Iterable[Experience | Mapping[str, Any]], on_progress: Callable[[int], None] | None = None,
                        labels: Sequence[str] | None = None, maintain: bool = False) -> WriteReport:
        """Validates, embeds and writes experiences; idempotent (content-hash ids, MERGE).

        Nothing is written when any item is invalid. ``on_progress`` is called with the number of
        experiences each committed batch wrote. With ``maintain=True`` new experiences count
        towards the growth checkpoints at which maintenance runs by itself, as ingested ones do;
        by default they are kept as written, but for a record on each failure mode without one."""
        report = self._writer.add(items, on_progress, labels, count_growth=maintain)
        if maintain:
            self.maintainer.after_growth()
        return report

    @property
    def _writer(self) -> ExperienceWriter:
        return ExperienceWriter(self.store, self.embedder, with_records)

    def ingest(
        self, paths: Sequence[str | Path], skip_invalid: bool = False,
        on_progress: Callable[[str, int, int | None], None] | None = None,
    ) -> IngestReport:
        """Ingests JSON Lines of trajectories (or ready-made experiences): abstraction, reflection,
        concept deduplication, documents, merging and the four relations (see kbgraph.ingest)."""
        report = self._grown(pipeline_from_settings(self, on_progress).ingest([Path(p) for p in paths], skip_invalid))
        report.plans_warmed_s = warmed_after_writing(self, report.experiences_new, on_progress)
        return report

    def add_trajectories(
        self, trajectories: Sequence[Trajectory | Mapping[str, Any]], skip_invalid: bool = False,
        on_progress: Callable[[str, int, int | None], None] | None = None, labels: Sequence[str] | None = None,
    ) -> IngestReport:
        """Ingests runs handed over in memory — ``Trajectory`` models or dicts in the file format,
        as an agent loop has them — through the same pipeline, validation and idempotence as
        :meth:`ingest` (a bad one is named ``trajectories[i]: field: reason`` and nothing is
        written; a run ingested before is skipped). Ready-made experiences (a ``problem`` instead
        of a ``task``) are accepted too, as in a file. ``labels`` name the items in messages
        instead of ``trajectories[i]`` (the CLI gives ``<stdin>:line``)."""
        items = listed_items(trajectories, labels)
        return self._grown(pipeline_from_settings(self, on_progress).ingest_records(
            lambda: records_from_items(items, labels), skip_invalid))

    def _grown(self, report: IngestReport) -> IngestReport:
        """Runs maintenance when an ingest grew the namespace past a checkpoint (AutoRefine)."""
        maintenance = self.maintainer.after_growth(report.growth_checked)  # an add checked in its transaction
        if maintenance is not None:
            report.maintenance_run = maintenance.run_id
        return report

    def recluster(self) -> IngestReport:
        """Rebuilds every meta-concept and document from all concepts (and re-merges, re-links)."""
        return pipeline_from_settings(self).consolidate(recluster=True)

    def warm_plans(self, on_progress: Callable[[str, int, int], None] | None = None) -> PlanWarmup:
        """Runs kbgraph's statements once in a namespace of their own, deleted after (kbgraph.plan_warmup)."""
        return warm_plans(self.gateway, self.embedder, self.settings, on_progress)

    # -- reading ---------------------------------------------------------------------------------

    def get(self, experience_id: str) -> Experience | None:
        check_bounds(experience_id=experience_id)
        found = self.store.get_many([experience_id])
        return found[0] if found else None

    def get_many(self, ids: Sequence[str]) -> list[Experience]:
        check_bounds(ids=list(ids))
        return self.store.get_many(ids)

    def count(self) -> int:
        """Experiences in this namespace (any status)."""
        return experience_count(self.gateway, self.namespace)

    def stats(self) -> KbStats:
        return namespace_stats(self.gateway, self.namespace)

    def index_status(self) -> list[IndexStatus]:
        return index_status(self.gateway)

    # -- searching -------------------------------------------------------------------------------

    @property
    def student(self) -> StudentRetriever:
        if self._student is None:
            self._student = StudentRetriever.of_settings(self.gateway, self.embedder, self.namespace, self.settings,
                                                         self.pg_vectors)
        return self._student

    def search(
        self,
        task: str = "",
        *,
        problem: str | None = None,
        goal: str | None = None,
        domain: str | None = None,
        steps_so_far: Sequence[QueryStep | Mapping[str, Any]] = (),
        k: int = 5,
        agent: str | None = None,
        exclude: Sequence[str] = (),
        filters: SearchFilters | Mapping[str, Any] | None = None,
        weights: SearchWeights | Mapping[str, Any] | None = None,
    ) -> SearchResults:
        """Student phase (before planning): the k experiences that worked for tasks like this one,
        each with its score breakdown and how it was found, plus the nearest concept documents.

        ``steps_so_far`` (``{"action": …, "arguments": {…}}``) shift the score from the
        problem-goal match to the step match as they accumulate (λ(t)). ``filters`` restrict
        domains, kinds, statuses, minimum success or quality; ``weights`` override any setting
        of docs/design.md §3 for this call (see :class:`kbgraph.search.params.SearchWeights`).
        Raises InvalidInputError for an empty or absurd query (k < 1, NaN weights, 100 kB text);
        k above 100 is clamped with a note in ``results.notes``.
        """
        check_bounds(task=task, problem=problem, goal=goal, domain=domain, agent=agent, exclude=list(exclude),
                       steps_so_far=[s.model_dump() if isinstance(s, QueryStep) else s for s in steps_so_far])
        query = parse_query({
            "task": task, "problem": problem, "goal": goal, "domain": domain,
            "steps_so_far": [s.model_dump() if isinstance(s, QueryStep) else dict(s) for s in steps_so_far],
            "k": k, "agent": agent, "exclude": list(exclude),
        })
        return self.student.search(
            query, filters=dict(filters) if isinstance(filters, Mapping) else filters,
            weights=dict(weights) if isinstance(weights, Mapping) else weights,
        )

    def refine(
        self,
        problematic_steps: Sequence[ProblematicStep | Mapping[str, Any]],
        *,
        domain: str | Sequence[str] | None = None,
        k: int = 5, agent: str | None = None,
        weights: RefineWeights | Mapping[str, Any] | None = None,
        exclude_runs: Sequence[str] = (), step_names: Sequence[str] | None = None,
    ) -> RefineResults:
        """Teacher phase (while executing): for steps that went wrong (``action``, ``arguments``, ``error``,
        ``issue_type``), the stored steps that match them — by step similarity, issue match and precision — and the
        failure modes that failed the same way, grouped with how often seen and recovered, each with its most useful
        recovery. ``exclude_runs`` leaves runs out (a leave-one-run-out evaluation); ``step_names`` names the
        steps in problems and notes, one a step (else ``problematic_steps[i]``: a caller that numbers its steps
        otherwise names them its way). See :mod:`kbgraph.search.teacher`."""
        check_bounds(problematic_steps=[s.model_dump() if isinstance(s, ProblematicStep) else s for s in problematic_steps],
                     domain=domain if isinstance(domain, str | None) else list(domain), agent=agent,
                     exclude_runs=list(exclude_runs))
        teacher = TeacherRetriever(self.gateway, self.embedder, self.namespace, self.student.namespace_size, self.settings.search)
        return teacher.refine(problematic_steps, domain=domain, k=k, agent=agent, weights=weights,
                              exclude_runs=exclude_runs, step_names=step_names)

    def search_steps(
        self, action: str, arguments: Mapping[str, Any] | None = None, *, text: str | None = None,
        domain: str | None = None, agent: str | None = None, k: int = 5, alpha: float | None = None,
    ) -> list[StepHit]:
        """MAEL step-wise retrieval: stored steps like the one about to be taken, scored α·similarity
        + (1−α)·reward (α: ``learning.step_alpha``), shared bank and ``agent``'s (kbgraph.search.steps)."""
        check_bounds(action=action, arguments=dict(arguments or {}), text=text, domain=domain, agent=agent)
        steps = StepRetriever(self.gateway, self.embedder, self.namespace, self.student.namespace_size, self.settings.search)
        return steps.search(
            action, dict(arguments or {}), text=text, domain=domain, agent=agent, k=k,
            alpha=self.settings.learning.step_alpha if alpha is None else alpha)

    def search_query(self, /, query: SearchQuery | Mapping[str, Any], **options: Any) -> SearchResults:
        """:meth:`search` with a ready-made :class:`SearchQuery` (or its dict)."""
        return self.student.search(parse_query(dict(query) if isinstance(query, Mapping) else query), **options)

    # -- learning ----------------------------------------------------------------------------------

    def record_feedback(self, /, event: FeedbackEvent | Mapping[str, Any] | None = None, **fields: Any) -> FeedbackReport:
        """Records what an agent did with search results, atomically (see :mod:`kbgraph.learning.feedback`)::

            kb.record_feedback(retrieved=results.ids, used=[results.hits[0].id], outcome=True,
                               agent="agent-a", step_rewards=[{"experience_id": …, "order": 0, "reward": 1}])

        With ``task`` (the task's text) the outcome is also remembered for tasks like it: search
        then favours what worked for similar tasks and avoids what failed on them.
        Updates retrieved/used/succeeded, the quality EMA, usage impact and last-used time of the
        experiences, step rewards (MAEL) and the agent's ability in the task's domain (EDV).
        Raises InvalidInputError, writing nothing, for unknown experiences or steps."""
        if event is not None and fields:
            raise InvalidInputError(["feedback: give an event or keyword fields, not both"])
        return FeedbackRecorder(self.gateway, self.namespace, self.settings.learning, self.embedder).record(
            event if event is not None else fields)

    @property
    def maintainer(self) -> Maintainer:
        return Maintainer(self.gateway, self.namespace, self.settings.learning, relink=self._relink)

    def _relink(self, run_id: str) -> None:
        # Merged and archived experiences took their relations with them: link what stays active
        # again. Maintenance merged by its own plan, so this pass merges nothing more.
        pipeline_from_settings(self).consolidate(merge=False, run=run_id)

    def maintain(self, dry_run: bool = False, now: datetime | None = None) -> MaintenanceReport:
        """AutoRefine maintenance (see :mod:`kbgraph.learning.maintenance`): merge near-duplicates and archive
        the experiences that keep being retrieved but do not help. ``dry_run`` returns exactly the changes a
        real run at the same ``now`` (default: the clock; scores decay with time) would make, and changes nothing."""
        return self.maintainer.run(dry_run=dry_run, now=now)

    def restore(self, run_id: str | None = None, ids: Sequence[str] = ()) -> list[str]:
        """Undoes pruning: archived experiences become active (searchable) again — those in
        ``ids``, every one archived by maintenance run ``run_id``, or by default the last run's."""
        return self.maintainer.restore(run_id, ids)

    def add_verified(
        self, items: Iterable[Experience | Mapping[str, Any]], votes: Mapping[str, bool]
    ) -> VerifiedReport:
        """EDV verify stage: stores candidate experiences according to the votes of the agents
        that executed their task — all approve: the shared bank; some: each approver's private
        bank; none: ``rejected`` (kept for audit, never retrieved). See :mod:`kbgraph.learning.agents`."""
        return add_verified(self._writer, items, votes)

    def ability_matrix(self) -> AbilityMatrix:
        """Agent × domain attempts, successes and smoothed success rate, from reported outcomes."""
        return ability_matrix(self.gateway, self.namespace)

    def best_agents(self, domain: str | None = None, task: str | None = None) -> list[AbilityCell]:
        """Agents for a task, best first (EDV): by their record in ``domain``, or — given only the
        ``task`` text — in the domain of the experiences most like it."""
        return best_agents(self.gateway, self.namespace,
                           lambda text: [h.experience.domain for h in self.search(text, k=5).hits], domain, task)

    def learning_state(self, ids: Sequence[str]) -> list[ExperienceLearningState]:
        """Counters, quality and current utility of experiences (unknown ids are left out)."""
        return FeedbackRecorder(self.gateway, self.namespace, self.settings.learning).counters(ids)

    # -- export and import -------------------------------------------------------------------------

    def export(self, target: str | Path, on_progress: Callable[[str, int, int | None], None] | None = None) -> ExportReport:
        """Writes this namespace to a JSON Lines file (``-``: stdout); see :mod:`kbgraph.transfer`."""
        from kbgraph.transfer import export_to

        return export_to(self.gateway, self.namespace, target, on_progress=on_progress)

    def import_file(
        self, path: str | Path, on_progress: Callable[[str, int, int | None], None] | None = None
    ) -> ImportReport:
        """Reads an export into this namespace; what it already holds is left as it is."""
        from kbgraph.transfer import import_file

        return import_file(self.gateway, self.namespace, Path(path), batch_size=self.settings.write_batch_size,
                           on_progress=on_progress)

    def export_skills(self, directory: str | Path, *, min_runs: int | None = None) -> SkillsExportReport:
        """Writes what this namespace learnt as Agent Skills: one folder per meta-concept document or
        workflow that worked in at least ``min_runs`` runs (default 2), each with a ``SKILL.md`` and
        example runs in ``references/``. Re-exporting rewrites nothing that did not change and
        removes the folders of skills that are gone, never anything kbgraph did not write. Raises
        InvalidInputError, writing nothing, for a folder that is a file or not writable. See
        :mod:`kbgraph.skills.export` and docs/skills.md."""
        from kbgraph.skills.export import DEFAULT_MIN_RUNS, export_skills

        return export_skills(self.gateway, self.namespace, directory,
                             min_runs=DEFAULT_MIN_RUNS if min_runs is None else min_runs)

    # -- py2neo ------------------------------------------------------------------------------------

    def py2neo_graph(self) -> Any:
        """A connected ``py2neo.Graph`` on this knowledge base's server and database, for code that
        still uses py2neo (end-of-life; needs the ``kbgraph[py2neo]`` extra). Queries through it are
        not scoped to this namespace: filter on ``kb`` yourself. What works on Neo4j 5: docs/cypher-and-browser.md, *py2neo*."""
        from kbgraph.store.py2neo_bridge import py2neo_graph

        return py2neo_graph(self.settings.model_copy(update={"neo4j_database": self.gateway.database}))

    # -- deleting --------------------------------------------------------------------------------

    def delete(self, ids: Sequence[str]) -> int:
        """Deletes experiences (with their steps and failure modes) by id; returns how many."""
        check_bounds(ids=list(ids))
        return self.store.delete(ids)

    def clear(self) -> None:
        """Deletes everything in this namespace (and nothing outside it)."""
        self.link_state.clear()
        self.store.delete_namespace()

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        if self._student is not None:
            self._student.close()
        if self._owns_driver:
            self.driver.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
