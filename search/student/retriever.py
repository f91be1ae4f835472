"""Student-phase retrieval over Neo4j (DESIGN §3): "what worked before for a task like this?"

One search runs these stages, each a named Cypher query from ``cypher/queries/search_*.cypher``:

1. **Channels** gather candidates, each from one index, over-fetched and filtered (5.26 indexes
   cannot filter): the semantic index (problem+goal), the structural index (workflow shape), the
   full-text index (BM25 over problem, goal, domain) and, when steps were executed, the step index.
2. **Scoring facts** of every candidate are computed in the database (cosines against the query's
   vectors, the inner max of the fine score, support), so no embedding leaves Neo4j.
3. **Direct score** (:func:`kbgraph.search.scoring.direct_scores`): coarse, fine and the λ(t) stage
   blend, the lexical mix α, transferability, success and support.
4. **Traversal**: from the best seeds along ABSTRACTION, COMPOSITION, ADAPTATION and ALTERNATIVE
   (both directions), ``score(seed) · Π w(edge)·w(type) · δ^hops · trans`` (``path_score``).
5. **Selection**: threshold θ, MMR over the pool, top k; then the hits are read (without
   embeddings) and the nearest meta-concept documents are added.

Every hit carries its score breakdown, the channels or edges that found it and, when it came from
traversal, its path. Nothing connects at import time; the gateway and the embedder are injected.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

import numpy as np

from kbgraph.embedders import Embedder
from kbgraph.errors import InvalidInputError
from kbgraph.experience_store import experience_from_record
from kbgraph.gateway import Neo4jGateway
from kbgraph.ingest.facts import PgVectorCache
from kbgraph.ingest.generalise import describe_step, generalise_text
from kbgraph.models import RelationType
from kbgraph.search.handoff import hands_off
from kbgraph.search.lexical import bm25_scores, is_verbose, lucene_query, query_terms
from kbgraph.search.overfetch import overfetch
from kbgraph.search.namespace_size import NamespaceSize
from kbgraph.search.params import MAX_K, SearchFilters, SearchQuery, SearchWeights, parse_query, parse_search_options
from kbgraph.search.results import (
    ConceptHit,
    FailedAttempt,
    PathHop,
    ScoreBreakdown,
    SearchHit,
    SearchResults,
    WorkflowRuns,
)
from kbgraph.search.task_ways import task_ways, way_share
from kbgraph.search.utility import context_factor, decay_rate_per_day, outcome_evidence, utility_factor
from kbgraph.search.scoring import (
    direct_scores,
    domain_distance,
    fit_score,
    lambda_schedule,
    mmr_from_similarity,
    neo4j_to_cosine,
    path_score,
    support_score,
    transferability,
    workflow_score,
)

__all__ = ["StudentRetriever", "parse_query", "parse_search_options"]

#: The experience vector indexes a channel may query, with the property each one covers.
_EXPERIENCE_INDEXES = {
    "experience_pg_embedding": "pg_embedding",
    "experience_structure_embedding": "structure_embedding",
}
#: The candidate fact a vector channel's score already is.
_KNOWN_SCORE = {"vector:experience_pg_embedding": "semantic", "vector:experience_structure_embedding": "structural"}
#: What a workflow adds to the score of the instance that speaks for it, so it ranks right above it.
WORKFLOW_FIRST = 1e-6
#: How many candidates, relative to k, MMR chooses from.
_MMR_POOL = 3
#: A search with at least this many candidates, when it is the only one under way in the process,
#: reads their scoring facts and the neighbours of its seeds as two concurrent requests (see
#: StudentRetriever._in_halves). Queries with executed steps gather ~110 candidates (and their
#: workflows); task-only ones ~50, for which one request is quicker.
SPLIT_READS_AT = 60


def _unique_ways(parts: Iterable[list[list[Any]]]) -> list[list[Any]]:
    seen: dict[tuple[Any, ...], list[Any]] = {}
    for part in parts:
        for task_key, way, worked in part:
            seen.setdefault((task_key, tuple(way or ())), [task_key, way, worked])
    return list(seen.values())


@dataclass
class _Candidate:
    id: str
    found_by: list[str] = field(default_factory=list)
    #: BM25 of its text among the candidates (kbgraph.search.lexical.bm25_scores).
    lexical: float = 0.0
    facts: dict[str, Any] | None = None
    #: Neo4j scores the vector channels already returned (no need to compute them again).
    known: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class _StepEvidence:
    """What the step index said about one executed step: the experiences it found, each with
    its best step's cosine, and ``bound``, the cosine below which the index stopped returning
    steps (0 when it returned every step there is). An experience it did not return has no step
    scoring above ``bound``; the fine score uses ``bound`` for it, an upper estimate that is exact
    when many experiences share the same step, the common case the cut-off falls on."""

    rows: list[dict[str, Any]]
    best: dict[str, float]
    bound: float


@dataclass
class _Reached:
    """A node reached by traversal: its best path so far."""

    id: str
    seed: str
    chain: float  # score(seed) · Π w(edge)·w(type) · δ^hops, before the node's trans
    hops: list[PathHop]
    facts: dict[str, Any]
    score: float = 0.0


class StudentRetriever:
    """Runs student searches in one namespace. Thread-safe: it keeps only a cache of domain vectors."""

    def __init__(
        self, gateway: Neo4jGateway, embedder: Embedder, namespace: str, weights: SearchWeights | None = None,
        utility_half_life_days: float = 30.0, pg_vectors: PgVectorCache | None = None,
    ):
        self.gateway = gateway
        # Problem+goal vectors of concrete experiences, shared with the KnowledgeBase's pipelines:
        # MMR and the failed-attempt matching compare them here rather than in a query.
        self.pg_vectors = pg_vectors if pg_vectors is not None else PgVectorCache()
        self.utility_decay = decay_rate_per_day(utility_half_life_days)
        self.embedder = embedder
        self.namespace = namespace
        self.weights = weights or SearchWeights()
        self._domain_vectors: dict[str, np.ndarray] = {}
        self._pass_rates: dict[tuple[Any, ...], float] = {}
        self._domain_steps: dict[str, tuple[bool, float]] = {}
        self._size = NamespaceSize(gateway, namespace)
        self._pool: Executor | None = None
        self._pool_lock = Lock()
        self._searching = 0  # searches of this retriever under way (guarded by _pool_lock)

    @property
    def namespace_size(self) -> NamespaceSize:
        """The namespace's cached size (shared with the step search: kb.search_steps)."""
        return self._size

    #: How long the answer "does this domain have experiences with steps?" is trusted (seconds).
    _DOMAIN_STEPS_TTL = 60.0

    def _domain_has_steps(self, domain: str | None) -> bool:
        """False when the query's domain holds no experience with steps (WebArena's, say): the
        structural index then has nothing of that domain to find, and its request is saved."""
        if not domain:
            return True
        now = time.monotonic()
        cached = self._domain_steps.get(domain)
        if cached is None or now - cached[1] > self._DOMAIN_STEPS_TTL:
            rows = self.gateway.read("search_domain_has_steps", kb=self.namespace, domain=domain)
            cached = (bool(rows and rows[0]["has_steps"]), now)
            self._domain_steps[domain] = cached
        return cached[0]

    def _executor(self) -> Executor:
        # The channels are independent index queries; running them concurrently overlaps their
        # round trips (threads, or the event loop's tasks under AsyncKnowledgeBase).
        with self._pool_lock:
            if self._pool is None:
                self._pool = self.gateway.spawn_pool(4, "kbgraph-search")
            return self._pool

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None

    # -- public --------------------------------------------------------------------------------

    def search(
        self,
        query: SearchQuery | dict[str, Any],
        filters: SearchFilters | dict[str, Any] | None = None,
        weights: SearchWeights | dict[str, Any] | None = None,
        query_vectors: dict[str, Any] | None = None,
    ) -> SearchResults:
        """The k best experiences for ``query`` (see the module docstring for the stages).

        ``query_vectors`` lets a caller that already embedded the query (a benchmark, a batch)
        pass ``{"pg": …, "task": …, "steps": [...]}`` and skip the embedder.
        """
        with self._pool_lock:
            self._searching += 1
        try:
            return self._search(query, filters, weights, query_vectors)
        finally:
            with self._pool_lock:
                self._searching -= 1

    def _search(
        self,
        query: SearchQuery | dict[str, Any],
        filters: SearchFilters | dict[str, Any] | None,
        weights: SearchWeights | dict[str, Any] | None,
        query_vectors: dict[str, Any] | None,
    ) -> SearchResults:
        q = parse_query(query)
        flt, w = parse_search_options(self.weights, filters, weights)
        notes: list[str] = []
        k = q.k
        if k > MAX_K:
            notes.append(f"k={k} is more than one search returns; clamped to {MAX_K}")
            k = MAX_K
        if k > w.candidates:  # each channel must be able to fill the list on its own
            w = w.merged({"candidates": k})
        timings: dict[str, float] = {}

        started = time.perf_counter()
        vectors = query_vectors or self._embed_query(q, w)
        timings["embed"] = (time.perf_counter() - started) * 1000
        retrieval_started = time.perf_counter()

        params = self._filter_params(flt, q.agent)
        # Candidate generation ranks other domains' hits as scoring will: an unrelated domain
        # (distance 1) transfers with exp(−1/τ).
        params.update(domain=q.domain, other_domain=math.exp(-1.0 / w.tau))
        pg = _as_list(vectors.get("pg"))
        task = _as_list(vectors.get("task"))
        steps = [v for v in (_as_list(x) for x in vectors.get("steps", [])) if v is not None]

        # 1. Channels, run concurrently (each is one or a few index queries).
        candidates: dict[str, _Candidate] = {}

        def add(rows: Iterable[dict[str, Any]], channel: str) -> None:
            for row in rows:
                candidate = candidates.setdefault(row["id"], _Candidate(row["id"]))
                if channel not in candidate.found_by:
                    candidate.found_by.append(channel)
                if channel in _KNOWN_SCORE:
                    candidate.known[_KNOWN_SCORE[channel]] = float(row["score"])

        t = time.perf_counter()
        query_text = generalise_text(q.full_text())
        drop_stop_words = w.lexical_stop_words == "drop" or (
            w.lexical_stop_words == "auto" and is_verbose(query_text, w.verbose_query_terms))
        text = lucene_query(query_text, stop_words=drop_stop_words)
        terms = query_terms(query_text, stop_words=drop_stop_words)
        jobs: dict[str, Future[Any]] = {}
        executor = self._executor()
        if pg is not None:
            jobs["vector:experience_pg_embedding"] = executor.submit(
                self._vector_channel, "experience_pg_embedding", pg, w, params, notes)
        omega = w.structure_weight if steps else w.task_structure_weight
        if task is not None and omega > 0 and self._domain_has_steps(q.domain):
            jobs["vector:experience_structure_embedding"] = executor.submit(
                self._vector_channel, "experience_structure_embedding", task, w, params, notes)
        if text is not None and w.alpha > 0:
            jobs["fulltext:experience_text"] = executor.submit(self._fulltext_channel, text, w, params, notes)
        step_jobs = [executor.submit(self._step_channel, v, w, params, notes, i) for i, v in enumerate(steps)]
        concept_vector = task or pg
        concept_job: Future[list[ConceptHit]] | None = None
        if concept_vector is not None:
            concept_job = executor.submit(self._concepts, concept_vector, w)
        for channel, job in jobs.items():
            add(job.result(), channel)
        step_evidence = [job.result() for job in step_jobs]
        for evidence in step_evidence:  # rows come best first
            add(evidence.rows[: w.step_candidates], "vector:step_embedding")
        timings["channels"] = (time.perf_counter() - t) * 1000

        # 2. Scoring facts (cosines computed in Neo4j). A large search alone in this process reads
        # them, and its seeds' neighbours, in two concurrent halves (see _in_halves); searches
        # running side by side already keep Neo4j's cores busy, and halves would only add work.
        t = time.perf_counter()
        split = len(candidates) >= SPLIT_READS_AT and self._searching == 1
        excluded = set(q.exclude)
        # Cosine needs a real vector: a query without text uses its workflow (or first step);
        # the scores that come from it are then not used (see _direct).
        anchor = pg or task or (steps[0] if steps else None)
        assert anchor is not None  # SearchQuery requires text or steps
        facts_rows = self._facts(
            list(candidates), pg or anchor, task or anchor, excluded, params, w.handoff_credit,
            semantic_known=[c.id for c in candidates.values() if "semantic" in c.known],
            structural_known=[c.id for c in candidates.values() if "structural" in c.known], split=split,
        ) if candidates else []
        workflow_facts: dict[str, dict[str, Any]] = {}
        for row in facts_rows:
            candidate = candidates.get(row["id"])
            if candidate is None:  # the workflow of a candidate, for step 3b
                workflow_facts[row["id"]] = row
                continue
            candidate.facts = row
            if row["semantic"] is None and "semantic" in candidate.known:
                row["semantic"] = candidate.known["semantic"]
            if row["has_steps"] and row["structural"] is None and "structural" in candidate.known:
                row["structural"] = candidate.known["structural"]
        # Lexical: BM25 over the candidates' own texts (see kbgraph.search.lexical: the index's
        # scores depend on every namespace of the database).
        with_facts = [c for c in candidates.values() if c.facts is not None]
        if terms and w.alpha > 0:
            for c, value in zip(with_facts, bm25_scores(terms, [str(c.facts["text"]) for c in with_facts if c.facts]),
                                strict=True):
                c.lexical = value
        timings["facts"] = (time.perf_counter() - t) * 1000

        # 3. Direct scores.
        t = time.perf_counter()
        lam = lambda_schedule(len(steps), w.lambda_kind, w.lambda_rate, w.lambda_floor) if steps else 1.0
        scored = [c for c in candidates.values() if c.facts is not None and not self._excluded(c.facts, excluded)]
        breakdowns = self._direct(scored, step_evidence, q.domain, lam, w, has_text=pg is not None, has_flow=task is not None)
        # 3b. Workflows: each abstract experience scores as its best instance that worked.
        workflows = self._workflows(scored, breakdowns, w, workflow_facts, pg or anchor, task or anchor, excluded,
                                    params, has_text=pg is not None) if w.workflows else {}
        timings["score"] = (time.perf_counter() - t) * 1000

        # 4. Traversal from the best seeds.
        t = time.perf_counter()
        reached = self._traverse(breakdowns, q.domain, w, params, pg or anchor, excluded, split=split)
        timings["traverse"] = (time.perf_counter() - t) * 1000

        # 5. Selection.
        t = time.perf_counter()
        pool: dict[str, tuple[float, ScoreBreakdown, list[str], _Reached | None]] = {}
        scopes = {c.id: c.facts["scope"] for c in scored if c.facts is not None}
        facts_by_id = {c.id: c.facts for c in scored if c.facts is not None}
        for c in scored:
            b = breakdowns[c.id]
            pool[c.id] = (b.direct, b, list(c.found_by), None)
        for workflow_id, (score, b, node) in workflows.items():
            facts_by_id.setdefault(workflow_id, node.facts)
            scopes.setdefault(workflow_id, node.facts["scope"])
            current = pool.get(workflow_id)
            if current is None or score > current[0]:
                found_by = [*(current[2] if current else []), "edge:ABSTRACTION"]
                pool[workflow_id] = (score, b, list(dict.fromkeys(found_by)), node)
            elif "edge:ABSTRACTION" not in current[2]:
                current[2].append("edge:ABSTRACTION")
        for node in reached.values():
            current = pool.get(node.id)
            if current is None:
                b = ScoreBreakdown(
                    semantic=max(0.0, neo4j_to_cosine(node.facts["semantic"])) if node.facts.get("semantic") is not None else 0.0,
                    trans=self._trans(q.domain, node.facts["domain"], w.tau),
                    success=float(node.facts["success_rate"]),
                    support=support_score(int(node.facts["support"]), w.support_saturation),
                    quality=float(node.facts["quality"]),
                    utility=round(min(max(float(node.facts["utility"]), 0.0), 1.0), 6),
                )
                b.utility_factor = round(utility_factor(b.utility or 0.0, w.utility_weight), 6)
                node.score *= b.utility_factor
                pool[node.id] = (node.score, b, [f"edge:{node.hops[-1].relation.value}"], node)
                scopes[node.id] = node.facts["scope"]
                facts_by_id.setdefault(node.id, node.facts)
            elif node.score * current[1].utility_factor > current[0]:
                node.score *= current[1].utility_factor
                pool[node.id] = (node.score, current[1], [*current[2], f"edge:{node.hops[-1].relation.value}"], node)
            else:
                channel = f"edge:{node.hops[-1].relation.value}"
                if channel not in current[2]:
                    current[2].append(channel)
        ranked = sorted(
            ((score, hit_id) for hit_id, (score, *_rest) in pool.items() if score >= w.threshold),
            key=lambda pair: (-pair[0], pair[1]),
        )
        attempts = self._failed_attempts(ranked, facts_by_id, k, w)
        if attempts:
            attached = {f for found in attempts.values() for f, _ in found}
            ranked = [pair for pair in ranked if pair[1] not in attached]
        if q.agent and w.shared_first:
            # EDV hierarchical retrieval: the shared bank first; the agent's private bank tops up.
            shared = [pair for pair in ranked if scopes.get(pair[1]) != "private"]
            chosen = self._diversify(shared, k, w, facts_by_id)
            if len(chosen) < k:
                private = [pair for pair in ranked if scopes.get(pair[1]) == "private"]
                chosen += self._diversify(private, k - len(chosen), w, facts_by_id)
        else:
            chosen = self._diversify(ranked, k, w, facts_by_id)
        timings["select"] = (time.perf_counter() - t) * 1000

        t = time.perf_counter()
        hits = self._read_hits(chosen, pool, attempts)
        timings["read"] = (time.perf_counter() - t) * 1000
        concepts = concept_job.result() if concept_job is not None else []
        timings["retrieval"] = (time.perf_counter() - retrieval_started) * 1000
        return SearchResults(
            query=q.full_text() or " → ".join(s.action for s in q.steps_so_far),
            hits=hits, concepts=concepts, notes=notes, timings_ms=timings, candidates=len(pool),
        )

    # -- query embedding -----------------------------------------------------------------------

    @staticmethod
    def step_text(action: str, arguments: dict[str, Any], text: str | None = None) -> str:
        """The text an executed step is embedded from: the same as a stored step's."""
        return f"{action}: {text if text is not None else describe_step(action, arguments)}"

    def _embed_query(self, q: SearchQuery, w: SearchWeights) -> dict[str, Any]:
        """The query's vectors: ``pg`` (problem+goal, against the semantic index), ``task`` (the
        task and the workflow executed so far, against the structural index), one per step.

        Query text is generalised like stored text (ids, numbers, amounts become placeholders),
        so an order number in the question neither matches nor repels the stored placeholders.
        """
        pg_text = generalise_text(q.pg_text())
        task_text = generalise_text(q.task.strip()) or pg_text
        if q.steps_so_far and w.structure_query_steps:
            flow = " -> ".join(s.action for s in q.steps_so_far)
            task_text = f"{task_text}\n{flow}".strip()
        texts = [t for t in dict.fromkeys([pg_text, task_text]) if t]
        step_texts = [self.step_text(s.action, s.arguments, s.text) for s in q.steps_so_far]
        rows = self.embedder.embed([*texts, *step_texts]) if texts or step_texts else np.zeros((0, 0))
        by_text = {text: rows[i] for i, text in enumerate(texts)}
        return {
            "pg": by_text.get(pg_text) if pg_text else None,
            "task": by_text.get(task_text) if task_text else None,
            "steps": [rows[len(texts) + i] for i in range(len(step_texts))],
        }

    # -- channels ------------------------------------------------------------------------------

    def _filter_params(self, flt: SearchFilters, agent: str | None) -> dict[str, Any]:
        return {
            "kb": self.namespace, "statuses": list(flt.statuses), "domains": flt.domains, "kinds": flt.kinds,
            "min_success": flt.min_success, "min_quality": flt.min_quality, "agent": agent,
        }

    def _vector_channel(
        self, index: str, vector: list[float], w: SearchWeights, params: dict[str, Any], notes: list[str]
    ) -> list[dict[str, Any]]:
        if index not in _EXPERIENCE_INDEXES:  # an allow-list, never user input
            raise ValueError(f"unknown experience index {index!r}")

        def fetch(n: int) -> tuple[int, list[dict[str, Any]]]:
            row = self.gateway.read("search_experience_vectors", index=index, fetch=n, vector=vector,
                                    k=w.candidates, **params)[0]
            self._learn_pass_rate(index, params, int(row["fetched"]), int(row["passed_same"]))
            return int(row["fetched"]), list(row["rows"])

        if self._size.get(w.exact_scan_max).experiences > w.exact_scan_max:
            first = self._first_request(index, params, w.candidates, w.overfetch_limit)
            result = overfetch(fetch, w.candidates, first=first, limit=w.overfetch_limit)
            if not result.limit_hit:
                return result.rows
            notes.append(f"{index}: other namespaces or filters crowd the index; scanned namespace {self.namespace!r} exactly")
        return self.gateway.read("search_experience_scan", property=_EXPERIENCE_INDEXES[index], vector=vector,
                                 k=w.candidates, **params)

    # The share of an index's hits that pass this namespace's filters (and are in the query's
    # domain, when it names one), learnt from the previous searches: the first request asks for
    # enough to fill the candidates from the query's own domain in one round trip (a namespace
    # that is most of the database asks for little more than it needs; a small domain among many
    # asks for more), where a fixed factor would either waste or come up short.
    _DEFAULT_OVERFETCH = 4
    _MAX_FIRST_FACTOR = 8

    def _pass_rate_key(self, index: str, params: dict[str, Any]) -> tuple[Any, ...]:
        return (index, params.get("domain"), tuple(params["statuses"]), tuple(params["domains"] or ()), tuple(params["kinds"] or ()),
                params["min_success"], params["min_quality"], params["agent"])

    def _learn_pass_rate(self, index: str, params: dict[str, Any], fetched: int, passed: int) -> None:
        if fetched > 0:
            self._pass_rates[self._pass_rate_key(index, params)] = passed / fetched

    def _first_request(self, index: str, params: dict[str, Any], wanted: int, limit: int) -> int:
        rate = self._pass_rates.get(self._pass_rate_key(index, params))
        if rate is None:
            return min(limit, wanted * self._DEFAULT_OVERFETCH)
        # The domain preference is best effort: beyond 8× the candidates, a larger HNSW search
        # costs more latency than the few extra same-domain candidates are worth (a namespace
        # that is a sliver of the index still grows its request until enough rows pass).
        return min(limit, wanted * self._MAX_FIRST_FACTOR, max(wanted, math.ceil(wanted * 1.5 / max(rate, 1 / limit))))

    def _fulltext_channel(
        self, text: str, w: SearchWeights, params: dict[str, Any], notes: list[str]
    ) -> list[dict[str, Any]]:
        def fetch(n: int) -> tuple[int, list[dict[str, Any]]]:
            row = self.gateway.read("search_experience_fulltext", text=text, fetch=n, k=w.candidates, **params)[0]
            self._learn_pass_rate("experience_text", params, int(row["fetched"]), int(row["passed_same"]))
            return int(row["fetched"]), list(row["rows"])

        first = self._first_request("experience_text", params, w.candidates, w.overfetch_limit)
        result = overfetch(fetch, w.candidates, first=first, limit=w.overfetch_limit)
        if result.limit_hit:
            notes.append(f"full-text channel: only {len(result.rows)} of {w.candidates} candidates within the "
                         f"first {result.fetched} index hits (others belong to other namespaces or filters)")
        return result.rows

    def _step_channel(
        self, vector: list[float], w: SearchWeights, params: dict[str, Any], notes: list[str], index: int
    ) -> _StepEvidence:
        cutoff: list[float] = [0.0]

        def fetch(n: int) -> tuple[int, list[dict[str, Any]]]:
            row = self.gateway.read("search_step_vectors", vector=vector, fetch=n, k=w.candidates, **params)[0]
            cutoff[0] = float(row["cutoff"] or 0.0)
            return int(row["fetched"]), list(row["rows"])

        if self._size.get(w.exact_scan_max).steps <= w.exact_scan_max:
            rows = list(self.gateway.read("search_step_scan", vector=vector, k=w.candidates, **params)[0]["rows"])
            best = {r["id"]: max(0.0, neo4j_to_cosine(r["score"])) for r in rows}
            # Every step was scored: an experience not among the k best has none above the last.
            return _StepEvidence(rows, best, min(best.values()) if len(rows) >= w.candidates else 0.0)
        # One request, no growth: many experiences share a step (every retail task starts by
        # finding the user), and asking for more would only confirm what the bound says.
        first = w.candidates * 2
        result = overfetch(fetch, w.candidates, first=first, limit=first)
        best = {r["id"]: max(0.0, neo4j_to_cosine(r["score"])) for r in result.rows}
        if len(result.rows) >= w.candidates:  # truncated to the k best experiences
            bound = min(best.values())
        elif result.exhausted:  # the index returned every step there is
            bound = 0.0
        else:
            bound = max(0.0, neo4j_to_cosine(cutoff[0]))
        return _StepEvidence(result.rows, best, bound)

    # -- scoring -------------------------------------------------------------------------------

    @staticmethod
    def _excluded(facts: dict[str, Any], excluded: set[str]) -> bool:
        if not excluded:
            return False
        if facts["id"] in excluded:
            return True
        # An experience that stands only for excluded runs (e.g. the task's own record).
        return facts["kind"] != "abstract" and int(facts["runs"]) > 0 and int(facts["runs_left"]) == 0

    @staticmethod
    def never_worked(facts: dict[str, Any]) -> bool:
        """Every run the experience stands for failed (facts without run counts are not judged)."""
        return int(facts.get("runs") or 0) > 0 and int(facts.get("support") or 0) == 0

    def _facts(
        self, ids: list[str], pg: list[float], task: list[float], excluded: set[str], params: dict[str, Any],
        handoff_credit: float, semantic_known: list[str] | None = None, structural_known: list[str] | None = None,
        split: bool = False,
    ) -> list[dict[str, Any]]:
        """Scoring facts of experiences ``ids`` (``search_candidates_score``), each with its way's
        share of its task (:func:`~kbgraph.search.task_ways.way_share`)."""
        def read(part: list[str]) -> list[dict[str, Any]]:
            return self.gateway.read(
                "search_candidates_score", kb=self.namespace, ids=part, pg=pg, task=task, exclude=sorted(excluded),
                decay=self.utility_decay, statuses=params["statuses"], semantic_known=semantic_known or [],
                structural_known=structural_known or [],
            )

        results = self._in_halves(read, ids, split)
        if not results:  # none of the ids is (still) stored
            return []
        ways = task_ways(_unique_ways(r["ways"] for r in results), handoff_credit)
        # A candidate deleted while the query read it has no id: it is dropped. A workflow of
        # candidates in both halves comes back from each, the same.
        rows: dict[str, dict[str, Any]] = {}
        for result in results:
            for row in result["rows"]:
                if row["id"] is not None:
                    rows.setdefault(row["id"], row)
        for row in rows.values():
            row["share"] = way_share(row["task_key"], row["operations"], ways) if row["kind"] == "concrete" else 1.0
            row["hands_off"] = hands_off(row["operations"] or ())
        return list(rows.values())

    def _in_halves(self, read: Callable[[list[str]], list[dict[str, Any]]], items: list[str],
                   split: bool) -> list[dict[str, Any]]:
        """``read(items)``'s rows; with ``split``, read as two concurrent requests, each for half of
        ``items``: Neo4j runs a query on one core, so one large request leaves the other idle while
        the search waits for it."""
        if not split or len(items) < 2:
            return read(items)
        half = (len(items) + 1) // 2
        second = self._executor().submit(read, items[half:])
        return [*read(items[:half]), *second.result()]

    def _workflows(
        self, scored: Sequence[_Candidate], breakdowns: dict[str, ScoreBreakdown], w: SearchWeights,
        workflow_facts: dict[str, dict[str, Any]], pg: list[float], task: list[float], excluded: set[str],
        params: dict[str, Any], has_text: bool,
    ) -> dict[str, tuple[float, ScoreBreakdown, _Reached]]:
        """Abstract experiences scored from their instances (:func:`workflow_score`): each takes the
        score of its best-fitting instance that worked (stage · trans · success factor · share,
        plus that instance's support), with its own utility and task outcomes, and ranks right
        above that instance: the workflow of the run most like this task is the answer, and it
        stands for all its runs. Instances that only failed do not speak for it. The scoring facts
        of the candidates' workflows came with theirs (``workflow_facts``); one missing there (an
        instance's workflow made while this search ran) is read. Returns
        ``{abstract id: (score, breakdown, the edge from that instance)}``."""
        best: dict[str, tuple[float, _Candidate]] = {}
        for c in scored:
            facts = c.facts
            breakdown = breakdowns.get(c.id)
            if facts is None or breakdown is None or not facts.get("workflow") or int(facts["remaining"]) == 0:
                continue
            relevance = fit_score(breakdown.stage, breakdown.trans, breakdown.success, breakdown.share, w.success_floor)
            workflow_id = facts["workflow"]["id"]
            if workflow_id not in best or relevance > best[workflow_id][0]:
                best[workflow_id] = (relevance, c)
        if not best:
            return {}
        known = {c.id: c.facts for c in scored if c.id in best and c.facts is not None}
        known.update({i: workflow_facts[i] for i in best if i in workflow_facts and i not in known})
        missing = [i for i in sorted(best) if i not in known]
        if missing:
            known.update({row["id"]: row for row in self._facts(missing, pg, task, excluded, params, w.handoff_credit)})
        out: dict[str, tuple[float, ScoreBreakdown, _Reached]] = {}
        for workflow_id, (relevance, member) in best.items():
            facts = known.get(workflow_id)
            if facts is None or (params["domains"] is not None and facts["domain"] not in params["domains"]):
                continue  # filtered out (status, domain)
            support = breakdowns[member.id].support
            utility = min(max(float(facts["utility"]), 0.0), 1.0)
            by_utility, context = utility_factor(utility, w.utility_weight), self._context(facts, w, has_text)
            # The workflow ranks right above the run that speaks for it (WORKFLOW_FIRST breaks the tie).
            score = workflow_score(min(relevance, 1.0), support, w.support_weight) * by_utility * context + WORKFLOW_FIRST
            b = breakdowns[member.id].model_copy(update={
                "support": round(support, 6), "utility": round(utility, 6), "utility_factor": round(by_utility, 6),
                "context": round(context, 6), "outcomes": len(facts["outcomes"]),
                "quality": round(min(max(float(facts["quality"]), 0.0), 1.0), 6),
                "workflow": round(score, 6), "direct": score, "final": score,
            })
            edge: dict[str, Any] = member.facts["workflow"] if member.facts else {"weight": 1.0, "reason": ""}
            hop = PathHop(relation=RelationType.ABSTRACTION, direction="out", from_id=member.id, to_id=workflow_id,
                          weight=min(1.0, max(0.0, float(edge["weight"]))), reason=str(edge["reason"]))
            out[workflow_id] = (score, b, _Reached(workflow_id, member.id, score, [hop], facts, score))
        return out

    def _context(self, facts: dict[str, Any], w: SearchWeights, has_text: bool) -> float:
        """Task-conditioned feedback: exp(w · evidence) from the outcomes on tasks like this one."""
        if not has_text or not facts["outcomes"]:
            return 1.0
        evidence = outcome_evidence([neo4j_to_cosine(o[0]) for o in facts["outcomes"]],
                                    [float(o[1]) for o in facts["outcomes"]], w.outcome_similarity_floor)
        return context_factor(evidence, w.outcome_weight)

    def _failed_attempts(
        self, ranked: list[tuple[float, str]], facts: dict[str, dict[str, Any]], k: int, w: SearchWeights,
    ) -> dict[str, list[tuple[str, float]]]:
        """Runs that only failed, near the top of the ranking, attached to the hit of the same task
        (problem+goal cosine ≥ ``same_task_similarity``): a failed run is never handed back as the
        example to follow when a way that worked for that task is known. ``{hit id: [(failed id,
        cosine)]}``; a failed run with no such hit keeps its own place (it is all there is)."""
        window = ranked[: k * _MMR_POOL]
        failed = [i for _, i in window if i in facts and self.never_worked(facts[i])]
        if not failed:
            return {}
        worked = [i for _, i in window if i not in failed][: k]
        if not worked:
            return {}
        vectors = self._unit_pg_vectors(worked + failed, facts)
        attached: dict[str, list[tuple[str, float]]] = {}
        for failed_id in failed:
            score, hit_id = max(((_cosine(vectors, failed_id, h), h) for h in worked), key=lambda p: (p[0], p[1]))
            if score >= w.same_task_similarity:
                attached.setdefault(hit_id, []).append((failed_id, round(score, 6)))
        for found in attached.values():
            found.sort(key=lambda pair: (-pair[1], pair[0]))
        return attached

    def _domain_vector(self, name: str) -> np.ndarray:
        vector = self._domain_vectors.get(name)
        if vector is None:
            vector = np.asarray(self.embedder.embed([name])[0], dtype=np.float64)
            self._domain_vectors[name] = vector
        return vector

    def _trans(self, query_domain: str | None, domain: str | None, tau: float) -> float:
        if not query_domain or not domain:
            return 1.0
        if query_domain.strip().casefold() == domain.strip().casefold():
            return 1.0
        distance = domain_distance(query_domain, domain, self._domain_vector(query_domain), self._domain_vector(domain))
        return transferability(distance, tau)

    def _direct(
        self, scored: Sequence[_Candidate], evidence: Sequence[_StepEvidence], domain: str | None, lam: float,
        w: SearchWeights, has_text: bool, has_flow: bool,
    ) -> dict[str, ScoreBreakdown]:
        """``has_text``: the query has task text (the semantic and lexical channels ran);
        ``has_flow``: it has a vector for the structural index (task text and/or the executed
        workflow). A query of executed steps only ranks by workflow shape and step match."""
        if not scored:
            return {}
        facts = [c.facts for c in scored if c.facts is not None]
        semantic = np.array([neo4j_to_cosine(f["semantic"]) if has_text and f["semantic"] is not None else 0.0
                             for f in facts])
        has_structure = np.array([f["structural"] is not None and has_flow for f in facts])
        structural = np.array([neo4j_to_cosine(f["structural"]) if s else 0.0 for f, s in zip(facts, has_structure)])
        # S_fine = mean over executed steps of the best cosine among the experience's steps. The
        # step index gives it exactly for every experience it returned for that step; any other
        # step scores at most the index's cut-off, which stands in for it (see _StepEvidence).
        fine = np.array([
            float(np.mean([e.best.get(f["id"], e.bound) for e in evidence])) if evidence and f["has_steps"] else 0.0
            for f in facts
        ])
        trans = np.array([self._trans(domain, f["domain"], w.tau) for f in facts])
        # A way that hands the task to a human counts its successes at handoff_credit (search/handoff.py).
        success = np.clip(np.array([float(f["success_rate"]) * (w.handoff_credit if f.get("hands_off") else 1.0)
                                    for f in facts]), 0.0, 1.0)
        support = np.array([support_score(int(f["remaining"]), w.support_saturation) for f in facts])
        quality = np.clip(np.array([float(f["quality"]) for f in facts]), 0.0, 1.0)
        utility = np.clip(np.array([float(f["utility"]) for f in facts]), 0.0, 1.0)
        share = np.clip(np.array([float(f.get("share", 1.0)) for f in facts]), 0.0, 1.0)
        # Task-conditioned feedback: outcomes on tasks like this one (only a text query has them).
        context = np.array([self._context(f, w, has_text) for f in facts])
        # Without query text, only the executed steps can rank: λ = 0 puts all weight on fine.
        lam_used = lam if (has_text or has_flow) else 0.0
        parts = direct_scores(
            semantic=semantic, structural=structural, has_structure=has_structure, fine=fine,
            lexical=np.array([c.lexical for c in scored]), trans=trans, success=success, support=support,
            quality=quality, structure_weight=(w.structure_weight if evidence else w.task_structure_weight) if has_text else 1.0,
            lam=lam_used, alpha=w.alpha,
            success_floor=w.success_floor, support_weight=w.support_weight, quality_weight=w.quality_weight,
            utility=utility, utility_weight=w.utility_weight, share=share,
        )
        parts["direct"] = parts["direct"] * context
        out: dict[str, ScoreBreakdown] = {}
        for i, c in enumerate(scored):
            out[c.id] = ScoreBreakdown(
                semantic=round(float(max(0.0, semantic[i])), 6),
                structural=round(float(max(0.0, structural[i])), 6) if has_structure[i] else None,
                coarse=round(float(parts["coarse"][i]), 6),
                fine=round(float(fine[i]), 6) if evidence else None,
                lam=round(lam_used, 6), stage=round(float(parts["stage"][i]), 6),
                lexical=round(float(parts["lexical"][i]), 6), textual=round(float(parts["textual"][i]), 6),
                trans=round(float(trans[i]), 6), success=round(float(success[i]), 6),
                support=round(float(support[i]), 6), quality=round(float(quality[i]), 6),
                utility=round(float(utility[i]), 6), utility_factor=round(float(parts["utility_factor"][i]), 6),
                share=round(float(share[i]), 6), handed_off=bool(facts[i].get("hands_off")),
                context=round(float(context[i]), 6), outcomes=len(facts[i]["outcomes"]),
                direct=float(parts["direct"][i]), final=float(parts["direct"][i]),
            )
        coarse_cut = [c.id for i, c in enumerate(scored) if parts["coarse"][i] < w.theta_coarse and has_text]
        for cut in coarse_cut:
            del out[cut]
        return out

    # -- traversal -----------------------------------------------------------------------------

    def _traverse(
        self, breakdowns: dict[str, ScoreBreakdown], domain: str | None, w: SearchWeights,
        params: dict[str, Any], pg: list[float], excluded: set[str], split: bool = False,
    ) -> dict[str, _Reached]:
        if w.max_hops == 0 or w.seeds == 0 or not breakdowns:
            return {}
        seeds = sorted(breakdowns.items(), key=lambda item: (-item[1].direct, item[0]))[: w.seeds]
        type_weights = {t.value: weight for t, weight in w.edge_weights.items()}
        frontier: dict[str, tuple[str, float, list[PathHop]]] = {sid: (sid, b.direct, []) for sid, b in seeds}
        visited = set(frontier)
        reached: dict[str, _Reached] = {}

        def neighbours(of: list[str]) -> list[dict[str, Any]]:
            return self.gateway.read("search_neighbours", seeds=of, pg=pg, per_seed=w.neighbours_per_seed,
                                     decay=self.utility_decay, **params)

        for _hop in range(w.max_hops):
            if not frontier:
                break
            # Halves keep the seeds' order, so the rows come in the order one request gives them.
            rows = [row for result in self._in_halves(neighbours, list(frontier), split) for row in result["rows"]]
            next_frontier: dict[str, tuple[str, float, list[PathHop]]] = {}
            for row in rows:
                node_id = row["id"]
                if node_id is None:  # deleted while the query read it
                    continue
                # A seed reached from another seed competes too (it keeps the better of its direct
                # and path scores); only expanding it again is skipped.
                if node_id in excluded or node_id == row["seed"]:
                    continue
                seed, chain, hops = frontier[row["seed"]]
                relation = RelationType(row["relation"])
                edge_weight = min(1.0, max(0.0, float(row["weight"])))
                hop = PathHop(
                    relation=relation, direction="out" if row["outgoing"] else "in",
                    from_id=row["seed"], to_id=node_id, weight=edge_weight, reason=row["reason"],
                )
                path = [*hops, hop]
                new_chain = path_score(chain, [edge_weight], w.hop_decay, type_weights, [relation.value])
                trans = self._trans(domain, row["domain"], w.tau)
                score = new_chain * trans
                best = reached.get(node_id)
                if best is None or score > best.score:
                    reached[node_id] = _Reached(node_id, seed, new_chain, path, row, score)
                previous = next_frontier.get(node_id)
                if node_id not in visited and (previous is None or new_chain > previous[1]):
                    next_frontier[node_id] = (seed, new_chain, path)
            visited |= set(next_frontier)
            frontier = dict(sorted(next_frontier.items(), key=lambda item: (-item[1][1], item[0]))[: w.seeds])
        return reached

    # -- selection and reading -----------------------------------------------------------------

    def _diversify(
        self, ranked: list[tuple[float, str]], k: int, w: SearchWeights, facts: dict[str, dict[str, Any]],
    ) -> list[str]:
        pool = ranked[: k * _MMR_POOL]
        if w.mmr_lambda >= 1.0 or len(pool) <= 1:
            return [hit_id for _, hit_id in pool[:k]]
        ids = [hit_id for _, hit_id in pool]
        vectors = self._unit_pg_vectors(ids, facts)
        similarity = np.eye(len(ids))
        present = [i for i, hit_id in enumerate(ids) if hit_id in vectors]
        if present:  # a hit stored without a vector is like no other
            matrix = np.stack([vectors[ids[i]] for i in present]).astype(np.float64)
            similarity[np.ix_(present, present)] = np.clip(matrix @ matrix.T, -1.0, 1.0)
        order = mmr_from_similarity(np.array([score for score, _ in pool]), similarity, k, w.mmr_lambda)
        return [ids[i] for i in order]

    def _unit_pg_vectors(self, ids: list[str], facts: dict[str, dict[str, Any]]) -> dict[str, np.ndarray]:
        """Unit problem+goal vectors of experiences ``ids`` (those stored with one). A concrete
        experience's never changes (its id is its content's hash), so it is read once per process;
        an abstract one's follows its group, so it is read each time."""
        abstract = [i for i in ids if facts.get(i, {}).get("kind") == "abstract"]
        return self.pg_vectors.read_through(
            ids, lambda wanted: self.gateway.read("experience_pg_vectors", kb=self.namespace, ids=wanted), uncached=abstract)

    def _read_hits(
        self, chosen: list[str], pool: dict[str, tuple[float, ScoreBreakdown, list[str], _Reached | None]],
        attempts: dict[str, list[tuple[str, float]]] | None = None,
    ) -> list[SearchHit]:
        if not chosen:
            return []
        attempts = {hit_id: found for hit_id, found in (attempts or {}).items() if hit_id in chosen}
        wanted = [*chosen, *(f for found in attempts.values() for f, _ in found)]
        # An experience deleted while the query read it (merged away by a concurrent ingest) comes
        # back without properties: it is skipped like one deleted between the stages.
        records = {r["experience"]["id"]: r for r in self.gateway.read("search_hits_get", kb=self.namespace, ids=wanted)
                   if r["experience"].get("id") is not None}
        hits: list[SearchHit] = []
        for hit_id in chosen:
            record = records.get(hit_id)
            if record is None:  # deleted between the stages
                continue
            score, breakdown, found_by, reached = pool[hit_id]
            breakdown = breakdown.model_copy()
            if reached is not None and breakdown.workflow is None:
                breakdown.path = round(reached.score, 6)
                breakdown.hops = len(reached.hops)
            breakdown.final = round(score, 6)
            breakdown.direct = round(breakdown.direct, 6)
            experience = experience_from_record(record)
            workflow = record.get("workflow")
            hits.append(SearchHit(
                rank=len(hits) + 1, id=hit_id, score=round(score, 6), experience=experience,
                breakdown=breakdown, found_by=found_by,
                path=list(reached.hops) if reached is not None and score == reached.score else [],
                seed_id=reached.seed if reached is not None and score == reached.score else None,
                runs=experience.runs, runs_succeeded=experience.runs_succeeded,
                workflow=WorkflowRuns(id=workflow["id"], runs=int(workflow["runs"]),
                                      succeeded=int(workflow["runs"]) - int(workflow["failed"]),
                                      tasks=int(workflow["tasks"])) if workflow else
                # A workflow no other experience shares: its runs are the experience's own.
                WorkflowRuns(id=hit_id, runs=experience.runs, succeeded=experience.runs_succeeded, tasks=1)
                if experience.kind == "concrete" and experience.runs else None,
                failed_attempts=[self._attempt(records[f], cosine) for f, cosine in attempts.get(hit_id, [])
                                 if f in records],
            ))
        return hits

    @staticmethod
    def _attempt(record: dict[str, Any], similarity: float) -> FailedAttempt:
        failed = experience_from_record(record)
        failures = [f.description + (f" — then: {f.recovery}" if f.recovery else "") for f in failed.failure_modes]
        return FailedAttempt(id=failed.key, problem=failed.problem, runs=failed.runs,
                             actions=[s.action for s in failed.steps], failures=failures[:5], similarity=similarity)

    def _concepts(self, vector: list[float], w: SearchWeights) -> list[ConceptHit]:
        if w.concepts == 0:
            return []

        def fetch(n: int) -> tuple[int, list[dict[str, Any]]]:
            row = self.gateway.read("search_meta_concepts", kb=self.namespace, vector=vector, fetch=n, k=w.concepts)[0]
            return int(row["fetched"]), list(row["rows"])

        if self._size.get(w.exact_scan_max).meta_concepts <= w.exact_scan_max:
            # A namespace holds tens of documents: scoring them all is one cheap request, where the
            # shared index, crowded by other namespaces' documents, needs growing requests.
            rows = list(self.gateway.read("search_meta_concepts_scan", kb=self.namespace, vector=vector,
                                          k=w.concepts)[0]["rows"])
        else:
            rows = overfetch(fetch, w.concepts, first=w.concepts * 10, limit=w.overfetch_limit).rows
        return [
            ConceptHit(id=r["id"], name=r["name"], score=round(max(0.0, neo4j_to_cosine(r["score"])), 6),
                       document=r["document"] or "", concepts=int(r["concepts"]), experiences=int(r["experiences"]))
            for r in rows
        ]


def _cosine(vectors: dict[str, np.ndarray], a: str, b: str) -> float:
    """Cosine of two unit vectors of ``vectors`` (−1 when either is missing: such a pair never
    matches), clamped against float32 rounding."""
    if a not in vectors or b not in vectors:
        return -1.0
    return min(1.0, max(-1.0, float(np.dot(vectors[a], vectors[b]))))


def _as_list(vector: Any) -> list[float] | None:
    if vector is None:
        return None
    values = [float(x) for x in vector]
    if not all(math.isfinite(x) for x in values):
        raise InvalidInputError(["query vector: contains NaN or infinite values"], "invalid search")
    return values

