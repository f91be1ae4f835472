"""The learning-loop simulation (issue 5, "evidence that the loop works"): ``kbgraph bench learning``.

The retail development queries of the retrieval benchmark (``../shared/data/eval``) are replayed
as tasks an agent performs with kbgraph's help, and an oracle says whether the help worked.

1. **Fresh namespace.** The namespace is cleared, then ``retail_train.jsonl`` (500 tau-bench retail
   trajectories) is ingested with :meth:`KnowledgeBase.ingest`.
2. **Passes** p = 1..P over the queries, always in file order. For each query:
   ``kb.search(query, domain="retail", steps_so_far=…, k=10, agent="sim-agent")``; its nDCG@10,
   Recall@10 and MRR against the qrels, after mapping the ranked experiences to the trajectories
   they stand for (:func:`kbgraph.search.evaluate.expand_to_trajectories`, as ``kbgraph eval``);
   the agent *uses* the top-1 hit and the **oracle** reports success iff that experience's
   state-changing action sequence (its steps' actions without get_/find_/list_/calculate/search/
   think — for an abstract experience, its own steps likewise) equals the task's, which is the
   sequence shared by every trajectory the qrels judge relevant. With learning on, each task ends
   with ``kb.record_feedback(retrieved=<the k hits>, used=[top-1], outcome=<oracle>,
   agent="sim-agent", domain="retail")`` and every pass with ``kb.maintain()`` (kbgraph also
   maintains by itself at its growth checkpoints while ingesting). Each pass records success@1,
   nDCG@10, Recall@10, MRR and the repository's size (active, archived, merged by that pass's
   maintenance).
   **The control** replays the same passes with neither feedback nor maintenance. Searching
   writes nothing, so it runs on the same freshly ingested namespace *before* the learning passes
   (the report checks that the counters did not move); ``learning=False`` runs only the control.
3. **Re-ingest rounds** r = 1..R: the same trajectories with small perturbations (seeded per round
   and record: every order id, item id, payment method, e-mail and zip code swapped for another of
   the same kind from the corpus, digits of addresses changed, a filler word added to or dropped
   from the task; actions untouched) under new ids (``retail-train-12-r3``) go to a temporary
   JSONL, are ingested, and ``kb.maintain()`` runs (with learning on). Each round records the
   repository's size. **Bounded** = the total after round R is at most ``bounded_factor`` (1.5) ×
   the total after round 1, and the growth flattens (round R adds no more than round 1, give or
   take 1 % of round 1's total).
4. Figures come back as a :class:`LearningReport`; :func:`save_plot` draws them (success@1 and
   nDCG@10 per pass, learning next to the control; repository size per round).

The oracle, the perturbation, the per-pass aggregation, the pass comparison and the growth verdict
are pure functions; :class:`LearningSimulation` runs them against a knowledge base.
"""

from __future__ import annotations

import json
import math
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kbgraph.errors import InvalidInputError, validation_problems
from kbgraph.jsonl import read_jsonl
from kbgraph.kb import KnowledgeBase
from kbgraph.models import Experience, Trajectory
from kbgraph.search.eval_data import EvalQuery, load_qrels, load_queries, qrels_by_query
from kbgraph.search.evaluate import expand_to_trajectories, hit_sources
from kbgraph.search.metrics import evaluate
from kbgraph.settings import Settings

__all__ = [
    "DEFAULT_DATA_DIR",
    "PROTECTED_NAMESPACES",
    "CounterTotals",
    "GrowthVerdict",
    "LearningReport",
    "LearningSimulation",
    "PassComparison",
    "PassDelta",
    "PassFigures",
    "PassMetrics",
    "QueryOutcome",
    "RoundFigures",
    "SimulationData",
    "SimulationOptions",
    "ValuePools",
    "aggregate_pass",
    "compare_passes",
    "control_settings",
    "learning_minus_control",
    "growth_verdict",
    "load_simulation_data",
    "oracle_success",
    "perturb_round",
    "perturb_trajectory",
    "save_plot",
    "state_changing_actions",
    "subset",
    "task_sequences",
    "value_pools",
]

#: Where the shared data lives, relative to a checkout (as ``kbgraph eval``'s ``--corpus``).
DEFAULT_DATA_DIR = Path("../shared/data")
TRAJECTORY_FILE = Path("trajectories/retail_train.jsonl")
QUERY_FILE = Path("eval/retail_queries.jsonl")
QRELS_FILE = Path("eval/retail_qrels.jsonl")
#: Namespaces people work in: the simulation clears its namespace, so these need --force.
PROTECTED_NAMESPACES = frozenset({"default", "demo"})
SIM_AGENT = "sim-agent"
#: Actions that only look things up (the qrels' definition of "not state-changing").
LOOKUP_PREFIXES = ("get_", "find_", "list_", "calculate", "search", "think")
FILLER_WORDS = ("please", "kindly", "just", "also", "now")

RunName = Literal["learning", "control"]
#: (stage, done, total)
Progress = Callable[[str, int, int | None], None]


# -- the oracle ---------------------------------------------------------------------------------------


def state_changing_actions(actions: Iterable[str]) -> tuple[str, ...]:
    """The actions that change state, in order: every action except lookups (names starting with
    get_, find_, list_, calculate, search or think), as the qrels define relevance."""
    return tuple(a for a in actions if not a.startswith(LOOKUP_PREFIXES))


def task_sequences(
    qrels: Mapping[str, Mapping[str, float]], trajectory_actions: Mapping[str, Sequence[str]]
) -> dict[str, tuple[str, ...]]:
    """Each query's task sequence: the state-changing actions its relevant trajectories share.

    Raises InvalidInputError naming the query when its relevant trajectories disagree (the
    oracle would be ill-defined), are missing from the corpus or when it has none."""
    sequences: dict[str, tuple[str, ...]] = {}
    problems: list[str] = []
    for qid in sorted(qrels):
        relevant = [doc for doc, rel in qrels[qid].items() if rel > 0]
        missing = [doc for doc in relevant if doc not in trajectory_actions]
        if not relevant:
            problems.append(f"qrels: {qid}: no relevant trajectory, so no task sequence")
            continue
        if missing:
            problems.append(f"qrels: {qid}: relevant trajectories not in the corpus: {', '.join(missing[:5])}")
            continue
        found = {state_changing_actions(trajectory_actions[doc]) for doc in relevant}
        if len(found) > 1:
            shown = "; ".join(" -> ".join(s) for s in sorted(found)[:3])
            problems.append(f"qrels: {qid}: relevant trajectories disagree on the task's actions ({shown})")
            continue
        sequences[qid] = found.pop()
    if problems:
        raise InvalidInputError(problems)
    return sequences


def oracle_success(used: Experience | None, task_sequence: Sequence[str]) -> bool:
    """Did using this experience solve the task? Iff its state-changing actions equal the task's
    (no experience used: failure)."""
    if used is None:
        return False
    return state_changing_actions(step.action for step in used.steps) == tuple(task_sequence)


# -- perturbation -------------------------------------------------------------------------------------

ORDER_ID = re.compile(r"#W\d+")
PAYMENT_METHOD = re.compile(r"(credit_card|paypal|gift_card)_\d+")
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
ITEM_ID = re.compile(r"\d{10}")
ZIP_CODE = re.compile(r"\d{5}")
DIGITS = re.compile(r"\d+")
# Tokens also looked for in the task text (item ids and zips only count as arguments: a bare
# number in a sentence is not necessarily one).
TEXT_TOKENS = (ORDER_ID, PAYMENT_METHOD, EMAIL)


def value_kind(value: str) -> str | None:
    """What kind of identifier a value is, or None for values kept as they are (reasons, cities)."""
    if ORDER_ID.fullmatch(value):
        return "order_id"
    if payment := PAYMENT_METHOD.fullmatch(value):
        return f"payment:{payment.group(1)}"
    if EMAIL.fullmatch(value):
        return "email"
    if ITEM_ID.fullmatch(value):
        return "item_id"
    if ZIP_CODE.fullmatch(value):
        return "zip"
    if DIGITS.search(value):
        return "number"  # a street number, a suite: its digits change
    return None


def _strings(value: Any) -> Iterable[str]:
    """Every string inside an argument value (lists and objects included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _record_values(record: Mapping[str, Any]) -> Iterable[str]:
    for step in record.get("steps") or []:
        yield from _strings(step.get("arguments") or {})
    task = str(record.get("task", ""))
    for pattern in TEXT_TOKENS:
        yield from (m.group(0) for m in pattern.finditer(task))


class ValuePools(BaseModel):
    """The values of each kind the corpus holds, sorted: what a perturbation swaps in."""

    model_config = ConfigDict(frozen=True)

    by_kind: dict[str, tuple[str, ...]] = Field(default_factory=dict)


def value_pools(records: Iterable[Mapping[str, Any]]) -> ValuePools:
    """The pools of :func:`perturb_trajectory`, from a corpus of trajectory records."""
    found: dict[str, set[str]] = {}
    for record in records:
        for value in _record_values(record):
            kind = value_kind(value)
            if kind is not None and kind != "number":
                found.setdefault(kind, set()).add(value)
    return ValuePools(by_kind={kind: tuple(sorted(values)) for kind, values in sorted(found.items())})


def _redigit(value: str, rng: random.Random) -> str:
    """The value with each run of digits replaced by another number of the same length."""
    for _ in range(20):
        changed = DIGITS.sub(lambda m: "".join(rng.choice("0123456789") for _ in m.group(0)), value)
        if changed != value:
            return changed
    return value.translate(str.maketrans("0123456789", "1234567890"))  # every digit moved on by one


def _replacement(value: str, kind: str, pools: ValuePools, taken: set[str], rng: random.Random) -> str:
    """Another value of the kind, none the record already holds or was given: two orders of one
    task stay two orders."""
    others = [v for v in pools.by_kind.get(kind, ()) if v not in taken]
    if others:
        return rng.choice(others)
    for _ in range(20):
        changed = _redigit(value, rng)
        if changed not in taken:
            return changed
    return changed


def _substitute(value: Any, mapping: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, list):
        return [_substitute(item, mapping) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, mapping) for key, item in value.items()}
    return value


def _replace_in_text(text: str, mapping: Mapping[str, str]) -> str:
    """Every mapped value in the text replaced at once (so a swap never chains), whole values only."""
    if not mapping:
        return text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(k) for k in keys) + r")(?![A-Za-z0-9_])")
    return pattern.sub(lambda m: mapping[m.group(0)], text)


def _refill(task: str, rng: random.Random) -> str:
    """Drops a filler word the task has, or adds one at the start of a sentence."""
    words = task.split(" ")
    fillers = [i for i, w in enumerate(words) if w.lower().strip(",.;:!?") in FILLER_WORDS]
    if fillers and rng.random() < 0.5:
        index = fillers[0]
        dropped = words.pop(index)
        if dropped[:1].isupper() and index < len(words) and words[index][:1].isalpha():
            words[index] = words[index][:1].upper() + words[index][1:]
        return " ".join(words) if words else task
    starts = [0] + [i + 1 for i, w in enumerate(words[:-1]) if w.endswith((".", "!", "?"))]
    index = rng.choice(starts)
    filler = rng.choice(FILLER_WORDS)
    if index < len(words) and words[index][:1].isupper() and words[index][1:2].islower():
        words[index] = words[index][:1].lower() + words[index][1:]
    words.insert(index, filler.capitalize())
    return " ".join(words)


def perturb_trajectory(record: Mapping[str, Any], round_no: int, seed: int, pools: ValuePools) -> dict[str, Any]:
    """The same trajectory told slightly differently, under the id ``<id>-r<round_no>``.

    Every identifier (order, item, payment method, e-mail, zip) is swapped for another of the same
    kind from ``pools``, consistently in the arguments and the task text; digits of other
    argument values (street numbers, suites) change; a filler word is added or dropped. Actions
    and their order stay the same. Deterministic for (seed, round, id)."""
    rng = random.Random(f"{seed}/{round_no}/{record['id']}")
    values = list(dict.fromkeys(_record_values(record)))  # first-seen order: reproducible draws
    taken = set(values)
    mapping: dict[str, str] = {}
    for value in values:
        kind = value_kind(value)
        if kind is not None:
            mapping[value] = _replacement(value, kind, pools, taken, rng)
            taken.add(mapping[value])
    steps = [{**step, "arguments": _substitute(step.get("arguments") or {}, mapping)}
             for step in record.get("steps") or []]
    task = _refill(_replace_in_text(str(record["task"]), mapping), rng)
    return {**record, "id": f"{record['id']}-r{round_no}", "task": task, "steps": steps}


def perturb_round(records: Sequence[Mapping[str, Any]], round_no: int, seed: int, pools: ValuePools) -> list[dict[str, Any]]:
    return [perturb_trajectory(record, round_no, seed, pools) for record in records]


# -- the data -----------------------------------------------------------------------------------------


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


# -- figures ------------------------------------------------------------------------------------------


class QueryOutcome(BaseModel):
    """One task of one pass: what the search returned, what the agent used and how it went."""

    qid: str
    retrieved: list[str] = Field(description="Experience ids, best first.")
    ranking: list[str] = Field(description="The trajectories they stand for, best first (at most k).")
    used: str | None = Field(default=None, description="The top-1 experience the agent used.")
    used_actions: list[str] = Field(default_factory=list, description="Its state-changing actions.")
    success: bool


class PassMetrics(BaseModel):
    queries: int
    successes: int
    success_at_1: float
    ndcg: float
    recall: float
    mrr: float
    evaluated: int = Field(description="Queries with a relevant trajectory in the corpus (nDCG, Recall, MRR).")


class PassFigures(PassMetrics):
    run: RunName
    pass_no: int
    active: int
    archived: int
    total: int
    merged: int = Field(default=0, description="Experiences merged away by the maintenance after this pass.")
    archived_by_maintenance: int = 0
    maintenance_run: str | None = None
    seconds: float = 0.0


def aggregate_pass(outcomes: Sequence[QueryOutcome], qrels: Mapping[str, Mapping[str, float]], k: int = 10) -> PassMetrics:
    """success@1 over every task of the pass; nDCG@k, Recall@k and MRR (kbgraph.search.metrics)
    over the tasks whose judgements name a trajectory of the corpus."""
    judged = {o.qid: qrels[o.qid] for o in outcomes if o.qid in qrels}
    scores = evaluate({o.qid: o.ranking for o in outcomes}, judged, k)
    successes = sum(o.success for o in outcomes)
    return PassMetrics(
        queries=len(outcomes), successes=successes,
        success_at_1=round(successes / len(outcomes), 4) if outcomes else 0.0,
        ndcg=round(scores["ndcg"], 4), recall=round(scores["recall"], 4), mrr=round(scores["mrr"], 4),
        evaluated=scores["evaluated"],
    )


COMPARED = ("success_at_1", "ndcg", "recall", "mrr")


class PassComparison(BaseModel):
    """First pass next to the last one of a run (the second, by default)."""

    run: RunName
    first_pass: int
    last_pass: int
    first: dict[str, float]
    last: dict[str, float]
    delta: dict[str, float]
    beats: dict[str, bool] = Field(description="Last pass strictly above the first, per metric.")


def compare_passes(passes: Sequence[PassFigures]) -> PassComparison | None:
    """None with fewer than two passes."""
    if len(passes) < 2:
        return None
    first, last = passes[0], passes[-1]
    values = {name: (float(getattr(first, name)), float(getattr(last, name))) for name in COMPARED}
    return PassComparison(
        run=first.run, first_pass=first.pass_no, last_pass=last.pass_no,
        first={n: a for n, (a, _) in values.items()}, last={n: b for n, (_, b) in values.items()},
        delta={n: round(b - a, 4) for n, (a, b) in values.items()},
        beats={n: b > a for n, (a, b) in values.items()},
    )


class PassDelta(BaseModel):
    """Learning minus the control, for one pass: what feedback and maintenance added (or cost)."""

    pass_no: int
    delta: dict[str, float]


def learning_minus_control(learning: Sequence[PassFigures], control: Sequence[PassFigures]) -> list[PassDelta]:
    """Per pass both runs made, learning's figures minus the control's."""
    by_pass = {f.pass_no: f for f in control}
    return [
        PassDelta(pass_no=f.pass_no, delta={n: round(float(getattr(f, n)) - float(getattr(by_pass[f.pass_no], n)), 4)
                                            for n in COMPARED})
        for f in learning if f.pass_no in by_pass
    ]


class RoundFigures(BaseModel):
    round: int
    records: int
    experiences_new: int
    experiences_merged: int = Field(description="Merged away by the ingest's own merge stage.")
    active: int
    archived: int
    total: int
    growth: int = Field(description="Total experiences added since the previous round (or the passes).")
    merged: int = Field(default=0, description="Merged away by the maintenance after this round.")
    archived_by_maintenance: int = 0
    maintenance_run: str | None = None
    growth_checkpoint_run: str | None = Field(default=None, description="Maintenance the ingest itself triggered.")
    seconds: float = 0.0


class GrowthVerdict(BaseModel):
    before: int = Field(description="Total experiences before the first round.")
    totals: list[int]
    growth: list[int]
    factor: float
    ratio: float = Field(description="Total after the last round / total after round 1.")
    within_factor: bool
    flattening: bool | None = Field(description="Last round added no more than round 1 (None with one round).")
    bounded: bool


def growth_verdict(before: int, totals: Sequence[int], factor: float = 1.5) -> GrowthVerdict | None:
    """Is the repository bounded under repeated re-ingestion? The total after the last round must
    be at most ``factor`` × the total after round 1, and the last round must add no more than the
    first did (give or take 1 % of round 1's total, so one stray experience is not a trend).
    None without rounds."""
    if not totals:
        return None
    growth = [totals[0] - before] + [b - a for a, b in zip(totals, totals[1:], strict=False)]
    ratio = totals[-1] / totals[0] if totals[0] else (1.0 if totals[-1] == 0 else math.inf)
    within = totals[-1] <= factor * totals[0]
    slack = max(1, math.ceil(0.01 * totals[0]))
    flattening = None if len(totals) < 2 else growth[-1] <= growth[0] + slack
    return GrowthVerdict(before=before, totals=list(totals), growth=growth, factor=factor, ratio=round(ratio, 4),
                         within_factor=within, flattening=flattening, bounded=within and flattening is not False)


class CounterTotals(BaseModel):
    """The learning counters summed over the namespace."""

    experiences: int
    retrieved: int
    used: int
    succeeded: int
    quality_sum: float


class IngestSummary(BaseModel):
    records: int
    experiences_new: int
    experiences_merged: int
    abstract_experiences: int
    total: int
    seconds: float
    growth_checkpoint_run: str | None = None


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
    """Runs the simulation of the module docstring on one knowledge base (whose namespace it clears).

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


# -- the plot -----------------------------------------------------------------------------------------


def save_plot(report: LearningReport, path: Path) -> Path:
    """A PNG with two panels: success@1 and nDCG@10 per pass (learning solid, control dashed) and
    the repository's size per re-ingest round (round 0 = before the first)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 4.8), layout="constrained")
    passes, sizes = figure.subplots(1, 2)
    for run, style in (("learning", "-"), ("control", "--")):
        figures: list[PassFigures] = report.learning if run == "learning" else report.control
        if not figures:
            continue
        x = [f.pass_no for f in figures]
        passes.plot(x, [f.success_at_1 for f in figures], style, marker="o", color="tab:blue", label=f"success@1 ({run})")
        passes.plot(x, [f.ndcg for f in figures], style, marker="s", color="tab:orange", label=f"nDCG@10 ({run})")
    passes.set_title(f"Per pass, {report.queries} retail tasks")
    passes.set_xlabel("pass")
    passes.set_ylim(0.0, 1.0)
    passes.set_xticks(range(1, report.options.passes + 1))
    passes.grid(alpha=0.3)
    passes.legend(loc="best", fontsize="small")
    if report.rounds:
        x = [0, *(r.round for r in report.rounds)]
        before = report.growth.before if report.growth else report.ingest.total
        sizes.plot(x, [before, *(r.total for r in report.rounds)], "-", marker="o", color="tab:green", label="total")
        active_before = (report.learning or report.control)[-1].active if (report.learning or report.control) else before
        sizes.plot(x, [active_before, *(r.active for r in report.rounds)], "-", marker="s", color="tab:purple",
                   label="active")
        sizes.set_ylim(0, max(before, *(r.total for r in report.rounds)) * 1.2 + 1)
        sizes.set_xticks(x)
        sizes.legend(loc="best", fontsize="small")
    else:
        sizes.text(0.5, 0.5, "no re-ingest rounds", ha="center", va="center", transform=sizes.transAxes)
    sizes.set_title(f"Experiences per re-ingest round ({report.trajectories} perturbed trajectories each)")
    sizes.set_xlabel("round")
    sizes.grid(alpha=0.3)
    mode = "learning vs control" if report.learning and report.control else ("learning" if report.learning else "control")
    figure.suptitle(f"kbgraph learning loop ({mode}), namespace {report.namespace!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", dpi=110)
    return path
