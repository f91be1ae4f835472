"""The data a simulation replays: the shared retail trajectories, queries and qrels, checked and
read together (:func:`load_simulation_data`), and smaller subsets of them (:func:`subset`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from kbgraph.bench.learning._tasks import task_sequences
from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.models import Trajectory
from kbgraph.search.eval.data import EvalQuery, load_qrels, load_queries, qrels_by_query

#: Where the shared data lives, relative to a checkout (as ``kbgraph eval``'s ``--corpus``).
DEFAULT_DATA_DIR = Path("../shared/data")
TRAJECTORY_FILE = Path("trajectories/retail_train.jsonl")
QUERY_FILE = Path("eval/retail_queries.jsonl")
QRELS_FILE = Path("eval/retail_qrels.jsonl")


class SimulationData(BaseModel):
    """What one simulation replays: the trajectories it ingests, the queries (tasks) in file order,
    their judgements and each query's task sequence."""

    data_dir: str
    trajectories: list[dict[str, Any]]
    queries: list[EvalQuery]
    qrels: dict[str, dict[str, float]]
    sequences: dict[str, tuple[str, ...]]


def _read_trajectories(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InvalidInputError([f"{path}: no such file (the simulation reads the shared data relative to the "
                                 f"current directory: run it from the repository root or pass --data)"])
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    for line in read_jsonl(path):
        if line.value is None:
            problems.append(f"{line.where}: {line.problem}")
            continue
        try:
            Trajectory.model_validate(line.value)
        except ValidationError as error:
            problems += validation_problems(line.where, error)
            continue
        records.append(line.value)
    if not records and not problems:
        problems.append(f"{path}: empty file, no trajectories in it")
    if problems:
        raise InvalidInputError(problems)
    return records


def load_simulation_data(data_dir: Path = DEFAULT_DATA_DIR) -> SimulationData:
    """The retail trajectories, queries and qrels under ``data_dir``; every problem of every file is
    reported together, naming file and line."""
    problems: list[str] = []
    trajectories: list[dict[str, Any]] = []
    queries: list[EvalQuery] = []
    qrels: dict[str, dict[str, float]] = {}
    for step in ("trajectories", "queries", "qrels"):
        try:
            if step == "trajectories":
                trajectories = _read_trajectories(data_dir / TRAJECTORY_FILE)
            elif step == "queries":
                queries = load_queries(data_dir / QUERY_FILE)
            else:
                qrels = qrels_by_query(load_qrels(data_dir / QRELS_FILE))
        except InvalidInputError as invalid:
            problems += invalid.problems
    if problems:
        raise InvalidInputError(problems)
    unjudged = [q.qid for q in queries if q.qid not in qrels]
    if unjudged:
        raise InvalidInputError([f"{data_dir / QRELS_FILE}: no judgements for {', '.join(unjudged[:10])}"])
    actions = {str(t["id"]): [str(s["action"]) for s in t.get("steps") or []] for t in trajectories}
    sequences = task_sequences({q.qid: qrels[q.qid] for q in queries}, actions)
    return SimulationData(data_dir=str(data_dir), trajectories=trajectories, queries=queries,
                          qrels={q.qid: qrels[q.qid] for q in queries}, sequences=sequences)


def subset(data: SimulationData, queries: int | None = None, trajectories: int | None = None,
           relevant_per_query: int = 3) -> SimulationData:
    """A smaller simulation: the first ``queries`` queries and ``trajectories`` trajectories that
    include up to ``relevant_per_query`` relevant ones of each chosen query (the rest in file
    order). The qrels keep only judgements of the chosen trajectories; task sequences stay those
    of the whole corpus."""
    problems = [f"{name}: {value}: must be at least 1" for name, value in
                (("queries", queries), ("trajectories", trajectories)) if value is not None and value < 1]
    if problems:
        raise InvalidInputError(problems)
    chosen_queries = data.queries[:queries] if queries else list(data.queries)
    records = data.trajectories
    if trajectories is not None and trajectories < len(records):
        order = {str(t["id"]): n for n, t in enumerate(records)}
        relevant = [sorted((d for d, rel in data.qrels[q.qid].items() if rel > 0 and d in order), key=order.__getitem__)
                    for q in chosen_queries]
        picked: dict[str, None] = {}
        for depth in range(relevant_per_query):
            for docs in relevant:
                if depth < len(docs) and len(picked) < trajectories:
                    picked.setdefault(docs[depth])
        uncovered = [q.qid for q, docs in zip(chosen_queries, relevant, strict=True) if not set(docs) & set(picked)]
        if uncovered:
            raise InvalidInputError([f"trajectories: {trajectories}: too few to hold a relevant trajectory of every "
                                     f"chosen query ({len(uncovered)} uncovered, e.g. {uncovered[0]})"])
        for record in records:
            if len(picked) >= trajectories:
                break
            picked.setdefault(str(record["id"]))
        records = [t for t in records if str(t["id"]) in picked]
    kept = {str(t["id"]) for t in records}
    return SimulationData(
        data_dir=data.data_dir, trajectories=list(records), queries=chosen_queries,
        qrels={q.qid: {d: r for d, r in data.qrels[q.qid].items() if d in kept} for q in chosen_queries},
        sequences={q.qid: data.sequences[q.qid] for q in chosen_queries},
    )
