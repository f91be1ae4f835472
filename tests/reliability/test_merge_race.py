"""Merges racing a feedback burst: every feedback event an agent was told succeeded is counted
exactly once, whether it named an experience that was being merged, one merged a moment before,
or the survivor (real Neo4j, real embedder)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from kbgraph.core.errors import KbgraphError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, Step

TOPICS = ["a kettle", "a lamp", "a desk", "a phone", "a bike", "a tent", "a camera", "a watch", "a sofa", "a rug",
          "a drill", "a scarf"]


def originals(round_: int) -> list[Experience]:
    return [Experience(problem=f"Customer {n} of wave {round_} wants help with {TOPICS[n]} order number {n}.",
                       goal=f"Get done: task {n} of wave {round_}", domain="retail",
                       steps=[Step(action="get_order_details"), Step(action=f"cancel_pending_order_{n}_{round_}")])
            for n in range(len(TOPICS))]


def near_duplicates(items: list[Experience]) -> list[Experience]:
    return [Experience(problem=e.problem + " Please.", goal=e.goal, domain=e.domain, steps=e.steps) for e in items]


def as_jsonl(path: Path, items: list[Experience]) -> Path:
    path.write_text("".join(json.dumps({"problem": e.problem, "goal": e.goal, "domain": e.domain,
                                        "steps": [{"action": s.action} for s in e.steps]}) + "\n" for e in items))
    return path


def burst_reached(confirmed: Counter[str], lock: threading.Lock, events: int, timeout: float = 60.0) -> None:
    """Waits until the agents have had ``events`` feedback events confirmed (at most ``timeout``
    seconds; the test's assertion then says the burst fell short)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with lock:
            if confirmed["retrieved"] >= events:
                return
        time.sleep(0.05)


@pytest.mark.parametrize("merging", ["maintain", "ingest"])
def test_a_feedback_burst_during_merges_loses_nothing(kb: KnowledgeBase, merging: str, tmp_path: Path) -> None:
    rng = random.Random(12)
    known: list[str] = []
    confirmed: Counter[str] = Counter()
    refused: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def agent(seed: int) -> None:
        local = random.Random(seed)
        while not stop.is_set():
            with lock:
                target = local.choice(known)
            success = local.random() < 0.5
            try:
                kb.record_feedback(retrieved=[target], used=[target], outcome=success)
            except KbgraphError as exc:  # refused whole: nothing was written
                with lock:
                    refused.append(str(exc))
                continue
            with lock:
                confirmed.update(retrieved=1, used=1, succeeded=int(success))

    merges = 0
    kb.add_experiences(originals(0))
    known += [e.key for e in originals(0)]
    agents = [threading.Thread(target=agent, args=(seed,)) for seed in range(4)]
    for thread in agents:
        thread.start()
    try:
        for round_ in range(4):
            # The burst has reached the experiences of the waves so far (~13 events a wave, however
            # fast this machine's merges are against its feedback writes) ...
            burst_reached(confirmed, lock, 13 * (round_ + 1))
            # ... new near-duplicates arrive (some of the waves before too), agents use them at
            # once, and maintenance merges them while the burst goes on.
            wave = near_duplicates(originals(rng.randrange(round_ + 1)))
            fresh = [e for e in wave if e.key not in known]
            if merging == "maintain":
                kb.add_experiences(fresh)
                with lock:
                    known.extend(e.key for e in fresh)
                merges += kb.maintain().merged
            else:  # the ingest's own merge stage folds them into what agents are using
                merges += kb.ingest([as_jsonl(tmp_path / f"wave-{round_}.jsonl", fresh)]).experiences_merged
            kb.add_experiences(originals(round_ + 1))
            with lock:
                known.extend(e.key for e in originals(round_ + 1))
    finally:
        stop.set()
        for thread in agents:
            thread.join()

    stored: Counter[str] = Counter()
    every = [row["id"] for row in kb.gateway.read("experience_ids_page", kb=kb.namespace, after="", limit=10**6)]
    for row in kb.gateway.read("feedback_counters", kb=kb.namespace, ids=every):
        stored.update(retrieved=row["retrieved"], used=row["used"], succeeded=row["succeeded"])
    print(f"\n{merging}: merges {merges}, events confirmed {confirmed['retrieved']}, refused {len(refused)}; stored {dict(stored)}")
    assert merges >= len(TOPICS), "the race needs merges to happen"
    assert confirmed["retrieved"] > 50, "the race needs a burst"
    assert stored == confirmed, f"confirmed {dict(confirmed)} but stored {dict(stored)} ({refused[:2]})"
