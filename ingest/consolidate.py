"""Pass 2 of the ingestion pipeline: merge duplicates (stage 6), concepts and documents (stages
4–5), links (stage 7) — from scratch, or for what changed since the last consolidation.

**From scratch** (the first consolidation of a process, ``recluster``, maintenance's relinking,
or whenever the namespace changed in a way this process did not see): every active experience's
facts are read, merged, planned (:class:`~kbgraph.ingest.link_state.LinkState`) and the plan's
difference with the stored relations written.

**Incremental** (every later ingest of the process): experience_upsert marks each experience it
creates, or gives new sources, ``unlinked``; the consolidation reads only the marked ones' facts,
merges them against the remembered state (within their blocks), re-plans the parts of the link
plan they touch and writes that delta: adding a run no longer reads the namespace. The state is
remembered with the namespace's *facts version* (``KbState.facts_version``), which every
consolidation sets and every other writer of experiences (delete, maintenance, restore, import,
clear) changes: a version this process did not set means someone else changed the namespace, and
the next consolidation starts from scratch — unless the versions between were all set by
consolidations of other processes (or KnowledgeBases): each logs the experiences whose facts it
changed (``KbState.facts_log``, ingest/link_state/_log.py), and the state follows them, reading
only those. The namespace's relation totals (for the report) are
remembered with the plan too, counted once from scratch and then updated from what each write
changed, counted in the write's own transaction. Both ways end in the same graph
(tests/ingest/test_link_state.py for the plans, tests/ingest/test_incremental.py for the graph).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from kbgraph.store.experiences import abstract_row, embedding_row
from kbgraph.store.experiences import step_rows as experience_steps
from kbgraph.ingest.concepts import ConceptStage
from kbgraph.ingest.context import IngestContext
from kbgraph.ingest.facts import ExperienceFacts
from kbgraph.ingest.integrate_evidence import DocumentRewriter
from kbgraph.ingest.link import ABSTRACT_SOURCE, LinkPlan, Row
from kbgraph.ingest.link_state import LOG_ENTRIES, LinkDelta, LinkState, changes_since, log_entry
from kbgraph.ingest.merge import MergeGroup, plan_merges
from kbgraph.ingest.report import IngestReport
from kbgraph.core.models import Experience

Stage = Callable[[str], AbstractContextManager[None]]
#: The experience relations stage 7 writes (and the ingest report counts).
RELATION_TYPES = ("ABSTRACTION", "COMPOSITION", "ADAPTATION", "ALTERNATIVE")


class Consolidation:
    def __init__(self, kb: IngestContext, report: IngestReport, stage: Stage,
                 document_writer: DocumentRewriter | None = None):
        self.kb = kb
        self.report = report
        self.stage = stage
        self.document_writer = document_writer
        self._fresh_abstracts: list[Experience] = []  # workflows written as new experiences (marked unlinked)
        # The namespace's experience relations by type, kept up to date by an incremental
        # consolidation from what each of its writes changed (counted in the write's transaction).
        self._totals: dict[str, int] = {}
        self._merged_away: set[str] = set()  # experiences this consolidation's merges deleted
        self._survivors: set[str] = set()  # the experiences its merges kept (their provenance grew)

    def run(self, recluster: bool = False, merge: bool = True, run: str | None = None) -> None:
        """Merges (unless ``merge`` is off: maintenance merges by its own plan), concepts and
        documents, links; workflows that dissolve are archived under ``run``."""
        now = datetime.now(UTC)
        run = run or f"consolidate-{now.strftime('%Y%m%dT%H%M%S%f')}"
        ns = self.kb.namespace
        changed = self.kb.gateway.read("kb_state_unlinked", kb=ns)[0]
        version, marks = changed["facts_version"], changed["marks"]
        taken = self.kb.link_state.take_any()  # forgotten in any case until this one is done
        remembered = None
        if taken is not None and version is not None and merge and not recluster:
            remembered = self._followed(taken, version, changed["facts_log"])
        if remembered is None or not merge or recluster:
            self.report.consolidated = "from scratch"
            state = self._from_scratch(recluster, merge, run, now)
            totals = _relation_totals(self.kb.gateway.read("experience_relation_totals", kb=ns)[0])
        else:
            self.report.consolidated = "incremental"
            state, totals = remembered
            self._totals = dict(totals)
            self._incremental(state, marks, run, now)
            totals = self._totals
        self.report.relations = {kind: totals[kind] for kind in RELATION_TYPES}
        # Generated workflows were written by add_experiences, which marked them: nothing to do.
        rows = [{"id": a.key, "stamp": None} for a in self._fresh_abstracts]
        # The report's concept counts are read in the last transaction (one round trip fewer).
        counts = ("ingest_report_concepts", {"kb": ns})
        if not merge:
            # The marked experiences were linked but not merged: they stay marked, and the state
            # (with duplicates not merged) is not remembered, so the next consolidation starts over.
            results = self.kb.gateway.write_all([("experiences_unlinked_clear", {"kb": ns, "rows": rows}), counts])
            self._report_concepts(results[-1][0])
            return
        # Every mark read above is now merged and linked (one written again since keeps its new stamp);
        # those of experiences merged away left with them.
        rows += [{"id": m["id"], "stamp": m["stamp"]} for m in marks if m["id"] not in self._merged_away]
        following = uuid.uuid4().hex
        # Every experience whose facts this consolidation changed, however it planned: another
        # process's state behind it follows them (ingest/link_state/_log.py).
        changed_facts = {m["id"] for m in marks} | self._merged_away | self._survivors
        entry = log_entry(version, following, changed_facts, totals)
        results = self.kb.gateway.write_all([
            ("experiences_unlinked_clear", {"kb": ns, "rows": rows}),
            ("kb_state_facts_version_set", {"kb": ns, "expected": version, "next": following, "entry": entry,
                                            "entries": LOG_ENTRIES}),
            counts,
        ])
        self._report_concepts(results[-1][0])
        if results[1] and results[1][0]["ours"]:
            self.kb.link_state.keep(state, following, totals)

    def _report_concepts(self, counts: Row) -> None:
        report = self.report
        report.concepts, report.insights = counts["concepts"], counts["insights"]
        report.meta_concepts = counts["meta_concepts"]
        report.relations |= {"EXHIBITS": counts["exhibits"], "INSTANCE_OF": counts["instance_of"]}

    # -- the two ways ------------------------------------------------------------------------------

    def _from_scratch(self, recluster: bool, merge: bool, run: str, now: datetime) -> LinkState:
        facts: list[ExperienceFacts] | None = None
        if merge:
            with self.stage("merge"):
                facts = self._facts()
                groups = plan_merges(facts)
                self._merge(groups)
                if groups:
                    facts = None  # read again for linking, as the merges left them
        self._concepts(recluster)
        with self.stage("link"):
            state = LinkState(facts if facts is not None else self._facts())
            self._write_plan(state.plan(), run, now)
        return state

    def _followed(self, taken: tuple[LinkState, dict[str, int], str], version: str,
                  log: list[str]) -> tuple[LinkState, dict[str, int]] | None:
        """The remembered state brought to facts version ``version``: as it is when it holds for
        that version, else updated with what the logged consolidations since changed (another
        process's adds: ingest/link_state/_log.py), the experiences they touched read as they are
        now. None: no chain of entries leads there (from scratch)."""
        state, totals, held = taken
        changes = changes_since(log, held, version)
        if changes is None:
            return None
        if changes.consolidations:
            with self.stage("follow"):
                fresh = self._facts(sorted(changes.ids)) if changes.ids else []
                active = {f.id for f in fresh}
                # The update an incremental writer makes; the plan's delta is already written.
                state.update([i for i in changes.ids if i not in active and i in state.facts], fresh)
            self.report.consolidations_followed = changes.consolidations
            totals = changes.totals
        return state, totals

    def _incremental(self, state: LinkState, marks: list[dict[str, Any]], run: str, now: datetime) -> None:
        with self.stage("merge"):
            ids = sorted({m["id"] for m in marks})
            fresh = self._facts(ids)
            # Marked but no longer active (archived or deleted since): it leaves the plan.
            gone = [i for i in sorted(set(ids) - {f.id for f in fresh}) if i in state.facts]
            groups = state.plan_merges(fresh)
            self._merge(groups, count_relations=True)
        self._concepts(recluster=False)
        with self.stage("link"):
            self._write_delta(state.after_merges(fresh, groups, removed=gone), len(state.abstracts), run, now)

    # -- reading -------------------------------------------------------------------------------------

    def _facts(self, ids: list[str] | None = None) -> list[ExperienceFacts]:
        """The active experiences' facts (of ``ids``, or all); vectors only for ids this
        KnowledgeBase has not read before (kbgraph.store.vector_cache.PgVectorCache)."""
        ns = self.kb.namespace
        if ids is None:
            rows = self.kb.gateway.read("experiences_link_facts", kb=ns)
        else:
            rows = [row for start in range(0, len(ids), 5000)
                    for row in self.kb.gateway.read("experiences_link_facts_by_ids", kb=ns, ids=ids[start:start + 5000])]
        vectors = self.kb.pg_vectors.read_through(
            (row["id"] for row in rows), lambda wanted: self.kb.gateway.read("experience_pg_vectors", kb=ns, ids=wanted))
        return [ExperienceFacts.from_row({**row, "pg": vectors[row["id"]]}) for row in rows]

    # -- writing -------------------------------------------------------------------------------------

    def _merge(self, groups: list[MergeGroup], count_relations: bool = False) -> None:
        ns = self.kb.namespace
        if groups:
            merge_call = ("experience_merge", {"kb": ns, "groups": [g.as_row() for g in groups]})
            if not count_relations:  # from scratch: the totals are counted afterwards
                self.kb.gateway.write_all([merge_call])
            else:  # the merged-away experiences leave with their relations (declared ones too)
                merged_away = [i for g in groups for i in g.merged_ids]
                results = self.kb.gateway.write_all([("experience_relations_of", {"kb": ns, "ids": merged_away}),
                                                     merge_call])
                self._count(results[0], -1)
        self._merged_away.update(i for g in groups for i in g.merged_ids)
        self._survivors.update(g.canonical for g in groups)
        self.report.experiences_merged += sum(len(g.merged_ids) for g in groups)

    def _count(self, rows: list[Row], sign: int) -> None:
        for row in rows:
            if row["type"] in self._totals:
                self._totals[row["type"]] += sign * int(row["count"])

    def _concepts(self, recluster: bool) -> None:
        with self.stage("concepts"):
            stage = ConceptStage(self.kb.gateway, self.kb.namespace, self.kb.embedder, self.document_writer)
            concepts = stage.run(full=recluster)
            self.report.meta_concepts_new += concepts.meta_concepts_new
            self.report.documents_updated += concepts.documents_updated

    def _abstracts(self, abstracts: list[Experience]) -> list[tuple[str, dict[str, Any]]]:
        """Writes the workflows that are new (as experiences) and returns the calls that refresh
        those that exist: their id and learning state stay, what they say follows their group."""
        stored = self.kb.store.stored_content_ids(a.key for a in abstracts)
        self._fresh_abstracts = [a for a in abstracts if a.key not in stored]
        if self._fresh_abstracts:
            self.kb.add_experiences(self._fresh_abstracts)
        grown = [a for a in abstracts if a.key in stored]
        # A workflow's usual steps settle as its group grows: most refreshes change only its
        # success rate and generalizability. Steps and embeddings are rewritten (and embedded) only
        # when the content changed; the same content hashes to the same steps and vectors.
        changed = [a for a in grown if stored[a.key] != a.content_id()]
        self.kb.embed_missing(changed)
        step_rows: list[Row] = []
        next_rows: list[Row] = []
        for abstract in changed:
            steps, links = experience_steps(abstract)
            step_rows += steps
            next_rows += links
        ns = self.kb.namespace
        return [("abstract_experiences_refresh", {"kb": ns, "rows": [abstract_row(a) for a in grown]}),
                ("abstract_experiences_rewrite", {"kb": ns, "rows": [embedding_row(a) for a in changed],
                                                  "keep": sorted({row["key"] for row in step_rows})}),
                ("step_upsert", {"kb": ns, "rows": step_rows}),
                ("step_link_next", {"kb": ns, "rows": next_rows})]

    def _write_plan(self, plan: LinkPlan, run: str, now: datetime) -> None:
        """Writes what differs between the plan and the stored graph: inferred relations the plan
        no longer has are deleted, new or changed ones written, the others left as they are (the
        same graph as rewriting them all)."""
        refresh = self._abstracts(plan.abstracts)
        self.report.abstract_experiences = len(plan.abstracts)
        ns = self.kb.namespace
        planned = {(r["type"], r["source_id"], r["target_id"]): r for r in plan.relations}
        stored = {(r["type"], r["source_id"], r["target_id"]): r
                  for r in self.kb.gateway.read("relations_inferred_list", kb=ns)}
        gone = [{"type": t, "source_id": a, "target_id": b} for (t, a, b) in sorted(set(stored) - set(planned))]
        changed = [row for key, row in planned.items() if key not in stored
                   or (stored[key]["weight"], stored[key]["reason"]) != (row["weight"], row["reason"])]
        self.kb.gateway.write_all([
            ("relations_inferred_delete_some", {"kb": ns, "rows": gone}),
            ("abstract_experiences_dissolve", {"kb": ns, "keep": [a.key for a in plan.abstracts],
                                               "source": ABSTRACT_SOURCE, "run": run, "now": now}),
            *refresh,
            ("relation_upsert", {"kb": ns, "rows": changed}),
        ])

    def _write_delta(self, delta: LinkDelta, workflows: int, run: str, now: datetime) -> None:
        refresh = self._abstracts(delta.abstracts)
        self.report.abstract_experiences = workflows
        ns = self.kb.namespace
        deleted = [{"type": t, "source_id": a, "target_id": b} for t, a, b in delta.deleted]
        touched = deleted + [{"type": r["type"], "source_id": r["source_id"], "target_id": r["target_id"]}
                             for r in delta.upserted]
        results = self.kb.gateway.write_all([
            ("experience_relations_present", {"kb": ns, "rows": touched}),
            ("relations_inferred_delete_some", {"kb": ns, "rows": deleted}),
            ("abstract_experiences_dissolve_ids", {"kb": ns, "ids": delta.dissolved, "source": ABSTRACT_SOURCE,
                                                   "run": run, "now": now}),
            *refresh,
            ("relation_upsert", {"kb": ns, "rows": delta.upserted}),
            ("experience_relations_present", {"kb": ns, "rows": touched}),
        ])
        self._count(results[0], -1)
        self._count(results[-1], +1)


def _relation_totals(row: dict[str, Any]) -> dict[str, int]:
    return {kind: int(row[kind] or 0) for kind in RELATION_TYPES}
