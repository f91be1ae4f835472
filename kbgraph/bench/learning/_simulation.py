"""The simulation itself (:class:`LearningSimulation`): a fresh namespace, the passes of the control
and of learning, the re-ingest rounds, all measured into a :class:`LearningReport`."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kbgraph.bench.learning._data import SimulationData
from kbgraph.bench.learning._figures import (
    CounterTotals,
    GrowthVerdict,
    IngestSummary,
    PassComparison,
    PassDelta,
    PassFigures,
    QueryOutcome,
    RoundFigures,
    RunName,
    aggregate_pass,
    compare_passes,
    growth_verdict,
    learning_minus_control,
)
from kbgraph.bench.learning._perturb import perturb_round, value_pools
from kbgraph.bench.learning._tasks import oracle_success, state_changing_actions
from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.kb import KnowledgeBase
from kbgraph.search.eval.data import EvalQuery
from kbgraph.search.eval.evaluate import expand_to_trajectories, hit_sources
from kbgraph.core.settings import Settings

#: Namespaces people work in: the simulation clears its namespace, so these need --force.
PROTECTED_NAMESPACES = frozenset({"default", "demo"})
SIM_AGENT = "sim-agent"

#: (stage, done, total)
Progress = Callable[[str, int, int | None], None]


class SimulationOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passes: int = Field(default=2, ge=1, le=50)
    reingest_rounds: int = Field(default=5, ge=0, le=100)
    learning: bool = Field(default=True, description="Feedback and maintenance; False runs the control alone.")
    control: bool = Field(default=True, description="With learning: also replay the control, before learning.")
    k: int = Field(default=10, ge=1, le=100)
    seed: int = Field(default=0)
    bounded_factor: float = Field(default=1.5, gt=1.0)


class LearningReport(BaseModel):
    namespace: str
    data_dir: str
    trajectories: int
    queries: int
    options: SimulationOptions
    ingest: IngestSummary
    control: list[PassFigures] = Field(default_factory=list)
    learning: list[PassFigures] = Field(default_factory=list)
    comparisons: list[PassComparison] = Field(default_factory=list)
    learning_minus_control: list[PassDelta] = Field(default_factory=list)
    rounds: list[RoundFigures] = Field(default_factory=list)
    growth: GrowthVerdict | None = None
    counters: dict[str, CounterTotals] = Field(default_factory=dict)
    control_changed_counters: bool | None = None
    feedback_changed_counters: bool | None = None
    maintenance_available: bool = True
    outcomes: dict[str, list[QueryOutcome]] = Field(
        default_factory=dict, description="Per run and pass (e.g. 'learning pass 2'): every task's outcome.")
    notes: list[str] = Field(default_factory=list)
    seconds: float = 0.0
    plot: str | None = None


def control_settings(settings: Settings) -> Settings:
    """Settings for a control-only run: kbgraph's own maintenance at growth checkpoints off too, so
    the control has no maintenance at all."""
    return settings.model_copy(update={
        "learning": settings.learning.model_copy(update={"maintenance_first_checkpoint": 0})})


def parse_options(values: SimulationOptions | Mapping[str, Any] | None = None) -> SimulationOptions:
    if isinstance(values, SimulationOptions):
        return values
    try:
        return SimulationOptions.model_validate(dict(values or {}))
    except ValidationError as error:
        raise InvalidInputError(validation_problems("simulation", error, strip_value_error=True)) from None


# -- the simulation -----------------------------------------------------------------------------------


class LearningSimulation:
    """Runs the simulation of the package docstring on one knowledge base (whose namespace it clears).

    For a control-only run (``learning=False``) build the knowledge base with
    :func:`control_settings`, or kbgraph maintains by itself while the rounds ingest."""

    def __init__(self, kb: KnowledgeBase, data: SimulationData,
                 options: SimulationOptions | Mapping[str, Any] | None = None, on_progress: Progress | None = None):
        self.kb = kb
        self.data = data
        self.options = parse_options(options)
        self.on_progress = on_progress
        self.notes: list[str] = []
        self.maintenance_available = callable(getattr(kb, "maintain", None))

    def _progress(self, stage: str, done: int, total: int | None) -> None:
        if self.on_progress is not None:
            self.on_progress(stage, done, total)

    def run(self) -> LearningReport:
        started = time.perf_counter()
        o = self.options
        if o.learning and not self.maintenance_available:
            self.notes.append("kb.maintain is not available in this kbgraph: passes and rounds ran without "
                              "maintenance (feedback only)")
        self.kb.clear()
        with tempfile.TemporaryDirectory(prefix="kbgraph-learning-") as work:
            ingest = self._ingest_base(Path(work))
            report = LearningReport(
                namespace=self.kb.namespace, data_dir=self.data.data_dir, trajectories=len(self.data.trajectories),
                queries=len(self.data.queries), options=o, ingest=ingest,
                maintenance_available=self.maintenance_available,
            )
            report.counters["after_ingest"] = self.counter_totals()
            if o.control or not o.learning:
                report.control = [self._replay("control", p, report) for p in range(1, o.passes + 1)]
                report.counters["after_control"] = self.counter_totals()
                report.control_changed_counters = report.counters["after_control"] != report.counters["after_ingest"]
            if o.learning:
                before = self.counter_totals()
                report.learning = [self._replay("learning", p, report) for p in range(1, o.passes + 1)]
                report.counters["after_learning"] = self.counter_totals()
                report.feedback_changed_counters = _counters_moved(before, report.counters["after_learning"])
            before_rounds = self._size()["total"]
            report.rounds = self._rounds(Path(work), before_rounds)
        report.comparisons = [c for c in (compare_passes(report.learning), compare_passes(report.control)) if c]
        report.learning_minus_control = learning_minus_control(report.learning, report.control)
        report.growth = growth_verdict(before_rounds, [r.total for r in report.rounds], o.bounded_factor)
        if report.rounds:
            report.counters["after_rounds"] = self.counter_totals()
        report.notes = self.notes
        report.seconds = round(time.perf_counter() - started, 1)
        return report

    # -- steps

    def _ingest(self, path: Path, label: str) -> Any:
        return self.kb.ingest([path], on_progress=lambda stage, done, total: self._progress(f"{label}: {stage}", done, total))

    def _ingest_base(self, work: Path) -> IngestSummary:
        started = time.perf_counter()
        path = work / "retail-train.jsonl"
        _write_jsonl(path, self.data.trajectories)
        report = self._ingest(path, "ingest")
        size = self._size()
        return IngestSummary(
            records=report.records_read, experiences_new=report.experiences_new,
            experiences_merged=report.experiences_merged, abstract_experiences=report.abstract_experiences,
            total=size["total"], seconds=round(time.perf_counter() - started, 1),
            growth_checkpoint_run=getattr(report, "maintenance_run", None),
        )

    def _replay(self, run: RunName, pass_no: int, report: LearningReport) -> PassFigures:
        started = time.perf_counter()
        learning = run == "learning"
        outcomes: list[QueryOutcome] = []
        label = f"{run} pass {pass_no}"
        for done, query in enumerate(self.data.queries, 1):
            outcome = self._task(query)
            if learning:
                self.kb.record_feedback(retrieved=outcome.retrieved, used=[outcome.used] if outcome.used else [],
                                        outcome=outcome.success, agent=SIM_AGENT, domain=query.domain,
                                        task=query.query if outcome.used else None)
            outcomes.append(outcome)
            self._progress(label, done, len(self.data.queries))
        maintenance = self._maintain() if learning else None
        metrics = aggregate_pass(outcomes, self.data.qrels, self.options.k)
        report.outcomes[label] = outcomes
        size = self._size()
        return PassFigures(
            **metrics.model_dump(), run=run, pass_no=pass_no, active=size["active"], archived=size["archived"],
            total=size["total"], merged=maintenance[1] if maintenance else 0,
            archived_by_maintenance=maintenance[2] if maintenance else 0,
            maintenance_run=maintenance[0] if maintenance else None, seconds=round(time.perf_counter() - started, 1),
        )

    def _task(self, query: EvalQuery) -> QueryOutcome:
        k = self.options.k
        results = self.kb.search(
            query.query, domain=query.domain, k=k, agent=SIM_AGENT, exclude=sorted(query.exclude),
            steps_so_far=[step.model_dump() for step in query.steps_so_far or []],
        )
        ids = results.ids()
        sources, failed = hit_sources(self.kb.gateway, self.kb.namespace, ids)
        used = results.hits[0].experience if results.hits else None
        return QueryOutcome(
            qid=query.qid, retrieved=ids, ranking=expand_to_trajectories(ids, sources, query.exclude, k, failed),
            used=ids[0] if ids else None,
            used_actions=list(state_changing_actions(s.action for s in used.steps)) if used else [],
            success=oracle_success(used, self.data.sequences[query.qid]),
        )

    def _maintain(self) -> tuple[str | None, int, int] | None:
        """(run id, merged, archived) of one maintenance run, or None when kb.maintain is missing."""
        maintain = getattr(self.kb, "maintain", None)
        if not callable(maintain):
            return None
        result = maintain(dry_run=False)
        changes = list(_field(result, "changes") or [])
        actions = [_field(change, "action") for change in changes]
        return _field(result, "run_id"), actions.count("merge"), actions.count("archive")

    def _rounds(self, work: Path, before: int) -> list[RoundFigures]:
        rounds: list[RoundFigures] = []
        if self.options.reingest_rounds == 0:
            return rounds
        pools = value_pools(self.data.trajectories)
        previous = before
        for round_no in range(1, self.options.reingest_rounds + 1):
            started = time.perf_counter()
            path = work / f"retail-train-r{round_no}.jsonl"
            _write_jsonl(path, perturb_round(self.data.trajectories, round_no, self.options.seed, pools))
            ingest = self._ingest(path, f"round {round_no}")
            maintenance = self._maintain() if self.options.learning else None
            size = self._size()
            rounds.append(RoundFigures(
                round=round_no, records=ingest.records_read, experiences_new=ingest.experiences_new,
                experiences_merged=ingest.experiences_merged, active=size["active"], archived=size["archived"],
                total=size["total"], growth=size["total"] - previous, merged=maintenance[1] if maintenance else 0,
                archived_by_maintenance=maintenance[2] if maintenance else 0,
                maintenance_run=maintenance[0] if maintenance else None,
                growth_checkpoint_run=getattr(ingest, "maintenance_run", None),
                seconds=round(time.perf_counter() - started, 1),
            ))
            previous = size["total"]
            self._progress("re-ingest rounds", round_no, self.options.reingest_rounds)
        return rounds

    # -- measurements

    def _size(self) -> dict[str, int]:
        by_status = self.kb.stats().experiences_by_status
        return {"active": by_status.get("active", 0), "archived": by_status.get("archived", 0),
                "total": sum(by_status.values())}

    def counter_totals(self) -> CounterTotals:
        ids = list(self.kb.store.iter_ids())
        states = [s for start in range(0, len(ids), 1000) for s in self.kb.learning_state(ids[start:start + 1000])]
        return CounterTotals(
            experiences=len(ids), retrieved=sum(s.retrieved for s in states), used=sum(s.used for s in states),
            succeeded=sum(s.succeeded for s in states), quality_sum=round(sum(s.quality for s in states), 6),
        )


def _counters_moved(before: CounterTotals, after: CounterTotals) -> bool:
    return (after.retrieved, after.used, after.succeeded) != (before.retrieved, before.used, before.succeeded)


def _field(value: Any, name: str) -> Any:
    """A field of a report or change, whether it is a model or a dict."""
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
