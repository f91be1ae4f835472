"""The learning-loop simulation (issue 5, "evidence that the loop works"): ``kbgraph bench learning``.

The retail development queries of the retrieval benchmark (``../shared/data/eval``) are replayed
as tasks an agent performs with kbgraph's help, and an oracle says whether the help worked.

1. **Fresh namespace.** The namespace is cleared, then ``retail_train.jsonl`` (500 tau-bench retail
   trajectories) is ingested with :meth:`KnowledgeBase.ingest`.
2. **Passes** p = 1..P over the queries, always in file order. For each query:
   ``kb.search(query, domain="retail", steps_so_far=…, k=10, agent="sim-agent")``; its nDCG@10,
   Recall@10 and MRR against the qrels, after mapping the ranked experiences to the trajectories
   they stand for (:func:`kbgraph.search.eval.evaluate.expand_to_trajectories`, as ``kbgraph eval``);
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

The package: :mod:`._tasks` (the oracle), :mod:`._perturb` (perturbed re-ingestion), :mod:`._data`
(loading and subsetting the data), :mod:`._figures` (per-pass and per-round figures, comparisons,
the growth verdict), :mod:`._simulation` (:class:`LearningSimulation`, its options and report),
:mod:`._plot` (:func:`save_plot`).
"""

from __future__ import annotations

from kbgraph.bench.learning._data import DEFAULT_DATA_DIR, SimulationData, load_simulation_data, subset
from kbgraph.bench.learning._figures import (
    CounterTotals,
    GrowthVerdict,
    IngestSummary,
    PassComparison,
    PassDelta,
    PassFigures,
    PassMetrics,
    QueryOutcome,
    RoundFigures,
    aggregate_pass,
    compare_passes,
    growth_verdict,
    learning_minus_control,
)
from kbgraph.bench.learning._perturb import ValuePools, perturb_round, perturb_trajectory, value_kind, value_pools
from kbgraph.bench.learning._plot import save_plot
from kbgraph.bench.learning._simulation import (
    PROTECTED_NAMESPACES,
    LearningReport,
    LearningSimulation,
    SimulationOptions,
    control_settings,
    parse_options,
)
from kbgraph.bench.learning._tasks import oracle_success, state_changing_actions, task_sequences

__all__ = [
    "DEFAULT_DATA_DIR",
    "PROTECTED_NAMESPACES",
    "CounterTotals",
    "GrowthVerdict",
    "IngestSummary",
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
    "growth_verdict",
    "learning_minus_control",
    "load_simulation_data",
    "oracle_success",
    "parse_options",
    "perturb_round",
    "perturb_trajectory",
    "save_plot",
    "state_changing_actions",
    "subset",
    "task_sequences",
    "value_kind",
    "value_pools",
]
