"""Student-phase retrieval over Neo4j (docs/design.md §3): "what worked before for a task like this?"

One search runs these stages, each a named Cypher query from ``cypher/queries/search_*.cypher`` and
each a module of this package:

1. **Channels** (``channels``) gather candidates, each from one index, over-fetched and filtered
   (5.26 indexes cannot filter): the semantic index (problem+goal), the structural index (workflow
   shape), the full-text index (BM25 over problem, goal, domain) and, when steps were executed, the
   step index.
2. **Scoring facts** (``facts``) of every candidate are computed in the database (cosines against
   the query's vectors, the inner max of the fine score, support), so no embedding leaves Neo4j.
3. **Direct score** (``scores``; :func:`kbgraph.search.scoring.direct_scores`): coarse, fine and the
   λ(t) stage blend, the lexical mix α, transferability, success and support.
4. **Traversal** (``graph``; ``max_hops`` 1 by default, 0 turns it off): when the last executed
   step failed, the ALTERNATIVE way past that failure; and from the best seeds along ABSTRACTION,
   COMPOSITION, ADAPTATION and ALTERNATIVE (both directions),
   ``score(seed) · Π w(edge)·w(type) · δ^hops · trans`` (``path_score``).
5. **Selection** (``hits``): threshold θ, MMR over the pool, top k; then the hits are read (without
   embeddings) and the nearest meta-concept documents are added.

Every hit carries its score breakdown, the channels or edges that found it and, when it came from
traversal, its path. Nothing connects at import time; the gateway and the embedder are injected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import date
from threading import Lock
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.embedders import Embedder
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import PgVectorCache
from kbgraph.core.experience_rules import failed_for_the_moment, failed_step_text, stored_error
from kbgraph.core.generalise import describe_step, generalise_text
from kbgraph.search.namespace_size import NamespaceSize
from kbgraph.core.weights import WeightChanges
from kbgraph.search.params import MAX_K, RequestJson, SearchFilters, SearchQuery, SearchWeights, parse_query, parse_search_options
from kbgraph.search.asks_llm import ask_splitter_from_settings
from kbgraph.search.results import SearchResults
from kbgraph.search.student.channels import filter_params, gather
from kbgraph.search.student.context import QueryVectors, Run, SearchContext
from kbgraph.search.student.facts import attach_facts, never_worked
from kbgraph.search.student.graph import traverse
from kbgraph.search.student.hits import pool_of, read_hits, select
from kbgraph.search.student.rows import NodeFacts
from kbgraph.search.student.kept_in_background import KeptInBackground
from kbgraph.search.student.text_vectors import IntentVectors
from kbgraph.search.student.vector_model import IN_PROCESS_MAX
from kbgraph.search.student.scores import score_candidates
from kbgraph.search.student.read_turns import ReadTurns
from kbgraph.search.student.warm import warm
from kbgraph.core.shapes import counted_tool
from kbgraph.core.utility import decay_rate_per_day

if TYPE_CHECKING:
    from kbgraph.core.settings import Settings

__all__ = ["SPLIT_READS_AT", "StudentRetriever"]

#: A search with at least this many candidates, when it is the only one under way in the process,
#: reads their scoring facts and the neighbours of its seeds as two concurrent requests (see
#: SearchContext.in_halves). Queries with executed steps gather ~110 candidates (and their
#: workflows); task-only ones ~50, for which one request is quicker.
SPLIT_READS_AT = 60


class StudentRetriever:
    """Runs student searches in one namespace. Thread-safe: it keeps only caches (domain vectors,
    index pass rates) and its thread pool."""

    def __init__(
        self, gateway: Neo4jGateway, embedder: Embedder, namespace: str, weights: SearchWeights | None = None,
        utility_half_life_days: float = 30.0, pg_vectors: PgVectorCache | None = None,
        ask_splitter: Callable[[str], list[str] | None] | None = None, today: date | None = None,
        in_process_max: int = IN_PROCESS_MAX,
    ):
        self.gateway = gateway
        self.embedder = embedder
        self.namespace = namespace
        self.weights = weights or SearchWeights()
        # Problem+goal vectors of concrete experiences, shared with the KnowledgeBase's pipelines:
        # MMR and the failed-attempt matching compare them here rather than in a query.
        self.pg_vectors = pg_vectors if pg_vectors is not None else PgVectorCache()
        self.utility_decay = decay_rate_per_day(utility_half_life_days)
        # What every search's stages share: the same objects, and the caches.
        self._context = SearchContext(
            gateway=gateway, embedder=embedder, namespace=namespace, pg_vectors=self.pg_vectors,
            size=NamespaceSize(gateway, namespace), utility_decay=self.utility_decay, executor=self._executor,
            intent_vectors=IntentVectors(embedder), ask_splitter=ask_splitter, today=today,
            in_process_max=in_process_max,
        )
        self._pool: Executor | None = None
        self._pool_lock = Lock()
        self._closed = False  # guarded by _pool_lock; once closed, no background read starts
        self._searching = 0  # searches of this retriever under way (guarded by _pool_lock)
        # A large namespace's texts and vectors are read in a thread of their own, off the
        # searches' path (kept_in_background.KeptInBackground), where the gateway allows it (not the async
        # one, nor one transaction's): elsewhere the indexes answer. The vectors in a second one: at
        # 100,000 experiences their read takes ~20 s, which the texts, facts and step texts (a few
        # seconds each) need not wait behind.
        self._background: dict[str, ThreadPoolExecutor] = {}
        if gateway.background_reads:
            self._context.texts_in_background = KeptInBackground(self._context.lexical_by_version, self._in_background)
            self._context.vectors_in_background = KeptInBackground(self._context.vectors_by_version,
                                                                    self._in_vectors_background)
            self._context.facts_in_background = KeptInBackground(self._context.facts_by_version, self._in_background)
            self._context.steps_in_background = KeptInBackground(self._context.steps_by_version, self._in_background)
            self._context.feedback_in_background = KeptInBackground(self._context.feedback_by_version,
                                                                     self._in_background, follows_confirm=True)
            self._context.intent_turns = ReadTurns()  # a lock held across a request: not on an event loop

    @classmethod
    def of_settings(cls, gateway: Neo4jGateway, embedder: Embedder, namespace: str, settings: Settings,
                    pg_vectors: PgVectorCache | None = None) -> StudentRetriever:
        """The retriever ``settings`` describe: their search weights, utility half-life and way of
        splitting a request into its asks (the LLM's when ``ask_splitter`` is ``llm``)."""
        return cls(gateway, embedder, namespace, settings.search, settings.learning.utility_half_life_days, pg_vectors,
                   ask_splitter_from_settings(settings), in_process_max=settings.in_process_max)

    @property
    def namespace_size(self) -> NamespaceSize:
        """The namespace's cached size (shared with the step search: kb.search_steps)."""
        return self._context.size

    @property
    def today(self) -> date | None:
        """The day (UTC) utility decays up to in this retriever's searches; None (the default): the
        database's current UTC date. The evaluation pins it to the day a namespace was built, so a
        kept namespace ranks the same whatever day it is searched on. Set it before searching."""
        return self._context.today

    @today.setter
    def today(self, day: date | None) -> None:
        self._context.today = day

    @property
    def context(self) -> SearchContext:
        """What every search of this retriever shares, its caches included."""
        return self._context

    def _executor(self) -> Executor:
        # The channels are independent index queries; running them concurrently overlaps their
        # round trips (threads, or the event loop's tasks under AsyncKnowledgeBase).
        with self._pool_lock:
            if self._pool is None:
                self._pool = self.gateway.spawn_pool(4, "kbgraph-search")
            return self._pool

    def _in_background(self, work: Callable[[], None], lane: str = "texts") -> Future[None]:
        with self._pool_lock:
            if self._closed:
                raise RuntimeError("the retriever is closed")  # KeptInBackground reads nothing then
            executor = self._background.get(lane)
            if executor is None:
                executor = self._background[lane] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"kbgraph-{lane}")
            return executor.submit(work)

    def _in_vectors_background(self, work: Callable[[], None]) -> Future[None]:
        return self._in_background(work, "vectors")

    def close(self) -> None:
        """Stops the background reads: those queued are dropped, the one under way in each lane is
        waited for, so that the caller may close the driver next (a read still using a connection
        the driver closes breaks the connection's buffer mid-message)."""
        with self._pool_lock:
            self._closed = True
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
            lanes = list(self._background.values())
            self._background.clear()
        for executor in lanes:  # outside the lock: a read under way may ask for the next one
            executor.shutdown(wait=True, cancel_futures=True)

    # -- public --------------------------------------------------------------------------------

    def warm(self, weights: SearchWeights | WeightChanges | None = None) -> dict[str, float]:
        """Reads now what the searches of the namespace keep in the process (the intent channel's
        rows for every domain; above ``exact_scan_max`` the vectors, texts, scoring facts, step
        texts and what feedback changes), instead of during the first searches
        (kbgraph.search.student.warm), for searches with ``weights`` (changes to the retriever's,
        as :meth:`search` takes them). Rankings do not change. Returns the seconds each part took."""
        return warm(self._context, self.weights.merged(weights))

    def search(
        self,
        query: SearchQuery | RequestJson,
        filters: SearchFilters | RequestJson | None = None,
        weights: SearchWeights | WeightChanges | None = None,
        query_vectors: QueryVectors | None = None,
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
        query: SearchQuery | RequestJson,
        filters: SearchFilters | RequestJson | None,
        weights: SearchWeights | WeightChanges | None,
        query_vectors: QueryVectors | None,
    ) -> SearchResults:
        q = parse_query(query)
        flt, w = parse_search_options(self.weights, filters, weights)
        notes: list[str] = []
        k = q.k
        if k > MAX_K:
            notes.append(f"k={k} is more than one search returns; clamped to {MAX_K}")
            k = MAX_K
        if k > w.selection.candidates:  # each channel must be able to fill the list on its own
            w = w.merged({"selection.candidates": k})
        timings: dict[str, float] = {}
        context = self._context
        with _timed(timings, "embed"):
            vectors = query_vectors or self._embed_query(q, w)
        with _timed(timings, "retrieval"):
            run = Run.of(q, w, k, filter_params(self.namespace, flt, q, w), vectors, notes)
            with _timed(timings, "channels"):
                gathered = gather(context, run)
            with _timed(timings, "facts"):
                # A large search alone in this process reads the scoring facts, and its seeds'
                # neighbours, in two concurrent halves (SearchContext.in_halves); searches running
                # side by side already keep Neo4j's cores busy, and halves would only add work.
                run.split = len(gathered.candidates) >= SPLIT_READS_AT and self._searching == 1
                workflow_facts = attach_facts(context, run, gathered)
            with _timed(timings, "score"):
                scores = score_candidates(context, run, gathered, workflow_facts)
            with _timed(timings, "traverse"):
                reached = traverse(context, run, scores.breakdowns)
            with _timed(timings, "select"):
                pool = pool_of(context, run, scores, reached)
                chosen, attempts = select(context, run, pool)
            with _timed(timings, "read"):
                hits = read_hits(context, chosen, pool.entries, attempts,
                                 gathered.kept.versions.feedback if gathered.kept is not None else None)
            concepts = gathered.concepts.result() if gathered.concepts is not None else []
        return SearchResults(
            query=q.full_text() or " → ".join(s.action for s in q.steps_so_far),
            hits=hits, concepts=concepts, notes=notes, timings_ms=timings, candidates=len(pool.entries),
        )

    # -- query embedding -----------------------------------------------------------------------

    @staticmethod
    def step_text(action: str, arguments: dict[str, Any], text: str | None = None, error: str | None = None) -> str:
        """The text an executed step is embedded from: the same as a stored step's (a failed one
        ends in ``— failed: <generalised error>``, as ingestion writes it)."""
        described = f"{action}: {text if text is not None else describe_step(action, arguments)}"
        return described if error is None else failed_step_text(described, stored_error(error))

    def _embed_query(self, q: SearchQuery, w: SearchWeights) -> QueryVectors:
        """The query's vectors: ``pg`` (problem+goal, against the semantic index), ``task`` (the
        task and the workflow executed so far, against the structural index), one per step.

        Query text is generalised like stored text (ids, numbers, amounts become placeholders),
        so an order number in the question neither matches nor repels the stored placeholders.
        """
        pg_text = generalise_text(q.pg_text())
        task_text = generalise_text(q.task.strip()) or pg_text
        if q.steps_so_far and w.coarse.query_steps:
            # As a stored shape (Experience.structure_text): a generic call as the tool it called,
            # less the calls that failed for the moment.
            flow = " -> ".join(counted_tool(s.action, s.arguments) for s in q.steps_so_far
                               if s.error is None or not failed_for_the_moment(s.error))
            task_text = f"{task_text}\n{flow}".strip()
        texts = [t for t in dict.fromkeys([pg_text, task_text]) if t]
        step_texts = [self.step_text(s.action, s.arguments, s.text, s.error) for s in q.steps_so_far]
        rows = self.embedder.embed([*texts, *step_texts]) if texts or step_texts else np.zeros((0, 0))
        by_text = {text: rows[i] for i, text in enumerate(texts)}
        return {
            "pg": by_text.get(pg_text) if pg_text else None,
            "task": by_text.get(task_text) if task_text else None,
            "steps": [rows[len(texts) + i] for i in range(len(step_texts))],
        }

    # -- scoring facts ---------------------------------------------------------------------------

    @staticmethod
    def never_worked(facts: NodeFacts) -> bool:
        """Every run the experience stands for failed (facts without run counts are not judged)."""
        return never_worked(facts)


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Records how long the block took, in milliseconds, as ``timings[stage]``."""
    started = time.perf_counter()
    yield
    timings[stage] = (time.perf_counter() - started) * 1000
