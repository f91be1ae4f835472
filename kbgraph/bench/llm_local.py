"""The LLM path next to the rule-based path on the same real runs (``kbgraph bench llm``).

Each path ingests the same runs into a namespace of its own (cleared first) through the whole
pipeline, on the real Neo4j and embedder: the rule-based abstractor and reflector, then the LLM
abstractor, reflector and document writer against an OpenAI-compatible endpoint (by default the
local llama-cpp-python server of :mod:`kbgraph.llm.local_server`). Per path: seconds per trajectory
(the whole ingest, divided by the runs) and per stage; for the LLM path, how each question ended
(valid at the first try, repaired, valid after a retry, fell back to the rules: the report's
counters) and, for every item, whether what was stored came from the model or from the rules.
One output of each kind — an experience, the lessons of one run, a concept document — is kept
per path, so what the two paths write can be read side by side; on the LLM path the sample is
one the model wrote when there is one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kbgraph.core.errors import InvalidInputError
from kbgraph.ingest.integrate_evidence import Statement
from kbgraph.ingest.llm_fallback import LLMStages
from kbgraph.ingest.pipeline import IngestPipeline, pipeline_from_settings
from kbgraph.ingest.read import records_from_items
from kbgraph.ingest.report import LLMCounts
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import ConceptInsight, Experience, Trajectory
from kbgraph.core.settings import Settings

__all__ = ["DEFAULT_RUNS_FILE", "first_runs", "llm_shares", "run_llm_benchmark"]

DEFAULT_RUNS_FILE = Path("../shared/data/real_runs/airline_gpt4o.jsonl")
DEFAULT_PREFIX = "bench-llm"
PATHS = ("rules", "llm")
#: (path, runs done, runs)
BenchProgress = Callable[[str, int, int], None]


def first_runs(path: Path, count: int) -> list[dict[str, Any]]:
    """The first ``count`` runs of a JSON Lines file that made at least one tool call, one per task
    (real_runs holds four runs of each task: five runs are then five tasks)."""
    runs: list[dict[str, Any]] = []
    tasks: set[str] = set()
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            run = json.loads(line)
            if run.get("steps") and run.get("task") not in tasks:
                runs.append(run)
                tasks.add(run.get("task"))
            if len(runs) == count:
                return runs
    raise InvalidInputError([f"{path}: only {len(runs)} runs with tool calls of distinct tasks, {count} asked for"])


def llm_shares(counts: dict[str, LLMCounts]) -> dict[str, dict[str, float]]:
    """Per stage and over all stages: the share of questions valid at the first try, repaired or
    retried, and fallen back to the rules."""
    rows = dict(counts)
    rows["all"] = LLMCounts(**{name: sum(getattr(c, name) for c in counts.values())
                               for name in ("calls", "valid_first_try", "repaired", "retried", "fell_back")})
    return {stage: {"calls": c.calls,
                    "valid_first_try": round(c.valid_first_try / c.calls, 3) if c.calls else 0.0,
                    "repaired_or_retried": round((c.repaired + c.retried) / c.calls, 3) if c.calls else 0.0,
                    "fell_back": round(c.fell_back / c.calls, 3) if c.calls else 0.0}
            for stage, c in rows.items()}


def _experience_text(experience: Experience) -> dict[str, Any]:
    return {"problem": experience.problem, "goal": experience.goal,
            "steps": [f"{s.action}: {s.text}" for s in experience.steps],
            "failure_modes": [f"{f.description} (recovery: {f.recovery or 'none'})" for f in experience.failure_modes]}


class _Recorder:
    """Stands in for a pipeline's stages: for every item, what was produced, how long it took, and
    whether the model or the rules produced it (the LLM stages count their fallbacks; a count that
    moved during the call means this item fell back)."""

    name = "recorded"

    def __init__(self, pipeline: IngestPipeline, stages: LLMStages | None):
        self.stages = stages
        self.items: dict[str, list[dict[str, Any]]] = {"abstract": [], "reflect": [], "integrate": []}
        self.abstractor, self.reflector, self.writer = pipeline.abstractor, pipeline.reflector, pipeline.document_writer
        pipeline.abstractor = pipeline.reflector = self
        if pipeline.document_writer is not None:
            pipeline.document_writer = self

    def abstract(self, trajectory: Trajectory) -> Experience:
        experience: Experience = self._call("abstract", trajectory.id, lambda: self.abstractor.abstract(trajectory),
                                            _experience_text)
        return experience

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]:
        pairs: list[ConceptInsight] = self._call(
            "reflect", trajectory.id, lambda: self.reflector.reflect(trajectory, experience),
            lambda pairs: [f"{p.concept}: {p.insight}" for p in pairs])
        return pairs

    def reword(self, name: str, statements: Sequence[Statement]) -> list[str]:
        assert self.writer is not None
        writer = self.writer
        reworded: list[str] = self._call("integrate", name, lambda: writer.reword(name, statements), list)
        return reworded

    def _call(self, stage: str, item: str, produce: Callable[[], Any], shown: Callable[[Any], Any]) -> Any:
        before = self._fell_back(stage)
        started = time.perf_counter()
        result = produce()
        seconds = time.perf_counter() - started
        by = "rules" if self.stages is None else "rules (fell back)" if self._fell_back(stage) > before else "model"
        record = {"item": item, "by": by, "seconds": round(seconds, 2), "output": shown(result)}
        if self.stages is not None:
            record["model_said"] = list(self.stages.clients[stage].last_answers)  # every attempt, as written
        self.items[stage].append(record)
        return result

    def _fell_back(self, stage: str) -> int:
        if self.stages is None:
            return 0
        counts = self.stages.counts().get(stage)
        return counts.fell_back if counts is not None else 0


def _sample(items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first item the model produced, else the first one."""
    return next((i for i in items if i["by"] == "model"), items[0] if items else None)


def _run_path(kb: KnowledgeBase, runs: list[dict[str, Any]], on_progress: BenchProgress | None, path: str,
              ) -> dict[str, Any]:
    pipeline = pipeline_from_settings(kb)
    recorder = _Recorder(pipeline, pipeline.llm)
    done = 0

    def progress(stage: str, count: int, total: int | None) -> None:
        nonlocal done
        if stage == "ingest" and on_progress is not None:
            done = count
            on_progress(path, done, len(runs))

    pipeline.on_progress = progress
    report = pipeline.ingest_records(lambda: records_from_items(runs, None))
    documents = kb.gateway.read("meta_concepts_top", kb=kb.namespace, limit=1000)
    written_by = {i["item"]: i["by"] for i in recorder.items["integrate"]}
    said = {i["item"]: i.get("model_said") for i in recorder.items["integrate"]}
    document = next((d for d in documents if written_by.get(d["name"]) == "model"), documents[0] if documents else None)
    result: dict[str, Any] = {
        "seconds_total": report.total_seconds,
        "seconds_per_trajectory": round(report.total_seconds / len(runs), 2),
        "stage_seconds": report.stage_seconds,
        "experiences": report.experiences_new, "meta_concepts": report.meta_concepts, "insights": report.insights,
        "samples": {
            "experience": _sample(recorder.items["abstract"]),
            "insights": _sample(recorder.items["reflect"]),
            "document": None if document is None else {
                "name": document["name"], "by": written_by.get(document["name"], "rules"),
                "document": document["document"], "model_said": said.get(document["name"])},
        },
        "items": recorder.items,
    }
    if report.llm:
        result["llm"] = {stage: counts.model_dump() for stage, counts in report.llm.items()}
        result["shares"] = llm_shares(report.llm)
    return result


def run_llm_benchmark(
    kb: KnowledgeBase, runs: list[dict[str, Any]], llm_settings: dict[str, str], prefix: str = DEFAULT_PREFIX,
    keep: bool = False, on_progress: BenchProgress | None = None,
) -> dict[str, Any]:
    """Ingests ``runs`` along each path into ``<prefix>-rules`` and ``<prefix>-llm`` (cleared first;
    dropped afterwards unless ``keep``), on ``kb``'s driver and embedder. ``llm_settings`` are the
    settings (field → value) of the LLM path, e.g. :meth:`LocalLlamaServer.client_settings`."""
    if not runs:
        raise InvalidInputError(["runs: no run to ingest"])
    result: dict[str, Any] = {"runs": [r["id"] for r in runs], "endpoint": llm_settings.get("llm_base_url"),
                              "model": llm_settings.get("llm_model"), "paths": {}}
    kb.embedder.embed(["load the embedding model before either path is timed"])
    for path in PATHS:
        namespace = f"{prefix}-{path}"
        overrides: dict[str, Any] = dict(llm_settings) if path == "llm" else {"abstractor": "rules",
                                                                             "reflector": "rules"}
        settings = Settings(namespace=namespace, neo4j_database=kb.gateway.database, **overrides)
        target = KnowledgeBase(kb.driver, kb.embedder, namespace=namespace, database=kb.gateway.database,
                               settings=settings)
        target.clear()
        try:
            result["paths"][path] = _run_path(target, runs, on_progress, path)
        finally:
            if not keep:
                target.clear()
    return result
