"""Neo4j's plans made before a process's first add or search needs them.

Neo4j plans a statement the first time it runs after the server started, and again the first time
it runs once the statistics it was planned with have moved past
``dbms.cypher.statistics_divergence_threshold`` (checked at most every
``dbms.cypher.min_replan_interval``): after a bulk write, such as ingesting thousands of runs.
kbgraph's statements are large (CALL subqueries, several indexes) and planning one takes the
server 0.05-1.2 s. On 2026-12-07, with the query caches cleared (what a restart leaves), the first
search of a process at 10,000 experiences took 3.8 s, the first search with executed steps 0.8 s
(``search_step_scan`` 0.4 s twice, ``search_step_text_rows`` 0.55 s); after a 10,000-experience
build the first ~10 adds paid 0.1-0.9 s a statement (link, concepts, merge).

:func:`warm_plans` pays that once, up front, in a namespace of its own that it deletes afterwards.
Plans are the server's: cached by the statement's text and shared by every namespace and process,
so running the statements anywhere plans them for every caller. It adds the bundled sample runs
one at a time, as an agent loop does (the first add consolidates from scratch, the next ones
incrementally; tasks repeated and failed runs among them, so merges, links and failure records are
written) and a ready-made experience under an explicit id, searches them with and without executed steps as a large namespace is searched (through
the indexes, ``exact_scan_max`` 0, then from what the process keeps of the namespace), refines a
failed step, records feedback, and deletes the namespace. It changes nothing in any other
namespace; the server's statistics move by the few nodes it writes and deletes.

Who calls it: ``kbgraph server start`` once the managed server is up, a bulk ingest that wrote
``warm_plans_after`` experiences or more (:meth:`kbgraph.kb.KnowledgeBase.ingest`), and
``kbgraph bench``'s scaled builds, which stand for such an ingest. A warm-up that another process
interrupted (killed half-way) leaves its namespace behind; the next one deletes namespaces of
warm-ups started more than :data:`LEFTOVER_AFTER` ago.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import TYPE_CHECKING, Any

from kbgraph.core.settings import Settings
from kbgraph.embedders import Embedder
from kbgraph.store.gateway import Neo4jGateway

if TYPE_CHECKING:
    from kbgraph.kb import KnowledgeBase

__all__ = ["LEFTOVER_AFTER", "PREFIX", "PlanWarmup", "leftover_namespaces", "warm_plans", "warmed_after_writing",
           "warmup_runs"]

#: The namespaces warm-ups write in: ``kbgraph-warmup-<UTC start, %Y%m%dT%H%M%S>-<random>``.
PREFIX = "kbgraph-warmup-"
_STAMP = "%Y%m%dT%H%M%S"
#: A warm-up's namespace still there this long after it started was left by one that was killed.
LEFTOVER_AFTER = timedelta(hours=1)
#: The sample runs added one at a time (hotel: three tasks, each run two to four times, two failed).
_SAMPLE_RUNS = "real_runs.jsonl"
#: A ready-made experience, added under an explicit id (a write that checks what the id names).
_SAMPLE_EXPERIENCES = "experiences.jsonl"

#: The error of the failed step the warm-up searches with and refines.
_STEP_ERROR = "Error: the request failed"

#: Reports where the warm-up is: (what it is doing, done, total).
Progress = Callable[[str, int, int], None]


@dataclass
class PlanWarmup:
    """What a warm-up did: its namespace (deleted), the runs and experiences it added, the searches
    it made, and the seconds each part took (``adds``, ``searches``, ``deleted``, ``total``)."""

    namespace: str
    added: int = 0
    searches: int = 0
    leftovers_deleted: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def warmup_runs() -> list[dict[str, Any]]:
    """The bundled sample runs a warm-up adds, in file order."""
    return _sample(_SAMPLE_RUNS)


def _sample(name: str) -> list[dict[str, Any]]:
    text = (resources.files("kbgraph") / "samples" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def leftover_namespaces(names: Sequence[str], now: datetime) -> list[str]:
    """The warm-up namespaces among ``names`` started more than :data:`LEFTOVER_AFTER` before ``now``
    (a name that does not parse is not a warm-up's and is left alone)."""
    old: list[str] = []
    for name in names:
        if not name.startswith(PREFIX):
            continue
        try:
            started = datetime.strptime(name[len(PREFIX):].split("-", 1)[0], _STAMP).replace(tzinfo=UTC)
        except ValueError:
            continue
        if now - started > LEFTOVER_AFTER:
            old.append(name)
    return old


def warm_plans(gateway: Neo4jGateway, embedder: Embedder, settings: Settings, on_progress: Progress | None = None,
               namespace: str | None = None) -> PlanWarmup:
    """Runs kbgraph's statements once in a namespace of its own (``namespace``, by default a new
    one named after :data:`PREFIX`) through ``gateway`` (a knowledge base's, synchronous or the
    asyncio one: a gateway serves every namespace), then deletes it (module docstring)."""
    from kbgraph.kb import KnowledgeBase  # pylint: disable=import-outside-toplevel,redefined-outer-name  # kb imports this module

    started = time.perf_counter()
    now = datetime.now(UTC)
    namespace = namespace or f"{PREFIX}{now.strftime(_STAMP)}-{uuid.uuid4().hex[:8]}"
    report = PlanWarmup(namespace)
    for old in leftover_namespaces([str(r["kb"]) for r in gateway.read("plan_warmup_namespaces", prefix=PREFIX)], now):
        gateway.auto_commit("namespace_delete", kb=old)
        report.leftovers_deleted.append(old)
    scratch = settings.model_copy(update={
        "namespace": namespace, "abstractor": "rules", "reflector": "rules", "ask_splitter": "rules",
        # Searched as a large namespace is: its indexes first, then what the process keeps.
        "search": settings.search.merged({"scan.exact_scan_max": 0}),
    })
    runs = warmup_runs()
    items = [*runs, {**_sample(_SAMPLE_EXPERIENCES)[0], "id": f"{namespace}-experience"}]
    # The schema is there (the caller's knowledge base applied it) and a new namespace has nothing to convert.
    kb = KnowledgeBase(gateway.driver, embedder, namespace=namespace, database=gateway.database, settings=scratch,
                       ensure_schema=False, gateway=gateway)
    try:
        mark = time.perf_counter()
        held_back, *first = items  # added between two rounds of searches: what the process keeps follows it
        for done, item in enumerate(first, 1):
            kb.add_trajectories([item])
            if on_progress is not None:
                on_progress("adding sample runs", done, len(first))
        report.seconds["adds"] = _since(mark)
        mark = time.perf_counter()
        report.searches = _search_each_way(kb, runs, on_progress, lambda: kb.add_trajectories([held_back]))
        report.added = len(items)
        report.seconds["searches"] = _since(mark)
    finally:
        mark = time.perf_counter()
        kb.close()
        gateway.auto_commit("namespace_delete", kb=namespace)
        report.seconds["deleted"] = _since(mark)
    report.seconds["total"] = _since(started)
    return report


def warmed_after_writing(kb: KnowledgeBase, written: int,
                         on_progress: Progress | None = None) -> float | None:
    """The seconds of ``kb``'s plan warm-up when a bulk write just wrote ``written`` experiences, at
    least ``warm_plans_after`` of them (the setting; 0: never), else None (nothing run)."""
    after = kb.settings.warm_plans_after
    if after <= 0 or written < after:
        return None

    def progress(what: str, done: int, total: int) -> None:
        if on_progress is not None:
            on_progress(f"warming plans: {what}", done, total)

    return kb.warm_plans(progress).seconds["total"]


def _search_each_way(kb: KnowledgeBase, runs: Sequence[dict[str, Any]], on_progress: Progress | None,
                     write: Callable[[], Any]) -> int:
    """Searches ``kb`` as agents do: a request alone, then with executed steps (one failed), a
    refine of the failed step, and the feedback of the first search; first through the indexes,
    then once what the process keeps is current, then after ``write`` (an add), as what it keeps
    follows the write (the change feed's reads by id), and once more when it has. Returns how many
    searches it made."""
    failed = next((r for r in runs if not r["outcome"]["success"]), runs[0])
    steps = [{"action": s["action"], "arguments": s.get("arguments") or {}} for s in failed["steps"][:2]]
    if len(failed["steps"]) > 1:
        steps[-1]["error"] = _STEP_ERROR
    rounds = 4
    searches = 0
    for round_ in range(rounds):
        first = kb.search(failed["task"], domain=failed.get("domain"))
        kb.search(failed["task"], domain=failed.get("domain"), steps_so_far=steps)
        kb.search("", domain=failed.get("domain"), steps_so_far=steps[:1])
        kb.refine([{**steps[-1], "error": _STEP_ERROR}], domain=failed.get("domain"))
        searches += 4
        if round_ == 0 and first.hits:
            kb.record_feedback(retrieved=first.ids(), used=first.ids()[:1], outcome=True, task=failed["task"])
        if round_ == 1:
            write()
        if round_ in (0, 1):  # after the first round, and after the write, what the process keeps is read now
            kb.student.warm()
        if on_progress is not None:
            on_progress("searching", round_ + 1, rounds)
    return searches


def _since(mark: float) -> float:
    return round(time.perf_counter() - mark, 3)
