"""The scoring facts of a large namespace kept in the process, so that the facts stage of a search
asks the server only for what it cannot keep.

``search_candidates_score`` computes every fact of a search's ~70 candidates and their workflows in
the database: ~11 ms of server time at 10,000 experiences, most of it facts no search changes
(kinds, runs, the ABSTRACTION edges, the ways each task was done). Those change only in
writes that give the namespace a new search version (kbgraph.store.search_version), so they are
kept with it, as the vectors and texts are (:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`:
read in the background, used only when read and confirmed at the version the search read). What
is left, ``search_candidates_feedback``, reads per candidate what feedback changes without a new
version (quality, utility, the task outcomes), the cosines against the query that the vector
channels did not return, and the candidates' texts for the lexical score (the namespace's texts
would be most of the kept read: 6.0 s at 100,000 experiences with them): ~4 ms. Every value is the one ``search_candidates_score`` gives
(``tests/search/test_kept_facts.py`` compares them field by field). Kept up to
``IN_PROCESS_MAX`` experiences, as the vectors (kbgraph.search.student.channels).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbgraph.search.handoff import hands_off
from kbgraph.search.student.change_feed import first_id, rows_of, without
from kbgraph.search.student.rows import CandidateFacts
from kbgraph.search.student.versioned import RowsRead, VersionedRead
from kbgraph.search.task_ways import TaskWays, task_ways, unique_ways, way_share
from kbgraph.store.gateway import Neo4jGateway

__all__ = ["NamespaceFacts", "StoredFacts", "fact_rows", "patched_facts"]


@dataclass(frozen=True, slots=True)
class StoredFacts:
    """One experience's facts that only a versioned write changes (a row of
    ``search_experience_fact_rows``)."""

    id: str
    kind: str
    status: str | None
    domain: str | None
    scope: str
    task_key: str | None
    operations: tuple[str, ...] | None
    success_rate: float
    source_ids: tuple[str, ...]
    failed_source_ids: frozenset[str]
    has_steps: bool
    #: ``(target id, target status, weight, reason)`` of each ABSTRACTION edge, in target id order.
    abstractions: tuple[tuple[str, str | None, float, str], ...]
    #: Its way hands the task to a human (kbgraph.search.handoff).
    hands_off: bool
    #: What the lexical score reads (problem, goal, domain), as search_candidates_feedback reads it.
    text: str | None

    @classmethod
    def of(cls, row: Sequence[Any]) -> StoredFacts:
        (id_, kind, status, domain, scope, task_key, operations, success_rate, sources, failed, has_steps,
         abstractions, text) = row
        return cls(str(id_), kind, status, domain, str(scope), task_key,
                   None if operations is None else tuple(operations), float(success_rate),
                   tuple(sources), frozenset(failed), bool(has_steps),
                   tuple((str(a), s, float(w), str(r)) for a, s, w, r in abstractions), hands_off(operations or ()),
                   text)


class NamespaceFacts:
    """The stored facts of every experience of a namespace at one search version, and the facts of a
    search's candidates made from them and from what ``search_candidates_feedback`` reads."""

    def __init__(self, rows: Iterable[Sequence[Any]]):
        self.by_id: dict[str, StoredFacts] = {}
        self._members: dict[str, list[StoredFacts]] = {}  # abstract id: the experiences abstracted to it
        self._by_task: dict[str, list[StoredFacts]] = {}  # task_key: its concrete experiences
        # id: (the runs it stands for, those that worked), made on first use (a dict is thread-safe
        # enough: two searches at worst make the same value twice).
        self._runs: dict[str, tuple[list[str], list[str], frozenset[str]]] = {}
        self._task_runs: dict[str, frozenset[str]] = {}  # task_key: the runs of its concrete experiences
        self._ways_kept: dict[tuple[str, tuple[str, ...]], list[list[Any]]] = {}  # (task_key, statuses): ways
        for row in rows:
            facts = StoredFacts.of(row)
            self.by_id[facts.id] = facts
            for target, *_ in facts.abstractions:
                self._members.setdefault(target, []).append(facts)
            if facts.kind == "concrete" and facts.task_key is not None:
                self._by_task.setdefault(facts.task_key, []).append(facts)

    def patched(self, rows: Sequence[Sequence[Any]], changed: Iterable[str]) -> NamespaceFacts:
        """The facts of ``rows`` (the rows now, in id order) made from these and the ids whose rows
        ``changed``: the groups (an abstract experience's members, a task's experiences) that hold a
        changed experience, before or now, are made again, in id order as ``rows`` give them; the
        others, and what was worked out of them, are taken over."""
        gone = set(changed)
        fresh = [StoredFacts.of(row) for row in rows_of(rows, gone, first_id)]
        old = [f for i in gone if (f := self.by_id.get(i)) is not None]
        targets = {t for f in (*old, *fresh) for t, *_ in f.abstractions}
        tasks = {f.task_key for f in (*old, *fresh) if f.task_key is not None}
        after = NamespaceFacts(())
        # Copied whole, then the changed keys taken out: a copy is C's work, a comprehension over
        # 10,000 entries Python's (what a follow after every write costs the client).
        after.by_id = without(self.by_id, gone)
        after.by_id.update((f.id, f) for f in fresh)
        after._members = without(self._members, targets)
        after._by_task = without(self._by_task, tasks)
        for target in targets:
            members = [f for f in self._members.get(target, ()) if f.id not in gone]
            members += [f for f in fresh if any(t == target for t, *_ in f.abstractions)]
            if members:
                after._members[target] = sorted(members, key=lambda f: f.id)
        for task in tasks:
            group = [f for f in self._by_task.get(task, ()) if f.id not in gone]
            group += [f for f in fresh if f.kind == "concrete" and f.task_key == task]
            if group:
                after._by_task[task] = sorted(group, key=lambda f: f.id)
        # What was worked out of groups no change reached stays true.
        after._runs = without(self._runs, gone | targets)
        after._task_runs = without(self._task_runs, tasks)
        after._ways_kept = {k: w for k, w in self._ways_kept.items() if k[0] not in tasks}
        return after

    def __len__(self) -> int:
        return len(self.by_id)

    def with_workflows(self, ids: Sequence[str], statuses: Sequence[str]) -> list[str]:
        """``ids`` that are stored, then the workflows of the concrete ones (the experiences of
        ``statuses`` they are abstracted to) that are not among them: the experiences whose facts
        ``search_candidates_score`` returns for ``ids``."""
        asked = [i for i in dict.fromkeys(ids) if i in self.by_id]
        seen, workflows = set(asked), []
        for i in asked:
            facts = self.by_id[i]
            if facts.kind == "abstract":
                continue
            for target, status, _, _ in facts.abstractions:
                if status in statuses and target not in seen:
                    seen.add(target)
                    workflows.append(target)
        return asked + workflows

    def candidate_facts(
        self, found: Sequence[str], feedback: Iterable[Mapping[str, Any]], statuses: Sequence[str],
        exclude: set[str], handoff_credit: float, known: Mapping[str, Mapping[str, float]],
    ) -> list[CandidateFacts]:
        """The facts of experiences ``found`` (:meth:`with_workflows`) that ``feedback`` (the rows of
        ``search_candidates_feedback``) still has, as ``read_facts`` makes them of
        ``search_candidates_score``'s rows."""
        ways = task_ways(self._ways(found, statuses, exclude), handoff_credit)
        facts = []
        for row in feedback:
            stored = self.by_id.get(row["id"])
            if stored is None:  # stored after the version these facts were read at
                continue
            scores = known.get(stored.id, {})
            facts.append(self._facts(stored, row, statuses, exclude, ways, scores))
        return facts

    def _facts(self, e: StoredFacts, row: Mapping[str, Any], statuses: Sequence[str], exclude: set[str],
               ways: TaskWays, scores: Mapping[str, float]) -> CandidateFacts:
        # The row search_candidates_score would have returned, made into facts as read_facts makes
        # them (CandidateFacts.from_record).
        sources, worked, every = self._runs_of(e)
        # An exclusion that names none of its runs (the common case: a query's own runs are of
        # a few experiences) leaves the counts as they are, without a look at each run.
        untouched = not exclude or exclude.isdisjoint(every)
        edge = None if e.kind == "abstract" else next(
            ({"id": a, "weight": w, "reason": r} for a, status, w, r in e.abstractions if status in statuses), None)
        record = {
            **row, "kind": e.kind, "domain": e.domain, "scope": e.scope, "task_key": e.task_key,
            "operations": e.operations, "success_rate": e.success_rate, "support": len(worked), "runs": len(sources),
            "remaining": len(worked) if untouched else sum(1 for s in worked if s not in exclude),
            "runs_left": len(sources) if untouched else sum(1 for s in sources if s not in exclude),
            "workflow": edge, "has_steps": e.has_steps,
        }
        return CandidateFacts.from_record(
            record, share=way_share(e.task_key, e.operations, ways) if e.kind == "concrete" else 1.0,
            hands_off=e.hands_off, semantic=scores.get("semantic"), structural=scores.get("structural"))

    def _runs_of(self, e: StoredFacts) -> tuple[list[str], list[str], frozenset[str]]:
        """The runs ``e`` stands for (an abstract experience: its instances'), those that worked,
        and the set of them."""
        runs = self._runs.get(e.id)
        if runs is None:
            members = self._members.get(e.id, []) if e.kind == "abstract" else [e]
            sources = [s for m in members for s in m.source_ids]
            failed = frozenset().union(*(m.failed_source_ids for m in members))
            runs = (sources, [s for s in sources if s not in failed], frozenset(sources))
            self._runs[e.id] = runs
        return runs

    def _ways(self, found: Sequence[str], statuses: Sequence[str], exclude: set[str]) -> list[list[Any]]:
        """``ways`` of ``search_candidates_score``: per task of the concrete experiences ``found``,
        each way its concrete experiences of ``statuses`` took, with their runs that worked outside
        ``exclude``."""
        tasks = dict.fromkeys(f.task_key for i in found if (f := self.by_id.get(i)) is not None
                              and f.kind == "concrete" and f.task_key is not None)
        return [way for task_key in tasks for way in self._task_ways(task_key, tuple(statuses), exclude)]

    def _task_ways(self, task_key: str, statuses: tuple[str, ...], exclude: set[str]) -> list[list[Any]]:
        key = (task_key, statuses)
        if exclude:
            every = self._task_runs.get(task_key)
            if every is None:
                every = frozenset(s for x in self._by_task.get(task_key, ()) for s in x.source_ids)
                self._task_runs[task_key] = every
            if exclude.isdisjoint(every):  # the ways without the exclusion, kept
                return self._task_ways(task_key, statuses, set())
        elif (kept := self._ways_kept.get(key)) is not None:
            return kept
        worked: dict[tuple[str, ...] | None, int] = {}
        for x in self._by_task.get(task_key, ()):
            if x.status in statuses:
                worked[x.operations] = worked.get(x.operations, 0) + sum(
                    1 for s in x.source_ids if s not in x.failed_source_ids and s not in exclude)
        # One row per operations, as the query groups them; then merged as read_facts merges them.
        ways = unique_ways([[[task_key, way, runs] for way, runs in worked.items()]])
        if not exclude:
            self._ways_kept[key] = ways
        return ways


def fact_rows(gateway: Neo4jGateway, namespace: str) -> RowsRead[list[list[Any]]]:
    """Reads ``search_experience_fact_rows`` of ``namespace`` with the version kept (a versioned read),
    of experiences ``ids`` only when given (the change feed: kbgraph.search.student.change_feed)."""
    def read(known: str | None, ids: list[str] | None = None) -> VersionedRead[list[list[Any]]]:
        answer = gateway.read("search_experience_fact_rows", kb=namespace, known=known, ids=ids)[0]
        return VersionedRead(answer["version"], bool(answer["unchanged"]), list(answer["rows"]))

    return read


def patched_facts(before: NamespaceFacts, rows: list[list[Any]], changed: list[str]) -> NamespaceFacts:
    """The facts of ``rows`` made from ``before`` and the ids whose rows ``changed`` (a
    :data:`~kbgraph.search.student.versioned.Patch`): :meth:`NamespaceFacts.patched`."""
    # No row changed (a write read again as it was): the facts before, with what was worked out of them.
    return before.patched(rows, changed) if changed else before
