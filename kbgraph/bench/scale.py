"""Scaled knowledge bases for the search benchmark, derived from real experiences.

``kbgraph bench search`` measures latency at 1,000, 10,000 and 100,000 experiences; the shared
data holds 921. This module makes a namespace of N experiences out of real *seed* experiences
(by default the active experiences of namespace ``shared``, read with their embeddings, steps and
relations), deterministically for a given ``seed``:

- **recombined**: synthetic experience ``n`` takes the problem, goal, domain, kind, difficulty and
  metadata of seed A (seeds are used in turn, shuffled, so the domain mix of the real KB is kept)
  and, half of the time, the step list of another seed B of the same domain (else A's own);
- **perturbed**: one edit of the step list (drop, duplicate or swap adjacent steps), one word-level
  edit of the problem (drop, duplicate or swap adjacent words) and a ``(variant n)`` suffix, so the
  content-hash id is new;
- **composed to size**: the real KB has 1.7 steps per experience (the WebArena ones have none),
  the issue's target KB has ~8 (10,000 experiences, ~80,000 steps). With ``steps_per_experience``
  set, step lists of domains that have steps are extended with whole step lists of further seeds of
  the same domain (composite workflows) to a Poisson-drawn length, so the namespace averages about
  that many steps per experience; domains without steps keep none;
- **jittered**: every vector of the experience (structure, context, each failure mode) is the
  seed's own vector plus Gaussian noise of relative norm ``jitter`` (0.3: cosine ≈ 0.96 to the seed's),
  re-normalised; the problem+goal vector gets ``pg_jitter`` (0.6: copies of one seed at cosine
  ≈ 0.74 to each other, below the merge threshold, so a consolidation leaves the scaled KB at its
  size). The structure vector comes from the step donor B. A copied step keeps its seed step's
  vector: one text is one vector, as in every real namespace (kbgraph.store.step_texts), so the
  scaled namespace holds its seeds' distinct step texts, not a vector per copy. No model runs;
- **linked**: every relation of the seed graph (ABSTRACTION, COMPOSITION, ADAPTATION,
  ALTERNATIVE, with its weight and reason) is mirrored from each copy of its source seed to one
  copy of its target seed, so the scaled KB has the real KB's edge mix and edges per experience.
  They are written as declared edges (``inferred: false``) with the existing ``relation_upsert``.

Provenance is ``source_ids = ["synthetic-<n>"]``; a copied failure mode keeps what its seed's
says (the error's signature, the recovery, whether it worked) as a run of the copy's own
(``run_id = "synthetic-<n>"``), so a namespace scaled from real runs gives the teacher's failure
channel groups to count. The experiences written count towards the
namespace's maintenance checkpoints (kbgraph.learning.maintenance), as ingested ones would, without
running maintenance. Writing goes through
:meth:`~kbgraph.kb.KnowledgeBase.add_experiences` in batches; ids are content hashes, so a killed
build re-run skips the batches already stored, and a namespace already holding N experiences and
its relations is reused as it is. A namespace holding anything a build did not write as it is (runs
added by ``bench add``, experiences its consolidation merged) is refused, not built upon.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kbgraph.core.errors import InvalidInputError
from kbgraph.store.experiences import ExperienceStore
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.kb import KnowledgeBase
from kbgraph.plan_warmup import warmed_after_writing
from kbgraph.core.models import MAX_STEPS, Experience, FailureMode, Step

__all__ = [
    "ScaleReport",
    "ScaledKbBuilder",
    "build_scaled_kb",
    "load_seeds",
    "scaled_namespace",
]

#: (stage, done, total) — stages "experiences" and "relations".
ScaleProgress = Callable[[str, int, int], None]

#: Relative noise on the problem+goal vector. Two copies of one seed must not be near-duplicates
#: (merge threshold: cosine 0.85 between experiences of one workflow, ingest/merge.py), or the
#: first consolidation a run added triggers merges a large part of the scaled KB into a fraction
#: of its size: at 0.3 (cosine ≈ 0.92 between copies) the 10,000 KB became 4,040 experiences.
#: 0.6 puts copies at cosine ≈ 0.74 to each other (≈ 0.86 to their seed, which is not in the
#: namespace).
PG_JITTER = 0.6

#: Longest step list a composed experience gets.
MAX_COMPOSED_STEPS = 60


def scaled_namespace(size: int, prefix: str = "bench-scaled") -> str:
    """The namespace a scaled KB of ``size`` experiences lives in. (``bench-search-<size>`` before
    copied steps kept their seed's vector: content-hash ids do not see vectors, so a build would
    have reused a namespace whose step vectors were jittered.)"""
    return f"{prefix}-{size}"


def load_seeds(gateway: Neo4jGateway, namespace: str, page: int = 500) -> list[Experience]:
    """Every active experience of ``namespace`` with its embeddings, steps and outgoing relations."""
    store = ExperienceStore(gateway, namespace)
    ids = list(store.iter_ids())
    seeds: list[Experience] = []
    for start in range(0, len(ids), page):
        seeds += [e for e in store.get_many(ids[start : start + page]) if e.status == "active"]
    return seeds


@dataclass
class ScaleReport:
    """What one build did."""

    namespace: str
    requested: int
    seeds: int
    experiences: int  # in the namespace afterwards
    steps: int  # in the namespace afterwards
    relations: int  # experience relations in the namespace afterwards
    written: int  # experiences this run wrote (0 when reused)
    reused: bool
    seconds: float
    relations_by_type: dict[str, int] = field(default_factory=dict)
    #: Seconds of the plan warm-up after the writes (kbgraph.plan_warmup), as a bulk ingest of as many
    #: experiences ends (not in ``seconds``); None: none ran (reused, or fewer than warm_plans_after written).
    plans_warmed_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _words_edit(text: str, rnd: random.Random) -> str:
    words = text.split(" ")
    if len(words) >= 4:
        i = rnd.randrange(len(words) - 1)
        op = rnd.randrange(3)
        if op == 0:
            del words[i]
        elif op == 1:
            words.insert(i, words[i])
        else:
            words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def _steps_edit(steps: list[Step], rnd: random.Random) -> list[Step]:
    steps = list(steps)
    if not steps:
        return steps
    op = rnd.randrange(4)
    i = rnd.randrange(len(steps))
    if op == 0 and len(steps) >= 2:
        del steps[i]
    elif op == 1:
        steps.insert(i, steps[i])
    elif op == 2 and len(steps) >= 2:
        j = min(i + 1, len(steps) - 1)
        i = j - 1
        steps[i], steps[j] = steps[j], steps[i]
    return steps  # op 3: unchanged


class ScaledKbBuilder:
    """Makes synthetic experience ``n`` (0 ≤ n < count) from the seeds; see the module docstring.

    Experience ``n`` depends only on (seeds, count, seed, jitters, steps_per_experience, n), so
    batches can be made and written independently, in any order, and re-made identically.
    """

    def __init__(
        self, seeds: Sequence[Experience], count: int, seed: int = 0, jitter: float = 0.3,
        steps_per_experience: float | None = 8.0, pg_jitter: float = PG_JITTER,
    ):
        if not seeds:
            raise ValueError("no seed experiences to scale from")
        if count < 1:
            raise ValueError(f"count must be at least 1, not {count}")
        self.seeds = list(seeds)
        self.count = count
        self.seed = seed
        self.jitter = jitter
        self.pg_jitter = pg_jitter
        self.index = {s.key: i for i, s in enumerate(self.seeds)}
        # Problem seeds: whole shuffled passes over the seeds, so each is used equally often.
        rng = np.random.default_rng([seed, 0])
        passes = math.ceil(count / len(self.seeds))
        self.problem_seed = np.concatenate([rng.permutation(len(self.seeds)) for _ in range(passes)])[:count]
        self.stepped_by_domain: dict[str, list[int]] = {}
        for i, s in enumerate(self.seeds):
            if s.steps:
                self.stepped_by_domain.setdefault(s.domain, []).append(i)
        # Mean length a stepped experience is composed to, so that the namespace averages
        # steps_per_experience (experiences of domains without steps have none).
        stepped_share = float(np.mean([self.seeds[a].domain in self.stepped_by_domain for a in self.problem_seed]))
        self.target_length: float | None = None
        if steps_per_experience is not None and stepped_share > 0:
            self.target_length = min(float(MAX_COMPOSED_STEPS), steps_per_experience / stepped_share)
        self.copies: dict[int, list[int]] = {}
        for n, a in enumerate(self.problem_seed.tolist()):
            self.copies.setdefault(a, []).append(n)

    # -- experiences ---------------------------------------------------------------------------

    def _jittered(self, vectors: list[list[float] | None], rng: np.random.Generator) -> list[list[float] | None]:
        present = [i for i, v in enumerate(vectors) if v is not None]
        out: list[list[float] | None] = [None] * len(vectors)
        if not present:
            return out
        matrix = np.asarray([vectors[i] for i in present], dtype=np.float64)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        scale = np.full((len(present), 1), self.jitter)
        if present[0] == 0:  # the problem+goal vector
            scale[0, 0] = self.pg_jitter
        noise = rng.standard_normal(matrix.shape) * (scale / math.sqrt(matrix.shape[1]))
        matrix += noise
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        for row, i in enumerate(present):
            out[i] = matrix[row].tolist()
        return out

    def experience(self, n: int) -> Experience:
        """Synthetic experience ``n``, with its vectors, without relations."""
        rnd = random.Random(f"{self.seed}:{n}")
        a = self.seeds[int(self.problem_seed[n])]
        donors = self.stepped_by_domain.get(a.domain, [])
        # Half keep their own steps; the other half (and step-less seeds of a domain with steps)
        # take another seed's.
        keep_own = not donors or (bool(a.steps) and rnd.random() < 0.5)
        donor = a if keep_own else self.seeds[rnd.choice(donors)]
        steps = _steps_edit(donor.steps, rnd)
        if steps and self.target_length is not None:
            length = min(MAX_COMPOSED_STEPS, max(len(steps), int(np.random.default_rng([self.seed, 2, n])
                                                                 .poisson(self.target_length))))
            while len(steps) < length:
                steps += _steps_edit(self.seeds[rnd.choice(donors)].steps, rnd)
            steps = steps[:length]
        steps = steps[:MAX_STEPS]
        failures = list(a.failure_modes)
        exp = Experience(
            problem=f"{_words_edit(a.problem, rnd)} (variant {n})",
            goal=a.goal, domain=a.domain, difficulty=a.difficulty, kind=a.kind,
            steps=[Step(action=s.action, text=s.text, args_schema=dict(s.args_schema), reward=s.reward,
                        issue_type=s.issue_type, resolution_effectiveness=s.resolution_effectiveness)
                   for s in steps],
            # A copy keeps what its seed's failures say (the error's signature, the recovery and
            # whether it worked), as its own run: the teacher's failure channel groups them.
            failure_modes=[f.model_copy(update={
                "step_order": f.step_order if f.step_order is not None and f.step_order < len(steps) else None,
                "run_id": None if f.run_id is None else f"synthetic-{n}", "embedding": None})
                for f in failures],
            success_rate=a.success_rate, quality=a.quality, efficiency=a.efficiency,
            generalizability=a.generalizability, scope="shared", source="kbgraph bench scale (synthetic)",
            source_ids=[f"synthetic-{n}"],
        )
        # Vectors are set after validation (the id does not depend on them): one noise draw per
        # experience, from its own generator.
        vectors = self._jittered(
            [a.pg_embedding, donor.structure_embedding, a.context_embedding, *[f.embedding for f in failures]],
            np.random.default_rng([self.seed, 1, n]),
        )
        exp.pg_embedding, exp.structure_embedding, exp.context_embedding = vectors[:3]
        for step, seed_step in zip(exp.steps, steps, strict=True):
            step.embedding = None if seed_step.embedding is None else list(seed_step.embedding)
        for failure, vector in zip(exp.failure_modes, vectors[3:], strict=True):
            failure.embedding = vector
        return exp

    def batches(self, size: int, start: int = 0) -> Iterator[list[Experience]]:
        for first in range(start, self.count, size):
            yield [self.experience(n) for n in range(first, min(first + size, self.count))]

    # -- relations -----------------------------------------------------------------------------

    def relation_plan(self) -> list[tuple[int, int, str, float, str]]:
        """(source n, target n, type, weight, reason): each seed edge A→B mirrored from every copy
        of A to one copy of B (chosen at random, never itself). One edge per (source, target, type),
        as the graph keeps them."""
        plan: list[tuple[int, int, str, float, str]] = []
        seen: set[tuple[int, int, str]] = set()
        for n, a in enumerate(self.problem_seed.tolist()):
            rnd = random.Random(f"{self.seed}:relations:{n}")
            for relation in self.seeds[a].relations:
                b = self.index.get(relation.target_id)
                targets = [m for m in self.copies.get(b, []) if m != n] if b is not None else []
                if not targets:
                    continue
                target = rnd.choice(targets)
                if (n, target, relation.type.value) not in seen:
                    seen.add((n, target, relation.type.value))
                    plan.append((n, target, relation.type.value, relation.weight, relation.reason))
        return plan


def _namespace_counts(kb: KnowledgeBase) -> tuple[int, int, dict[str, int]]:
    stats = kb.stats()
    relations = {t: stats.relationships.get(t, 0) for t in ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE")}
    return stats.experiences, stats.nodes.get("Step", 0), relations


def _refuse_foreign(kb: KnowledgeBase) -> None:
    # A bench namespace something else wrote to (runs added by `bench add`, whose consolidation
    # also merges the near-duplicate synthetic experiences) is no longer the scaled KB: building
    # on it would add a second copy beside the merged one and measure neither.
    row = kb.gateway.read("bench_scaled_foreign", kb=kb.namespace, cap=1000)[0]
    if row["foreign"]:
        raise InvalidInputError([
            f"namespace {kb.namespace!r} holds {row['foreign']} experience(s) a scaled build did not write as they "
            f"are (e.g. {', '.join(row['examples'])}: added runs, or merged by a consolidation); delete it "
            f"(kbgraph delete --all --yes -n {kb.namespace}) and run again"])


def build_scaled_kb(
    kb: KnowledgeBase,
    seeds: Sequence[Experience],
    count: int,
    seed: int = 0,
    jitter: float = 0.3,
    steps_per_experience: float | None = 8.0,
    batch_size: int | None = None,
    on_progress: ScaleProgress | None = None,
) -> ScaleReport:
    """Fills ``kb``'s namespace with ``count`` synthetic experiences made from ``seeds`` (see the
    module docstring) and their relations. Reuses the namespace when it already holds ``count``
    experiences and the planned relations; resumes a partial build (stored batches are skipped)."""
    started = time.perf_counter()
    builder = ScaledKbBuilder(seeds, count, seed=seed, jitter=jitter, steps_per_experience=steps_per_experience)
    plan = builder.relation_plan()
    experiences, steps, relations = _namespace_counts(kb)
    if experiences:
        _refuse_foreign(kb)
    if experiences >= count and sum(relations.values()) >= len(plan):
        return ScaleReport(kb.namespace, count, len(builder.seeds), experiences, steps, sum(relations.values()),
                           0, True, round(time.perf_counter() - started, 2), relations)
    size = batch_size or kb.settings.write_batch_size
    ids: list[str] = []
    written = 0
    for batch in builder.batches(size):
        batch_ids = [e.key for e in batch]
        ids += batch_ids
        if len(kb.store.existing_ids(batch_ids)) < len(batch_ids):
            written += kb.add_experiences(batch).new
        if on_progress is not None:
            on_progress("experiences", len(ids), count)
    if written:
        # The scaled KB stands for experiences added over time: count them towards the growth
        # checkpoints (without running maintenance), or the namespace's first ten added runs would
        # trigger a whole-namespace maintenance that one grown to this size by ingestion would not
        # run before its next doubling.
        kb.gateway.write("kb_state_growth", kb=kb.namespace, added=written)
    rows = [{"source_id": ids[s], "target_id": ids[t], "type": kind, "weight": weight, "reason": reason,
             "inferred": False} for s, t, kind, weight, reason in plan]
    chunk = 2000
    for first in range(0, len(rows), chunk):
        kb.gateway.write("relation_upsert", kb=kb.namespace, rows=rows[first : first + chunk])
        if on_progress is not None:
            on_progress("relations", min(first + chunk, len(rows)), len(rows))
    experiences, steps, relations = _namespace_counts(kb)
    seconds = round(time.perf_counter() - started, 2)
    warmed = warmed_after_writing(kb, written, on_progress)  # as kb.ingest ends a bulk write
    return ScaleReport(kb.namespace, count, len(builder.seeds), experiences, steps, sum(relations.values()),
                       written, False, seconds, relations, warmed)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kbgraph.bench.scale --size 100000``: build a scaled namespace, logging progress
    lines (for long builds in the background)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--size", type=int, required=True, help="experiences to make")
    parser.add_argument("--source", default="shared", help="namespace holding the seed experiences")
    parser.add_argument("--namespace", default=None, help="target namespace [bench-scaled-SIZE]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jitter", type=float, default=0.3)
    parser.add_argument("--steps-per-experience", type=float, default=8.0)
    args = parser.parse_args(argv)
    namespace = args.namespace or scaled_namespace(args.size)
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] >= 10:
            last[0] = now
            print(f"{time.strftime('%H:%M:%S')} {namespace}: {stage} {done:,}/{total:,}", flush=True)

    with KnowledgeBase.from_settings(namespace=namespace, quiet=True) as kb:
        seeds = load_seeds(kb.gateway, args.source)
        if not seeds:
            print(f"no active experiences in namespace {args.source!r} to scale from", file=sys.stderr)
            return 1
        print(f"{time.strftime('%H:%M:%S')} {len(seeds)} seeds from {args.source!r}", flush=True)
        report = build_scaled_kb(kb, seeds, args.size, seed=args.seed, jitter=args.jitter,
                                 steps_per_experience=args.steps_per_experience, on_progress=progress)
    print(report.as_dict(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
