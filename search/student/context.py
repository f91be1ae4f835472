"""What the stages of a student search work with: :class:`SearchContext`, shared by every search of one
retriever (the store, the embedder, the caches, the thread pool), and :class:`Run`, one search (the
query, the weights in force, its vectors, the notes it leaves for the caller).

The stages (``channels``, ``facts``, ``scores``, ``graph``, ``hits``) are functions of the two, so a
stage can be read, and tested, without the retriever around it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from typing import Any, Literal, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

from kbgraph.embedders import Embedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import PgVectorCache
from kbgraph.search.candidates import PassRates
from kbgraph.search.handoff import asks_for_a_human
from kbgraph.search.lexical import LexicalCorpus
from kbgraph.search.namespace_size import NamespaceSize
from kbgraph.search.params import SearchQuery, SearchWeights
from kbgraph.search.scoring import domain_distance, transferability
from kbgraph.search.student.bounded import KeptByContent
from kbgraph.search.student.intent_follow import IntentBases, followed_intent_rows
from kbgraph.search.student.intent_history import HistoryRow, IntentHistory
from kbgraph.search.student.kept_facts import NamespaceFacts
from kbgraph.search.student.kept_feedback import NamespaceFeedback
from kbgraph.search.student.kept_concepts import KeptConcepts
from kbgraph.search.student.kept_hits import KeptHits
from kbgraph.search.student.kept_parts import facts_part, feedback_part, read_texts, steps_part, texts_part, vectors_part
from kbgraph.search.student.step_model import StepSayers
from kbgraph.search.student.rows import NodeFacts
from kbgraph.search.student.kept_state import KeptState
from kbgraph.search.student.read_turns import ReadTurns, turn_of
from kbgraph.search.student.text_corpus import NamespaceTexts
from kbgraph.search.student.text_vectors import IntentVectors
from kbgraph.search.student.vector_model import IN_PROCESS_MAX, ExperienceVectors
from kbgraph.search.student.kept_in_background import KeptInBackground
from kbgraph.search.student.versioned import (KeptByVersion, NamespaceVersions, VersionedRead, filter_key, kept_key, sent,
                                              version_applies)
from kbgraph.search.student.workflow_operations import WorkflowOperations, read_intent_rows

__all__ = ["KeptByContent", "Run", "SearchContext"]  # KeptByContent: kbgraph.search.student.bounded

T = TypeVar("T")

#: How long the answer "does this domain have experiences with steps?" is trusted (seconds).
DOMAIN_STEPS_TTL = 60.0
#: Lexical corpora kept (one per set of filters in use; a namespace's searches mostly use one).
LEXICAL_CORPORA = 4
#: Tables of workflow operations kept (one per set of filters and query domain in use).
OPERATION_TABLES = 4
#: Histories of requests kept (one per set of filters and query domain in use).
HISTORIES = 32
#: Domain pairs whose transferability is kept (a namespace has tens of domains).
TRANSFER_PAIRS = 4096


@dataclass
class SearchContext:
    """What every search of one retriever shares. Thread-safe: besides the store and the pool it holds
    only caches (domain vectors, the indexes' pass rates, which domains have steps), whose entries a
    concurrent search may at worst compute twice."""

    gateway: Neo4jGateway
    embedder: Embedder
    namespace: str
    #: Problem+goal vectors of concrete experiences (the retriever's, shared with the pipelines).
    pg_vectors: PgVectorCache
    size: NamespaceSize
    utility_decay: float
    #: The retriever's thread pool (made on first use).
    executor: Callable[[], Executor]
    #: Vectors of operations' words and of what workflows change (the intent channel).
    intent_vectors: IntentVectors
    #: Splits a request into its asks by the configured LLM (kbgraph.search.asks_llm), None to use
    #: the rules; it returns None for a request it could not split.
    ask_splitter: Callable[[str], list[str] | None] | None = None
    #: The day utility decays up to (UTC), None for the database's current UTC date: the evaluation
    #: searches a namespace as of the day it was built (kbgraph.search.eval.cached_namespace), so its
    #: figures do not move as the namespace ages.
    today: date | None = None
    in_process_max: int = IN_PROCESS_MAX  #: the setting's, read by kept_channels.in_process
    domain_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    pass_rates: PassRates = field(default_factory=PassRates)
    domain_steps: dict[str, tuple[bool, float]] = field(default_factory=dict)
    #: Transferability by (query domain, domain, tau): see :meth:`trans`.
    transfer: dict[tuple[str, str, float], float] = field(default_factory=dict)
    lexical: KeptByContent[tuple[tuple[str, ...], ...], LexicalCorpus] = field(
        default_factory=lambda: KeptByContent(LEXICAL_CORPORA))
    operations: KeptByContent[tuple[tuple[Any, ...], ...], WorkflowOperations] = field(
        default_factory=lambda: KeptByContent(OPERATION_TABLES))
    #: The same two, by set of filters, with the search version they were read at: a search whose
    #: version is unchanged reads neither (kbgraph.search.student.versioned).
    lexical_by_version: KeptByVersion[Hashable, NamespaceTexts] = field(
        default_factory=lambda: KeptByVersion(LEXICAL_CORPORA))
    #: Keep ``lexical_by_version`` and ``vectors_by_version`` current in the background for a
    #: namespace above exact_scan_max (None: its channels always ask the indexes; the retriever
    #: sets them where its gateway allows reads from a thread of its own).
    texts_in_background: KeptInBackground[Hashable, NamespaceTexts] | None = None
    #: Whether this namespace's searches wait for its version first (kbgraph.search.student.kept_state).
    kept_state: KeptState = field(default_factory=KeptState)
    vectors_in_background: KeptInBackground[str, ExperienceVectors] | None = None
    operations_by_version: KeptByVersion[tuple[Any, ...], WorkflowOperations] = field(
        default_factory=lambda: KeptByVersion(OPERATION_TABLES))
    #: The namespace's history of requests per query domain (the intent channel's), kept by its
    #: rows and by the search version as the two above.
    histories: KeptByContent[tuple[HistoryRow, ...], IntentHistory] = field(
        default_factory=lambda: KeptByContent(HISTORIES))
    history_by_version: KeptByVersion[tuple[Any, ...], IntentHistory] = field(
        default_factory=lambda: KeptByVersion(HISTORIES))
    #: The namespace's experience vectors, by the search version: the semantic and structural
    #: channels of a namespace above ``exact_scan_max`` (kbgraph.search.student.vector_model).
    vectors_by_version: KeptByVersion[str, ExperienceVectors] = field(default_factory=lambda: KeptByVersion(1))
    #: The namespace's stored scoring facts, by the search version, kept current in the background
    #: as the vectors are (kbgraph.search.student.kept_facts).
    facts_by_version: KeptByVersion[str, NamespaceFacts] = field(default_factory=lambda: KeptByVersion(1))
    facts_in_background: KeptInBackground[str, NamespaceFacts] | None = None
    #: The namespace's step texts and who says them, the same way (kbgraph.search.student.step_model).
    steps_by_version: KeptByVersion[str, StepSayers] = field(default_factory=lambda: KeptByVersion(1))
    steps_in_background: KeptInBackground[str, StepSayers] | None = None
    #: What feedback changes, by the feedback version, the same way (kbgraph.search.student.kept_feedback).
    feedback_by_version: KeptByVersion[str, NamespaceFeedback] = field(default_factory=lambda: KeptByVersion(1))
    feedback_in_background: KeptInBackground[str, NamespaceFeedback] | None = None
    #: The experiences searches returned, as read, by the feedback version (kbgraph.search.student.kept_hits).
    kept_hits: KeptHits = field(default_factory=KeptHits)
    #: The meta-concept documents, by the search version (kbgraph.search.student.kept_concepts).
    kept_concepts: KeptConcepts = field(default_factory=KeptConcepts)
    #: Turns at the intent channel's read while writes keep changing it (kbgraph.search.student.read_turns; the retriever sets it).
    intent_turns: ReadTurns | None = None
    #: The intent channel's rows its kept values were made of, for the change feed (intent_follow).
    intent_bases: IntentBases = field(default_factory=lambda: IntentBases(HISTORIES + OPERATION_TABLES))

    def lexical_corpus(self, rows: Sequence[tuple[str, ...]]) -> LexicalCorpus:
        """The BM25 index of the texts ``rows`` (``(id, domain, problem, goal)``, as search_experience_texts
        reads them): built once for the same texts (a write that changes any makes a new one)."""
        return self.lexical.get(tuple(rows), lambda: LexicalCorpus(
            [(problem, goal, domain) for _, domain, problem, goal in rows]))

    def workflow_operations(self, rows: tuple[tuple[Any, ...], ...]) -> WorkflowOperations:
        """What the workflows of ``rows`` (as :mod:`.workflow_operations` reads them) change, worked out
        once for the same rows (a write that changes any row makes a new one)."""
        return self.operations.get(rows, lambda: WorkflowOperations(WorkflowOperations.rows_of(rows), self.intent_vectors))

    def namespace_texts(self, params: FilterParams) -> NamespaceTexts:
        """The texts of the experiences that pass ``params``'s filters and their BM25 index: read again
        only when the namespace's search version changed (or the filters are not kept by it)."""
        return self.lexical_by_version.get(kept_key(params), lambda known: read_texts(self.gateway, params, known),
                                           lambda rows: NamespaceTexts.of(rows, self.lexical_corpus(rows)))

    def search_version(self) -> str | None:
        """The namespace's search version now (None: it has none yet)."""
        return self.versions().search

    def versions(self) -> NamespaceVersions:
        """The namespace's search and feedback versions now."""
        return NamespaceVersions.of(self.gateway.read("search_version_of", kb=self.namespace)[0])

    def keeps_in_background(self) -> bool:
        """Whether a large namespace's texts and vectors are kept current in the background."""
        return self.texts_in_background is not None and self.vectors_in_background is not None

    def current_texts(self, params: FilterParams, version: str | None, wait: bool = False) -> NamespaceTexts | None:
        """The corpus of a large namespace's texts when it was read at ``version`` (text_corpus), else
        None: the index answers. ``wait`` (here and below): read now if not kept (KeptInBackground.current)."""
        if self.texts_in_background is None:
            return None
        return self.texts_in_background.current_of(kept_key(params), version,
                                                   texts_part(self.gateway, self.namespace, params), wait)

    def current_vectors(self, params: FilterParams, version: str | None, wait: bool = False) -> ExperienceVectors | None:
        """The namespace's experience vectors when read at ``version`` (:mod:`.vector_model`; not with
        a quality floor above 0); else None: the indexes answer."""
        if self.vectors_in_background is None or not version_applies(params):
            return None
        return self.vectors_in_background.current_of(
            self.namespace, version, vectors_part(self.gateway, self.namespace, self.vectors_by_version), wait)

    def current_facts(self, version: str | None, wait: bool = False) -> NamespaceFacts | None:
        """The namespace's stored scoring facts when read at ``version`` (:mod:`.kept_facts`; any
        filters: quality is not among them); else None: search_candidates_score answers."""
        if self.facts_in_background is None:
            return None
        return self.facts_in_background.current_of(self.namespace, version, facts_part(self.gateway, self.namespace), wait)

    def current_feedback(self, feedback_version: str | None, wait: bool = False) -> NamespaceFeedback | None:
        """What feedback changes of the namespace when read at ``feedback_version`` (:mod:`.kept_feedback`);
        else None: search_candidates_feedback answers."""
        if self.feedback_in_background is None:
            return None
        return self.feedback_in_background.current_of(
            self.namespace, feedback_version, feedback_part(self.gateway, self.namespace, self.feedback_by_version), wait)

    def current_steps(self, params: FilterParams, version: str | None, wait: bool = False) -> StepSayers | None:
        """The namespace's step texts and who says them when read at ``version`` (:mod:`.step_model`;
        not with a quality floor above 0); else None: the step channel asks Neo4j."""
        if self.steps_in_background is None or not version_applies(params):
            return None
        return self.steps_in_background.current_of(self.namespace, version, steps_part(self.gateway, self.namespace), wait)

    def namespace_workflows(self, params: FilterParams) -> WorkflowOperations:
        """What the workflows that pass ``params``'s filters change (search_workflow_operations): read
        again only when the search version changed (or the filters are not kept by it), worked out again only when the rows did."""
        return self.intent_rows(params, history=False)[0]

    def namespace_history(self, params: FilterParams) -> IntentHistory:
        """The stored runs that worked of the query's domain that pass ``params``'s filters, every
        one of them (the query's own runs are left out by :meth:`IntentHistory.counts`)."""
        history = self.intent_rows(params, history=True)[1]
        assert history is not None
        return history

    def intent_rows(self, params: FilterParams, history: bool,
                    on_version: Callable[[NamespaceVersions], None] | None = None) -> tuple[WorkflowOperations, IntentHistory | None]:
        """What the intent channel reads of the namespace, in one request (search_workflow_operations):
        the workflows and, with ``history``, the history of requests of the query's domain. Each is
        read again only when the namespace's search version changed, and worked out again only
        when its rows did. The workflows are kept by filters :func:`version_applies` accepts; the
        history with any quality floor (it does not depend on quality, which feedback changes
        without a new version)."""
        operations_key, history_key = kept_key(params), (*filter_key(params), params["domain"])
        with turn_of(self.intent_turns, filter_key(params)) as saw:  # what the last turn kept is sent
            operations_kept = self.operations_by_version.kept(operations_key)
            history_kept = self.history_by_version.kept(history_key) if history else None
            followed = followed_intent_rows(self.gateway, params, self.intent_bases, operations_key,
                                            history_key if history else None, operations_kept, history_kept)
            answer = followed.rows if followed is not None else read_intent_rows(
                self.gateway, params, sent(operations_kept), history, sent(history_kept))
            saw(answer.rows_read)
            if on_version is not None:  # the namespace's versions, as search_version_of reads them
                on_version(answer.versions)
            workflows = self.intent_bases.take(self.operations_by_version, operations_key, operations_kept,
                                               answer.operations, self.workflow_operations, followed)
            if answer.history is None:
                return workflows, None
            return workflows, self.intent_bases.take(self.history_by_version, history_key, history_kept, answer.history,
                                                     lambda rows: self.histories.get(rows, lambda: IntentHistory(rows)),
                                                     followed)

    def domain_has_steps(self, domain: str | None) -> bool:
        """False when the query's domain holds no experience with steps (WebArena's, say): the
        structural index then has nothing of that domain to find, and its request is saved."""
        if not domain:
            return True
        now = time.monotonic()
        cached = self.domain_steps.get(domain)
        if cached is None or now - cached[1] > DOMAIN_STEPS_TTL:
            rows = self.gateway.read("search_domain_has_steps", kb=self.namespace, domain=domain)
            cached = (bool(rows and rows[0]["has_steps"]), now)
            self.domain_steps[domain] = cached
        return cached[0]

    def in_halves(self, read: Callable[[list[str]], list[T]], items: list[str], split: bool) -> list[T]:
        """``read(items)``'s rows; with ``split``, read as two concurrent requests, each for half of
        ``items``: Neo4j runs a query on one core, so one large request leaves the other idle while
        the search waits for it."""
        if not split or len(items) < 2:
            return read(items)
        half = (len(items) + 1) // 2
        second = self.executor().submit(read, items[half:])
        return [*read(items[:half]), *second.result()]

    def domain_vector(self, name: str) -> np.ndarray:
        vector = self.domain_vectors.get(name)
        if vector is None:
            vector = np.asarray(self.embedder.embed([name])[0], dtype=np.float64)
            self.domain_vectors[name] = vector
        return vector

    @staticmethod
    def same_domain(query_domain: str | None, domain: str | None) -> bool:
        """The candidate's domain is the query's, or either is unknown (then nothing is told apart)."""
        return not query_domain or not domain or query_domain.strip().casefold() == domain.strip().casefold()

    def trans(self, query_domain: str | None, domain: str | None, tau: float) -> float:
        if not query_domain or not domain or self.same_domain(query_domain, domain):
            return 1.0
        # Asked for every candidate of every search, of a few domain pairs: a pure function of the
        # two names (their vectors are cached above) and tau, so it is kept.
        key = (query_domain, domain, tau)
        known = self.transfer.get(key)
        if known is None:
            distance = domain_distance(query_domain, domain, self.domain_vector(query_domain),
                                       self.domain_vector(domain))
            known = transferability(distance, tau)
            if len(self.transfer) >= TRANSFER_PAIRS:
                self.transfer.clear()
            self.transfer[key] = known
        return known

    def unit_pg_vectors(self, ids: list[str], facts: Mapping[str, NodeFacts]) -> dict[str, np.ndarray]:
        """Unit problem+goal vectors of experiences ``ids`` (those stored with one). A concrete
        experience's never changes (its id is its content's hash), so it is read once per process;
        an abstract one's follows its group, so it is read each time."""
        abstract = [i for i in ids if i in facts and facts[i].kind == "abstract"]
        return self.pg_vectors.read_through(
            ids, lambda wanted: self.gateway.read("experience_pg_vectors", kb=self.namespace, ids=wanted), uncached=abstract)


class FilterParams(TypedDict):
    """The parameters every channel query of a search takes (``filter_params``): the namespace, the
    filters, the calling agent, the query's domain and the discount of another domain's hits."""

    kb: str
    statuses: list[str]
    domains: list[str] | None
    kinds: list[Literal["concrete", "abstract"]] | None
    min_success: float
    min_quality: float
    agent: str | None
    domain: str | None
    other_domain: float


class QueryVectors(TypedDict, total=False):
    """A query's vectors (``StudentRetriever._embed_query``, or a caller's own): ``pg`` against the
    semantic index, ``task`` against the structural one, one per executed step."""

    pg: npt.ArrayLike | None
    task: npt.ArrayLike | None
    steps: Sequence[npt.ArrayLike]


@dataclass
class Run:
    """One search: the query, the weights in force (k clamped), the parameters every channel query
    takes (namespace, filters, domain), the query's vectors, and the notes left for the caller.
    ``split`` is decided once the candidates are known (see kbgraph.search.student.retriever)."""

    query: SearchQuery
    weights: SearchWeights
    k: int
    params: FilterParams
    #: The problem+goal vector (the query has task text), against the semantic index.
    pg: list[float] | None
    #: The task and the workflow executed so far, against the structural index.
    task: list[float] | None
    #: One vector per executed step, against the step index.
    steps: list[list[float]]
    notes: list[str]
    excluded: set[str] = field(default_factory=set)
    split: bool = False

    @classmethod
    def of(cls, query: SearchQuery, weights: SearchWeights, k: int, params: FilterParams,
           vectors: QueryVectors, notes: list[str]) -> Run:
        pg = _as_list(vectors.get("pg"))
        task = _as_list(vectors.get("task"))
        steps = [v for v in (_as_list(x) for x in vectors.get("steps", [])) if v is not None]
        return cls(query, weights, k, params, pg, task, steps, notes, excluded=set(query.exclude))

    @property
    def handoff_credit(self) -> float:
        """What a success of a way that hands the task to a human counts: ``handoff_credit``, or in
        full when the request itself asks for a human (kbgraph.search.handoff.asks_for_a_human):
        the handoff is then what was asked, not a request passed on."""
        return 1.0 if self.asks_for_human else self.weights.outcomes.handoff_credit

    @cached_property
    def asks_for_human(self) -> bool:
        """The request asks to be put through to a human (kbgraph.search.handoff.asks_for_a_human,
        setting ``intent.human_asks``): a way that hands the task to one does what was asked. Read
        once per search: the facts, the graph and the scores each ask for the credit."""
        return self.weights.intent.human_asks and asks_for_a_human(self.query.full_text())

    @property
    def anchor(self) -> list[float]:
        """A real vector to compute cosines against: a query without text uses its workflow (or
        first step); the scores that come from it are then not used (see scores.direct_breakdowns)."""
        anchor = self.pg or self.task or (self.steps[0] if self.steps else None)
        assert anchor is not None  # SearchQuery requires text or steps
        return anchor

    @property
    def pg_or_anchor(self) -> list[float]:
        return self.pg or self.anchor

    @property
    def task_or_anchor(self) -> list[float]:
        return self.task or self.anchor


def _as_list(vector: Any) -> list[float] | None:
    # One numpy pass instead of float() and isfinite() per element (~1 ms a search for its 2-3
    # vectors of 384): the values are the same Python floats (float32 widens exactly).
    if vector is None:
        return None
    values = np.asarray(vector, dtype=np.float64).reshape(-1)
    if not np.isfinite(values).all():
        raise InvalidInputError(["query vector: contains NaN or infinite values"], "invalid search")
    return list(values.tolist())
