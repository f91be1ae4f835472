"""The full-text channel's own index of a namespace (kbgraph.search.student.text_corpus): BM25 over
the namespace's texts with its own statistics, the same floats as the loop it replaced; above
``exact_scan_max`` kept current in the background, used only once read at the version a search
sees, and the same answer as the exact scan's whatever another namespace holds. The corpus and
its refresh are pure code (plain tests, the read injected); the channel runs on real Neo4j 5.26
with the real MiniLM."""

from __future__ import annotations

import math
import random
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
import pytest

from kbgraph.core.models import Experience
from kbgraph.kb import KnowledgeBase
from kbgraph.search.lexical import BM25_B, BM25_K1, LexicalCorpus, query_terms
from kbgraph.search.params import SearchFilters, SearchWeights, parse_query
from kbgraph.search.student import channels
from kbgraph.search.student.context import FilterParams
from kbgraph.search.student.rows import ChannelHit
from kbgraph.search.student.text_corpus import NamespaceTexts
from kbgraph.search.student.kept_in_background import KeptInBackground
from kbgraph.search.student.versioned import KeptByVersion, VersionedRead

WORDS = "order refund flight hotel cancel exchange item address payment baggage seat upgrade".split()


def reference_scores(documents: Sequence[Sequence[str]], terms: Sequence[str]) -> dict[int, float]:
    """Multi-field BM25 as the corpus computed it before its postings were arrays (the spec)."""
    out: dict[int, float] = {}
    for f in range(max(len(d) for d in documents)):
        bags = [Counter(t for t in d[f].lower().split() if len(t) >= 2) if f < len(d) else Counter() for d in documents]
        lengths = [sum(bag.values()) for bag in bags]
        counted = [n for n in lengths if n > 0]
        average = sum(counted) / len(counted) if counted else 1.0
        norms = [BM25_K1 * (1.0 - BM25_B + BM25_B * n / average) for n in lengths]
        for term in dict.fromkeys(terms):
            found = [(i, bag[term]) for i, bag in enumerate(bags) if term in bag]
            if not found:
                continue
            idf = math.log(1.0 + (len(counted) - len(found) + 0.5) / (len(found) + 0.5))
            for i, tf in found:
                out[i] = out.get(i, 0.0) + idf * tf * (BM25_K1 + 1.0) / (tf + norms[i])
    return out


def random_documents(seed: int, n: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    return [(" ".join(rng.choices(WORDS, k=rng.randint(1, 12))), " ".join(rng.choices(WORDS, k=rng.randint(0, 4))),
             rng.choice(["retail", "airline"])) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_the_corpus_scores_are_the_same_floats_as_the_loop_over_postings(seed: int) -> None:
    documents = random_documents(seed, 300)
    terms = random.Random(seed).sample(WORDS, 4) + ["airline", "nowhere"]
    assert LexicalCorpus(documents).scores(terms) == reference_scores(documents, terms)


@pytest.mark.parametrize("seed", range(5))
def test_the_best_texts_are_ranked_as_the_index_query_ranks_them_other_domains_discounted_ties_to_the_id(seed: int) -> None:
    documents = random_documents(seed, 300)
    rows = [(f"id-{i:04d}", domain, problem, goal) for i, (problem, goal, domain) in enumerate(documents)]
    rng = random.Random(seed)
    rng.shuffle(rows)  # ids out of position order: ties must fall to the id, not the position
    texts = NamespaceTexts.of(sorted(rows))
    terms, other = rng.sample(WORDS, 3), math.exp(-1.0)
    raw = reference_scores([(p, g, d) for _, d, p, g in sorted(rows)], terms)
    for domain in (None, "retail"):
        expected = sorted(((score * (1.0 if domain is None or sorted(rows)[i][1] == domain else other), sorted(rows)[i][0], score)
                           for i, score in raw.items()), key=lambda item: (-item[0], item[1]))
        assert texts.rank(terms, 25, domain, other) == [ChannelHit(hit_id, score) for _, hit_id, score in expected[:25]]
    assert texts.rank(["nowhere"], 25, None, other) == []
    assert texts.rank(terms, 0, None, other) == []


# --- kept current in the background (the read injected) ------------------------------------------

class Namespace:
    """A namespace as the background read sees it: a version and its texts, read through ``read``."""

    def __init__(self) -> None:
        self.version, self.rows, self.reads = "v1", [("a", "retail", "refund my order", "")], 0

    def read(self, known: str | None) -> VersionedRead[list[tuple[str, ...]]]:
        self.reads += 1
        if known == self.version:
            return VersionedRead(self.version, True, [])
        return VersionedRead(self.version, False, list(self.rows))


def now(work: Any) -> Future[None]:
    """Runs the background read at once, in the caller's thread."""
    done: Future[None] = Future()
    work()
    done.set_result(None)
    return done


def test_a_corpus_is_used_once_read_and_confirmed_at_the_version_the_search_sees() -> None:
    namespace = Namespace()
    read = namespace.read
    refresh = KeptInBackground(KeptByVersion(4), now, settle_seconds=0.0, settle_per_read=0.0)
    assert refresh.current("key", "v1", read, NamespaceTexts.of) is None, "nothing kept yet: the index answers, a read starts"
    assert namespace.reads == 2, "read twice: the second read at the version confirms the first"
    kept = refresh.current("key", "v1", read, NamespaceTexts.of)
    assert kept is not None and kept.ids == ["a"]
    assert refresh.current("key", "v1", read, NamespaceTexts.of) is kept and namespace.reads == 2, "no request while current"
    namespace.version, namespace.rows = "v2", [*namespace.rows, ("b", "retail", "refund a flight", "")]
    assert refresh.current("key", "v2", read, NamespaceTexts.of) is None, "a new version: never the old corpus"
    refreshed = refresh.current("key", "v2", read, NamespaceTexts.of)
    assert refreshed is not None and refreshed.ids == ["a", "b"]


def test_no_read_starts_before_a_version_has_been_seen_for_the_settling_time() -> None:
    namespace = Namespace()
    read = namespace.read
    refresh = KeptInBackground(KeptByVersion(4), now, settle_seconds=3600.0)
    for _ in range(3):
        assert refresh.current("key", "v1", read, NamespaceTexts.of) is None
    assert namespace.reads == 0, "while writes keep changing the version, no read is spent on it"


def test_filters_the_version_does_not_apply_to_and_a_namespace_without_a_version_keep_nothing() -> None:
    namespace = Namespace()
    read = namespace.read
    refresh = KeptInBackground(KeptByVersion(4), now, settle_seconds=0.0, settle_per_read=0.0)
    assert refresh.current(None, "v1", read, NamespaceTexts.of) is None and refresh.current("key", None, read, NamespaceTexts.of) is None
    assert namespace.reads == 0


def test_one_read_per_set_of_filters_at_a_time() -> None:
    namespace, started, release = Namespace(), threading.Event(), threading.Event()
    jobs: list[threading.Thread] = []

    def read(known: str | None) -> VersionedRead[list[tuple[str, ...]]]:
        started.set()
        release.wait(5)
        return namespace.read(known)

    def in_thread(work: Any) -> Future[None]:
        done: Future[None] = Future()
        job = threading.Thread(target=lambda: (work(), done.set_result(None)))
        jobs.append(job)
        job.start()
        return done

    refresh = KeptInBackground(KeptByVersion(4), in_thread, settle_seconds=0.0, settle_per_read=0.0)
    assert refresh.current("key", "v1", read, NamespaceTexts.of) is None
    assert started.wait(5)
    assert refresh.current("key", "v1", read, NamespaceTexts.of) is None and len(jobs) == 1, "a read under way is not started again"
    release.set()
    refresh.settle()
    assert refresh.current("key", "v1", read, NamespaceTexts.of) is not None and namespace.reads == 2


def test_a_read_dropped_unrun_when_the_retriever_closes_is_waited_for_by_nobody() -> None:
    namespace = Namespace()

    def dropped(work: Any) -> Future[None]:
        queued: Future[None] = Future()
        queued.cancel()  # what a closing retriever does to the reads still queued
        return queued

    refresh = KeptInBackground(KeptByVersion(4), dropped, settle_seconds=0.0, settle_per_read=0.0)
    assert refresh.current("key", "v1", namespace.read, NamespaceTexts.of) is None
    refresh.settle()  # returns: the dropped read is no longer under way
    assert namespace.reads == 0 and not refresh.following()


# --- the channel on real Neo4j --------------------------------------------------------------------

TOPICS = ["a kettle", "a lamp", "a desk", "a phone", "a bike", "a tent", "a flight", "a hotel room"]
ABOVE = {"exact_scan_max": 0}  # every namespace is "large": the channels ask the indexes or the kept state


def experience(n: int, namespace_word: str = "") -> Experience:
    return Experience(problem=f"Customer {n} wants a refund for {TOPICS[n % len(TOPICS)]} {namespace_word}".strip(),
                      goal=f"Refund order {n}", domain="retail" if n % 3 else "travel")


def params_of(kb: KnowledgeBase, text: str, domain: str | None = None) -> FilterParams:
    query = parse_query({"task": text, "domain": domain})
    return channels.filter_params(kb.namespace, SearchFilters(), query, SearchWeights())


def ranked(texts: NamespaceTexts, text: str, domain: str | None = None) -> list[ChannelHit]:
    w = SearchWeights()
    return texts.rank(query_terms(text), w.selection.candidates, domain, math.exp(-1.0 / w.coarse.tau))


def settled(kb: KnowledgeBase, params: FilterParams) -> NamespaceTexts:
    """The corpus ``kb`` keeps for ``params`` once its background read of the current version is over."""
    ctx = kb.student.context
    assert ctx.texts_in_background is not None
    ctx.current_texts(params, ctx.search_version())  # starts the read (settling time 0)
    ctx.texts_in_background.settle()
    texts = ctx.current_texts(params, ctx.search_version())
    assert texts is not None, "read and confirmed at the current version"
    ctx.kept_state.saw(True)  # the next search waits for the version, as after a check found it current
    return texts


@pytest.fixture
def searcher(kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> tuple[KnowledgeBase, list[str]]:
    """Another knowledge base on ``kb``'s namespace (caches of its own), whose background reads start
    at once, and the name of every query it reads."""
    other = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace, database=kb.gateway.database,
                          ensure_schema=False)
    ctx = other.student.context
    assert ctx.texts_in_background is not None and ctx.vectors_in_background is not None, \
        "the synchronous gateway keeps a large namespace's texts and vectors in the background"
    ctx.texts_in_background.settle_seconds = ctx.vectors_in_background.settle_seconds = 0.0
    ctx.texts_in_background.settle_per_read = ctx.vectors_in_background.settle_per_read = 0.0
    ctx.kept_state.recheck_seconds = 0.0
    asked: list[str] = []
    read = other.gateway.read

    def recording_read(name: str, **params: object) -> list[dict[str, object]]:
        asked.append(name)
        return read(name, **params)

    monkeypatch.setattr(other.gateway, "read", recording_read)
    return other, asked


@pytest.mark.parametrize("domain", [None, "retail"])
def test_above_the_scan_limit_the_channel_ranks_the_namespace_s_own_texts_as_the_exact_scan_once_current(
    kb: KnowledgeBase, searcher: tuple[KnowledgeBase, list[str]], domain: str | None,
) -> None:
    other, asked = searcher
    kb.add_experiences([experience(n) for n in range(40)])
    crowd = KnowledgeBase(kb.driver, kb.embedder, namespace=kb.namespace + "-crowd", database=kb.gateway.database,
                          ensure_schema=False)
    try:  # another namespace full of the query's words: the shared index's top hits are its
        crowd.add_experiences([experience(n, "kettle refund kettle") for n in range(100, 400)])
        params = params_of(other, "refund for a kettle", domain)
        answer = ranked(settled(other, params), "refund for a kettle", domain)
        assert answer and answer == ranked(other.student.context.namespace_texts(params), "refund for a kettle", domain)
        asked.clear()
        hits = other.search("refund for a kettle", domain=domain, weights=ABOVE).hits
        assert "search_experience_fulltext" not in asked, "the index is not asked once the corpus is current"
        assert any("fulltext:experience_text" in hit.found_by for hit in hits)
    finally:
        crowd.clear()


def test_another_process_s_write_is_never_ranked_from_the_old_corpus(
    kb: KnowledgeBase, searcher: tuple[KnowledgeBase, list[str]],
) -> None:
    other, asked = searcher
    kb.add_experiences([experience(n) for n in range(20)])
    params = params_of(other, "refund zanzibar kettle")
    before = settled(other, params)
    added = Experience(problem="Customer wants a refund for a zanzibar kettle", goal="Refund", domain="retail")
    kb.add_experiences([added])
    assert added.key not in before.ids
    asked.clear()
    hits = other.search("refund zanzibar kettle", weights=ABOVE).hits
    # A new version: the index answers, or the corpus is first brought to it by the change feed
    # (kbgraph.search.student.change_feed); never the corpus of the version before.
    assert "search_experience_fulltext" in asked or "search_changes_since" in asked
    assert hits[0].experience.id == added.key
    after = ranked(settled(other, params), "refund zanzibar kettle")
    assert after[0].id == added.key


def test_scores_are_floats_of_the_corpus_arrays() -> None:
    texts = NamespaceTexts.of([("a", "retail", "refund order", ""), ("b", "retail", "order", "")])
    assert all(type(hit.score) is float for hit in texts.rank(["order"], 5, None, 1.0))
    assert isinstance(texts.domains, np.ndarray)


def test_a_version_waits_longer_to_be_read_the_longer_the_last_read_took() -> None:
    namespace, clock = Namespace(), [0.0]

    def slow(known: str | None) -> VersionedRead[list[tuple[str, ...]]]:
        clock[0] += 1.0  # each read takes a second
        return namespace.read(known)

    refresh = KeptInBackground(KeptByVersion(4), now, settle_seconds=0.0, settle_per_read=4.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("kbgraph.search.student.kept_in_background.time.monotonic", lambda: clock[0])
        assert refresh.current("key", "v1", slow, NamespaceTexts.of) is None and namespace.reads == 2
        namespace.version = "v2"
        assert refresh.current("key", "v2", slow, NamespaceTexts.of) is None
        clock[0] += 7.9  # the last read took 2 s: a version is read once seen for 8 s
        assert refresh.current("key", "v2", slow, NamespaceTexts.of) is None and namespace.reads == 2
        clock[0] += 0.1
        assert refresh.current("key", "v2", slow, NamespaceTexts.of) is None and namespace.reads == 4
