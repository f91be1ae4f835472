"""Stage 1 of a student search: the channels that gather candidates. The semantic index
(problem+goal), the structural index (workflow shape), the full-text index (BM25 over problem, goal,
domain) and, when steps were executed, the step index each give up to ``candidates`` experiences; a
request without steps also asks which workflows do what it asks (:mod:`.intent`);
the meta-concept documents are searched alongside. Each asks :mod:`kbgraph.search.candidates`: a
namespace at or under ``exact_scan_max`` nodes is scanned exactly (the lexical channel scores the
namespace's own texts with its own BM25 statistics), a larger one asks the index (over-fetching
the shared one on Neo4j 5.26, asking for the namespace's nodes on 2026), except the semantic,
structural and lexical channels when the process keeps the namespace's vectors and texts at the
search version the search reads first (:mod:`.vector_model`, :mod:`.text_corpus`, kept current in
the background; not with a quality floor, which feedback moves unversioned). The channels run
concurrently: they are independent queries, and overlapping their round trips is most of a
search's speed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kbgraph.core.generalise import generalise_text
from kbgraph.search.lexical import is_verbose, lucene_query, query_terms
from kbgraph.search.candidates import Nearest, index_query, nearest
from kbgraph.search.params import SearchFilters, SearchQuery, SearchWeights
from kbgraph.search.results import ConceptHit
from kbgraph.search.scoring import neo4j_to_cosine
from kbgraph.search.student.context import FilterParams, Run, SearchContext
from kbgraph.search.student.intent import INTENT_CHANNEL, IntentMatcher, intent_channel, uses_intent
from kbgraph.search.student.kept_channels import KeptNow, check_kept, confirmed, keepable, kept_current
from kbgraph.search.student.kept_concepts import read_concepts
from kbgraph.search.student.rows import CandidateFacts, ChannelHit
from kbgraph.search.student.step_model import StepSayers
from kbgraph.search.student.vector_model import VectorKind
from kbgraph.search.student.versioned import NamespaceVersions

__all__ = ["Candidate", "Gathered", "StepEvidence", "concepts", "filter_params", "gather"]

T = TypeVar("T")

#: The experience vector indexes a channel may query, with the property each one covers.
_EXPERIENCE_INDEXES = {
    "experience_pg_embedding": "pg_embedding",
    "experience_structure_embedding": "structure_embedding",
}
#: The matrix of the in-process model each experience index stands for.
_MODEL_VECTORS: dict[str, VectorKind] = {"experience_pg_embedding": "pg", "experience_structure_embedding": "structure"}
#: The channels, in the order their candidates are added.
_ORDER = ("vector:experience_pg_embedding", "vector:experience_structure_embedding", "fulltext:experience_text",
          INTENT_CHANNEL)
#: The candidate fact a vector channel's score already is.
_KNOWN_SCORE = {"vector:experience_pg_embedding": "semantic", "vector:experience_structure_embedding": "structural"}

@dataclass
class Candidate:
    id: str
    found_by: list[str] = field(default_factory=list)
    #: BM25 of its text among the candidates (kbgraph.search.lexical.bm25_with_ceiling).
    lexical: float = 0.0
    facts: CandidateFacts | None = None
    #: Neo4j scores the vector channels already returned (no need to compute them again).
    known: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class StepEvidence:
    """What the step index said about one executed step: the experiences it found, each with
    its best step's cosine, and ``bound``, the cosine below which the index stopped returning
    steps (0 when it returned every step there is). An experience it did not return has no step
    scoring above ``bound``; the fine score uses ``bound`` for it, an upper estimate that is exact
    when many experiences share the same step, the common case the cut-off falls on."""

    rows: list[ChannelHit]
    best: dict[str, float]
    bound: float


@dataclass
class Gathered:
    """What the channels found: the candidates by id, the evidence of each executed step, the
    meta-concept search still under way, and the query's terms for the lexical score."""

    candidates: dict[str, Candidate]
    evidence: list[StepEvidence]
    concepts: Future[list[ConceptHit]] | None
    terms: list[str]
    #: How much of the query the best candidate's words cover (:func:`kbgraph.search.lexical.bm25_with_ceiling`).
    coverage: float = 0.0
    #: The request's asks and their match with what workflows change (a request without steps).
    intent: IntentMatcher | None = None
    #: What the process keeps of the namespace at the versions this search read: with the stored
    #: scoring facts (:mod:`.kept_facts`) the facts stage reads only what feedback changes, and
    #: nothing when that is kept too (:mod:`.kept_feedback`).
    kept: KeptNow | None = None

    def add(self, rows: Iterable[ChannelHit], channel: str) -> None:
        for row in rows:
            candidate = self.candidates.setdefault(row.id, Candidate(row.id))
            if channel not in candidate.found_by:
                candidate.found_by.append(channel)
            if channel in _KNOWN_SCORE:
                candidate.known[_KNOWN_SCORE[channel]] = float(row.score)


def filter_params(namespace: str, flt: SearchFilters, query: SearchQuery, w: SearchWeights) -> FilterParams:
    """The parameters every channel query takes: the namespace, the filters, the calling agent and
    the query's domain."""
    return {
        "kb": namespace, "statuses": list(flt.statuses), "domains": flt.domains, "kinds": flt.kinds,
        "min_success": flt.min_success, "min_quality": flt.min_quality, "agent": query.agent,
        # Candidate generation ranks other domains' hits as scoring will: an unrelated domain
        # (distance 1) transfers with exp(−1/τ).
        "domain": query.domain, "other_domain": math.exp(-1.0 / w.coarse.tau),
    }


def gather(ctx: SearchContext, run: Run) -> Gathered:
    """Runs the channels concurrently (each is one or a few index queries) and collects their
    candidates; the meta-concept search is left running (:attr:`Gathered.concepts`)."""
    q, w = run.query, run.weights
    query_text = generalise_text(q.full_text())
    drop_stop_words = w.lexical.stop_words == "drop" or (
        w.lexical.stop_words == "auto" and is_verbose(query_text, w.lexical.verbose_query_terms))
    text = lucene_query(query_text, stop_words=drop_stop_words)
    terms = query_terms(query_text, stop_words=drop_stop_words)
    jobs: dict[str, Future[Any]] = {}
    executor = ctx.executor()
    vectors: dict[str, list[float]] = {}
    if run.pg is not None:
        vectors["experience_pg_embedding"] = run.pg
    omega = w.coarse.structure_weight if run.steps else max(w.coarse.task_structure_weight, w.coarse.intent_structure_weight)
    if run.task is not None and omega > 0 and ctx.domain_has_steps(q.domain):
        vectors["experience_structure_embedding"] = run.task
    lexical = text is not None and w.lexical.alpha > 0
    # A namespace above exact_scan_max: its search version says whether the vector and full-text
    # channels answer from what the process keeps (vector_model, text_corpus) or ask the indexes.
    # Waited for only while the kept state has been current (kept_state); else the index queries
    # start at once and the version, checked beside them, keeps the background reads going.
    large = not w.scan.scans(ctx.size.get(w.scan.exact_scan_max).experiences)
    check, wait = ctx.kept_state.plan() if large and ctx.keeps_in_background() else (False, False)
    intent = IntentMatcher.of(ctx, run) if uses_intent(run) else None
    # A search that waits for the version and asks the intent channel takes the version that
    # channel's request reads (search_workflow_operations reads it first): one request fewer.
    version_job: Future[NamespaceVersions] | None = Future() if check and wait and intent is not None else None
    if intent is not None:  # it also tells the matcher which operations the memory knows
        jobs[INTENT_CHANNEL] = executor.submit(intent_channel, ctx, run, intent, version_job)
    if check and version_job is None:
        version_job = executor.submit(ctx.versions)
    if not wait:
        _ask_indexes(ctx, run, jobs, vectors, text if lexical else None, terms)
    # The step channel waits for the version with the others (its kept texts may answer).
    step_jobs = [] if wait else [executor.submit(_step_channel, ctx, run, v) for v in run.steps]
    concept_vector = run.task or run.pg
    concept_job: Future[list[ConceptHit]] | None = None
    if concept_vector is not None:
        concept_job = executor.submit(concepts, ctx, concept_vector, w, version_job)
    if version_job is not None and not wait:
        version_job.add_done_callback(lambda job: check_kept(ctx, run, job, vectors, lexical))
    kept: KeptNow | None = None
    if version_job is not None and wait:
        # The kept channels' answers are worked out while the version is read (~2 ms at 10,000,
        # about as long as the answers take), from what is kept now; each is kept only when the
        # version read is the one its kept value was confirmed at and that value is the one
        # kept_current then gives (a write in between: worked out again).
        # What no kept value can answer asks its index at once, beside the version's read: at
        # 100,000 the vector channels' HNSW requests (6.7 ms) waited for it and for the full-text
        # channel's kept texts (7.4 ms).
        kept_parts = keepable(ctx, run, bool(vectors), lexical)
        _ask_indexes(ctx, run, jobs, {} if "vectors" in kept_parts else vectors,
                     text if lexical and "texts" not in kept_parts else None, terms)
        asked_steps = [] if "steps" in kept_parts else [executor.submit(_step_channel, ctx, run, v) for v in run.steps]
        held = confirmed(ctx, run, kept_parts)
        # Not while writes keep moving the version: the work would mostly be done again.
        ahead = {} if ctx.kept_state.moving() else {
            part: (at, value, _kept_answers(ctx, run, part, value, vectors, terms)) for part, (at, value) in held.items()}
        versions = version_job.result()
        version = versions.search
        if any(at != version for at, _ in held.values()):
            ctx.kept_state.moved()
        kept = kept_current(ctx, run, versions, vectors, lexical, await_follows=True)
        found: dict[str, Any] = {}
        for part, value in {"vectors": kept.vectors, "texts": kept.texts, "steps": kept.steps}.items():
            early = ahead.get(part)
            if value is not None:
                found.update(early[2] if early is not None and early[0] == version and early[1] is value
                             else _kept_answers(ctx, run, part, value, vectors, terms))
        for channel, answer in found.items():
            if channel != "steps":
                jobs[channel] = _done(answer)
        step_jobs = [_done(evidence) for evidence in found["steps"]] if "steps" in found else \
            asked_steps or [executor.submit(_step_channel, ctx, run, v) for v in run.steps]
        _ask_indexes(ctx, run, jobs, vectors, text if lexical else None, terms)
    gathered = Gathered({}, [], concept_job, terms, intent=intent, kept=kept)
    for channel in _ORDER:  # candidates in the order the channels have always added them
        if channel in jobs:
            gathered.add(jobs[channel].result(), channel)
    gathered.evidence = [job.result() for job in step_jobs]
    for evidence in gathered.evidence:  # rows come best first
        gathered.add(evidence.rows[: w.selection.step_candidates], "vector:step_embedding")
    return gathered


def _ask_indexes(ctx: SearchContext, run: Run, jobs: dict[str, Future[Any]], vectors: dict[str, list[float]],
                 text: str | None, terms: list[str]) -> None:
    """Submits the index query of each vector channel of ``vectors`` and of the full-text channel
    (``text``, None: not asked) that no kept state answered already (``jobs``)."""
    executor = ctx.executor()
    for index, vector in vectors.items():
        if f"vector:{index}" not in jobs:
            jobs[f"vector:{index}"] = executor.submit(_vector_channel, ctx, run, index, vector)
    if text is not None and "fulltext:experience_text" not in jobs:
        jobs["fulltext:experience_text"] = executor.submit(_fulltext_channel, ctx, run, text, terms)


def _kept_answers(ctx: SearchContext, run: Run, part: str, value: Any, vectors: dict[str, list[float]],
                  terms: list[str]) -> dict[str, Any]:
    """The answers of the channels ``part``'s kept value answers, by channel: ``vectors``, each
    vector channel's hits; ``texts``, the full-text channel's; ``steps``, the evidence of each
    executed step (under ``steps``)."""
    w, params = run.weights, run.params
    k = w.selection.candidates
    if part == "vectors":
        return {f"vector:{index}": value.nearest(_MODEL_VECTORS[index], vector, params, k) for index, vector in vectors.items()}
    if part == "texts":
        return {"fulltext:experience_text": value.rank(terms, k, params["domain"], float(params["other_domain"]))}
    return {"steps": [_step_channel(ctx, run, v, value) for v in run.steps]}


def _done(answer: T) -> Future[T]:
    """A channel's answer worked out in the process, as a finished job."""
    job: Future[T] = Future()
    job.set_result(answer)
    return job


def _vector_channel(ctx: SearchContext, run: Run, index: str, vector: list[float]) -> list[ChannelHit]:
    if index not in _EXPERIENCE_INDEXES:  # an allow-list, never user input
        raise ValueError(f"unknown experience index {index!r}")
    w, params = run.weights, run.params
    query = index_query(ctx.gateway, "search_experience_vectors", index)

    def fetch(n: int) -> tuple[int, list[ChannelHit]]:
        row = ctx.gateway.read(query, index=index, fetch=n, vector=vector, k=w.selection.candidates, **params)[0]
        ctx.pass_rates.learn(_pass_rate_key(index, params), int(row["fetched"]), int(row["passed_same"]))
        return int(row["fetched"]), [ChannelHit.from_record(r) for r in row["rows"]]

    def scan() -> list[ChannelHit]:
        return [ChannelHit.from_record(r) for r in ctx.gateway.read(
            "search_experience_scan", property=_EXPERIENCE_INDEXES[index], vector=vector, k=w.selection.candidates, **params)]

    result = nearest(w.scan, ctx.size.get(w.scan.exact_scan_max).experiences, w.selection.candidates, scan=scan,
                     fetch=fetch, first=ctx.pass_rates.first(_pass_rate_key(index, params), w.selection.candidates, w.scan.overfetch_limit),
                     fall_back=True)
    if result.fell_back:
        run.notes.append(f"{index}: other namespaces or filters crowd the index; scanned namespace {ctx.namespace!r} exactly")
    return result.rows


def _pass_rate_key(index: str, params: FilterParams) -> tuple[Any, ...]:
    return (index, params.get("domain"), tuple(params["statuses"]), tuple(params["domains"] or ()), tuple(params["kinds"] or ()),
            params["min_success"], params["min_quality"], params["agent"])


def _fulltext_channel(ctx: SearchContext, run: Run, text: str, terms: list[str]) -> list[ChannelHit]:
    w, params = run.weights, run.params

    def fetch(n: int) -> tuple[int, list[ChannelHit]]:
        row = ctx.gateway.read("search_experience_fulltext", text=text, fetch=n, k=w.selection.candidates, **params)[0]
        ctx.pass_rates.learn(_pass_rate_key("experience_text", params), int(row["fetched"]), int(row["passed_same"]))
        return int(row["fetched"]), [ChannelHit.from_record(r) for r in row["rows"]]

    # No fall-back scan above exact_scan_max: reading every text of a large namespace costs more
    # than the few candidates the index could not give (the process keeps them in the background
    # instead: text_corpus, used by gather when current).
    result = nearest(w.scan, ctx.size.get(w.scan.exact_scan_max).experiences, w.selection.candidates,
                     scan=lambda: _lexical_scan(ctx, run, terms), fetch=fetch,
                     first=ctx.pass_rates.first(_pass_rate_key("experience_text", params), w.selection.candidates, w.scan.overfetch_limit))
    if result.limit_hit:
        run.notes.append(f"full-text channel: only {len(result.rows)} of {w.selection.candidates} candidates within the "
                         f"first {result.fetched} index hits (others belong to other namespaces or filters)")
    return result.rows


def _lexical_scan(ctx: SearchContext, run: Run, terms: list[str]) -> list[ChannelHit]:
    """The full-text channel of a namespace small enough to scan: its own texts scored by BM25 with
    its own statistics (:class:`~kbgraph.search.lexical.LexicalCorpus`), ranked as the index query
    ranks them (another domain than the query's discounted), the ``candidates`` best."""
    params = run.params
    return ctx.namespace_texts(params).rank(terms, run.weights.selection.candidates, params["domain"],
                                            float(params["other_domain"]))


def _step_channel(ctx: SearchContext, run: Run, vector: list[float], said: StepSayers | None = None) -> StepEvidence:
    """What the step channel finds for one executed step: from the namespace's step texts kept in
    the process (``said``, current at the version the search read: the exact scan's answer), else
    by the exact scan or the step index."""
    w, params = run.weights, run.params
    cutoff: list[float] = [0.0]
    query = index_query(ctx.gateway, "search_step_vectors", "step_text_embedding")

    def fetch(n: int) -> tuple[int, list[ChannelHit]]:
        row = ctx.gateway.read(query, vector=vector, fetch=n, k=w.selection.candidates, **params)[0]
        cutoff[0] = float(row["cutoff"] or 0.0)
        return int(row["fetched"]), [ChannelHit.from_record(r) for r in row["rows"]]

    def scan() -> list[ChannelHit]:
        rows = ctx.gateway.read("search_step_scan", vector=vector, k=w.selection.candidates, **params)[0]["rows"]
        return [ChannelHit.from_record(r) for r in rows]

    # Above exact_scan_max steps, one request and no growth: many experiences share a step (every
    # retail task starts by finding the user), and asking for more would only confirm what the
    # bound says.
    first = w.selection.candidates * 2
    result = Nearest(said.nearest(vector, params, w.selection.candidates), exact=True) if said is not None else \
        nearest(w.scan, ctx.size.get(w.scan.exact_scan_max).steps, w.selection.candidates, scan=scan, fetch=fetch,
                first=first, limit=first)
    best = {r.id: max(0.0, neo4j_to_cosine(r.score)) for r in result.rows}
    if len(result.rows) >= w.selection.candidates:  # truncated to the k best experiences
        bound = min(best.values())
    elif result.exact or result.exhausted:  # every step there is was scored
        bound = 0.0
    else:
        bound = max(0.0, neo4j_to_cosine(cutoff[0]))
    return StepEvidence(result.rows, best, bound)


def concepts(ctx: SearchContext, vector: list[float], w: SearchWeights,
             version_job: Future[NamespaceVersions] | None = None) -> list[ConceptHit]:
    """The meta-concept documents nearest to ``vector`` (``w.selection.concepts`` of them); where
    the search reads its namespace's version (``version_job``), ranked from what the process keeps
    at that version (kbgraph.search.student.kept_concepts) instead of scanned."""
    if w.selection.concepts == 0:
        return []
    query = index_query(ctx.gateway, "search_meta_concepts", "meta_concept_embedding")

    def fetch(n: int) -> tuple[int, list[ConceptHit]]:
        row = ctx.gateway.read(query, kb=ctx.namespace, vector=vector, fetch=n, k=w.selection.concepts)[0]
        return int(row["fetched"]), [_concept_hit(r) for r in row["rows"]]

    def scan() -> list[ConceptHit]:
        # A namespace holds tens of documents: scoring them all is one cheap request, where the
        # shared index, crowded by other namespaces' documents, needs growing requests.
        if version_job is not None:
            version = version_job.result().search
            kept = ctx.kept_concepts.get(version)
            if kept is None:  # read at a version at least as new as the search's
                read_at, kept = read_concepts(ctx.gateway, ctx.namespace)
                ctx.kept_concepts.keep(read_at, kept)
            return [_concept_hit(r) for r in kept.nearest(vector, w.selection.concepts)]
        rows = ctx.gateway.read("search_meta_concepts_scan", kb=ctx.namespace, vector=vector, k=w.selection.concepts)[0]["rows"]
        return [_concept_hit(r) for r in rows]

    return nearest(w.scan, ctx.size.get(w.scan.exact_scan_max).meta_concepts, w.selection.concepts, scan=scan,
                   fetch=fetch, first=w.selection.concepts * 10, fall_back=True).rows


def _concept_hit(r: Mapping[str, Any]) -> ConceptHit:
    """A meta-concept document as a map of the ``rows`` of ``search_meta_concepts`` (or its scan) gives it."""
    return ConceptHit(id=r["id"], name=r["name"], score=round(max(0.0, neo4j_to_cosine(r["score"])), 6),
                      document=r["document"] or "", concepts=int(r["concepts"]), experiences=int(r["experiences"]))
