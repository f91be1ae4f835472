"""Writes experiences to Neo4j in UNWIND batches and reads them back losslessly.

One batch (experiences with their steps, NEXT chain, failure modes and domains) is one
transaction: it lands whole or not at all. Relations are written after every batch, since their
targets may sit in a later batch. Ids are content hashes and every write is a MERGE, so writing
the same experiences again changes no count.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.ids import text_hash
from kbgraph.store.gateway import Neo4jGateway, Row
from kbgraph.store.transaction import DeletedInTransaction
from kbgraph.store.vector_cache import VECTOR_BYTES, vector_bytes
from kbgraph.core.models import STORED, Experience, FailureMode, Relation, Step, stored_record
from kbgraph.core.shapes import operations

# Learning state: set when an experience is created, owned by feedback afterwards (docs/design.md §4).
LEARNING_FIELDS = ("quality", "retrieved", "used", "succeeded", "created_at", "last_used_at", "status")
CONTENT_FIELDS = (
    "problem", "goal", "domain", "difficulty", "kind", "efficiency", "generalizability",
    "scope", "owner_agent", "source", "adapted_from", "approved_by", "rejected_by",
)
EMBEDDING_FIELDS = ("pg_embedding", "structure_embedding", "context_embedding")
STEP_FIELDS = ("order", "action", "tool", "text", "reward", "issue_type", "resolution_effectiveness", "signature",
               "observation", "observation_chars")
FAILURE_FIELDS = ("description", "issue_type", "recovery", "step_order", "action", "signature", "signature_action",
                  "signature_error", "recovery_kind", "recovered", "concrete", "run_id", "run_succeeded", "looked_up")

Progress = Callable[[int], None]


def experience_row(exp: Experience) -> Row:
    return {
        "id": exp.key,
        "domain": exp.domain,
        # actions, operations, shape and task key are derived, stored for cheap comparisons in
        # Cypher (merging, the share of a task's runs a workflow took) and for inspection.
        "content": {**{f: getattr(exp, f) for f in CONTENT_FIELDS},
                    "actions": exp.actions(), "operations": list(operations(exp.actions())),
                    "shape": exp.structure_text(), "task_key": exp.task_key(),
                    # What the content hashes to, even under an explicit id: the same id given
                    # later with other content is refused, not half-overwritten (kb.add_experiences).
                    "content_id": exp.content_id()},
        "learning": {f: getattr(exp, f) for f in LEARNING_FIELDS},
        "source_ids": list(exp.source_ids),
        "failed_source_ids": list(exp.failed_source_ids),
        "success_rate": exp.success_rate,
        **embedding_values(exp),
    }


def abstract_row(exp: Experience) -> Row:
    """What ``abstract_experiences_refresh`` sets on an existing generated abstract experience."""
    row = experience_row(exp)
    content = {k: v for k, v in row["content"].items() if k in ("problem", "goal", "generalizability", "actions",
                                                                 "operations", "shape", "content_id")}
    return {"id": row["id"], "content": content, "success_rate": row["success_rate"]}


def embedding_values(exp: Experience) -> Row:
    """An experience's embeddings, and the bytes of those bulk reads take (``VECTOR_BYTES``)."""
    return {**{f: getattr(exp, f) for f in EMBEDDING_FIELDS},
            **{packed: vector_bytes(getattr(exp, f)) for f, packed in VECTOR_BYTES.items()}}


def embedding_row(exp: Experience) -> Row:
    """An experience's embeddings by id (``abstract_experiences_rewrite``)."""
    return {"id": exp.key, **embedding_values(exp)}


def step_text(step: Step) -> str:
    """What kbgraph embeds of a step: ``action: text`` (steps saying the same share one vector)."""
    return f"{step.action}: {step.text}"


def step_text_key(step: Step) -> str:
    """The key of a step's vector node (``StepText``) in its namespace: its text's sha256."""
    return text_hash(step_text(step))


class StepTextGone(DeletedInTransaction):
    """A batch of steps met StepTexts without a vector: texts a delete removed after the writer
    read which ones the namespace holds. The batch was rolled back; embed them and write again."""

    def __init__(self, keys: Sequence[str]):
        super().__init__(f"{len(keys)} step text(s) deleted while being written: {', '.join(sorted(keys)[:3])}")
        self.keys = frozenset(keys)


def refuse_missing_step_texts(results: list[list[Row]], at: int) -> None:
    """Rolls a write back when its ``step_upsert`` (call ``at``) left a StepText without a vector."""
    rows = results[at]
    missing = [k for k in (rows[0]["missing"] if rows else []) if k is not None]
    if missing:
        raise StepTextGone(missing)


def step_rows(exp: Experience, vectors_given: set[str] | None = None) -> tuple[list[Row], list[Row]]:
    """Rows for the steps of one experience, and the NEXT links between consecutive ones. A text's
    vector goes with its first step only (``vectors_given``: the keys already carrying one in this
    batch), so a batch never sets one vector twice."""
    steps, links = [], []
    given = set() if vectors_given is None else vectors_given
    for step in exp.steps:
        assert step.order is not None
        props = {f: getattr(step, f) for f in STEP_FIELDS}
        props["args_schema"] = json.dumps(step.args_schema, sort_keys=True)
        key = step_text_key(step)
        vector = step.embedding if key not in given else None
        if vector is not None:
            given.add(key)
        steps.append({"id": exp.step_id(step.order), "experience_id": exp.key, "key": key, "props": props,
                      "embedding": vector})
    for before, after in zip(exp.steps, exp.steps[1:], strict=False):
        assert before.order is not None and after.order is not None
        links.append({"from_id": exp.step_id(before.order), "to_id": exp.step_id(after.order)})
    return steps, links


def failure_rows(exp: Experience) -> list[Row]:
    return [
        {"id": exp.failure_id(f), "experience_id": exp.key,
         # The record is stored as JSON text (a node property holds no map).
         "props": {**{k: getattr(f, k) for k in FAILURE_FIELDS},
                   "record": f.record.model_dump_json(exclude_defaults=True) if f.record is not None else None},
         "embedding": f.embedding}
        for f in exp.failure_modes
    ]


def relation_rows(exp: Experience) -> list[Row]:
    return [
        {"source_id": exp.key, "target_id": r.target_id, "type": r.type.value, "weight": r.weight,
         "reason": r.reason, "inferred": False}
        for r in exp.relations
    ]


def native_value(value: Any) -> Any:
    """Neo4j temporal values back to Python datetimes (anything else as it is)."""
    to_native = getattr(value, "to_native", None)
    return to_native() if callable(to_native) and not isinstance(value, datetime) else value


def aware_datetime(value: Any) -> datetime | None:
    """A neo4j.time.DateTime (or a datetime) as an aware datetime; None for anything else."""
    native = native_value(value)
    if not isinstance(native, datetime):
        return None
    return native if native.tzinfo is not None else native.replace(tzinfo=UTC)


def experience_from_record(record: Row) -> Experience:
    """Rebuilds an Experience from the ``experience_get`` query's row.

    A step or failure mode another transaction deleted while the query read it (a workflow's
    steps being rewritten, a merge) comes back as a map without properties: it is left out."""
    node = {k: native_value(v) for k, v in record["experience"].items()}
    fields = set(Experience.model_fields)
    data = {k: v for k, v in node.items() if k in fields}
    data["steps"] = [
        Step.model_validate({
            **{k: s[k] for k in STEP_FIELDS if s.get(k) is not None},
            "args_schema": json.loads(s.get("args_schema") or "{}"), "embedding": s.get("embedding"),
        }, context=STORED)
        for s in record["steps"] if s.get("action") is not None
    ]
    data["failure_modes"] = [
        FailureMode.model_validate({**{k: f[k] for k in FAILURE_FIELDS if f.get(k) is not None},
                                    "record": stored_record(f.get("record")), "embedding": f.get("embedding")},
                                   context=STORED)
        for f in record["failure_modes"] if f.get("description") is not None
    ]
    data["relations"] = [Relation.model_validate(r, context=STORED) for r in record["relations"] if r is not None]
    data["source_ids"] = list(node.get("source_ids") or [])
    data["failed_source_ids"] = list(node.get("failed_source_ids") or [])
    data["adapted_from"] = list(node.get("adapted_from") or [])
    return Experience.model_validate(data, context=STORED)


def _refuse_claimed(where: Mapping[str, str]) -> Callable[[list[list[Row]]], None]:
    """Rolls a write back when ``experience_content_claims`` (its first query) found an id stored
    with other content."""

    def verify(results: list[list[Row]]) -> None:
        if results[0]:
            raise InvalidInputError([
                f"{where.get(row['id'], 'experiences')}: id: {row['id']!r} is already stored with different content "
                "(another client wrote it meanwhile; delete it first, or give the new experience another id)"
                for row in results[0]])

    return verify


def _verify_batch(calls: Sequence[tuple[str, Any]], where: Mapping[str, str] | None) -> Callable[[list[list[Row]]], None]:
    """The checks of one batch: ids claimed with other content (when ``where`` is given) and step
    texts deleted meanwhile."""
    claimed = _refuse_claimed(where) if where is not None else None
    upsert = next((i for i, (name, _) in enumerate(calls) if name == "step_upsert"), None)

    def verify(results: list[list[Row]]) -> None:
        if claimed is not None:
            claimed(results)
        if upsert is not None:
            refuse_missing_step_texts(results, upsert)

    return verify


class ExperienceStore:
    def __init__(self, gateway: Neo4jGateway, namespace: str, batch_size: int = 500):
        self.gateway = gateway
        self.namespace = namespace
        self.batch_size = batch_size

    def stored_content_ids(self, ids: Iterable[str]) -> dict[str, str | None]:
        """For each of ``ids`` stored here, what its content hashed to when written (None for
        experiences written before kbgraph recorded it)."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, str | None] = {}
        for start in range(0, len(wanted), 5000):
            for row in self.gateway.read("experience_content_ids", kb=self.namespace, ids=wanted[start : start + 5000]):
                found[row["id"]] = row["content_id"]
        return found

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        return self._collected("experience_existing_ids", "ids", ids)

    def known_step_texts(self, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` (step text keys) the namespace holds a vector for."""
        return self._collected("step_texts_known", "keys", keys)

    def _collected(self, query: str, name: str, values: Iterable[str]) -> set[str]:
        """The ``values`` named query ``query`` finds (its parameter and column ``name``), 5,000 at a time."""
        wanted = list(dict.fromkeys(values))
        found: set[str] = set()
        for start in range(0, len(wanted), 5000):
            rows = self.gateway.read(query, kb=self.namespace, **{name: wanted[start : start + 5000]})
            found.update(rows[0][name] if rows else [])
        return found

    def write(
        self, experiences: Sequence[Experience], existing: set[str] | None = None, on_batch: Progress | None = None,
        where: Mapping[str, str] | None = None, count_growth: bool = False,
    ) -> None:
        """Writes fully validated, fully embedded experiences (see KnowledgeBase.add_experiences).

        Experiences in ``existing`` are already stored: their content (and so their steps and
        failure modes) is fixed by the content hash, so only their provenance is updated.

        An explicit id another client stored with other content since the caller checked (a
        race: KnowledgeBase.add_experiences checks first) rolls its batch back with an
        InvalidInputError naming it (by ``where`` it was given, id → label); batches committed
        before stay.

        With ``count_growth`` each batch's new experiences count towards the namespace's
        maintenance checkpoints in the transaction that writes them (kb_state_growth_counted), so a
        crash after a batch leaves the count with the batch.
        """
        kb = self.namespace
        existing = existing or set()
        for start in range(0, len(experiences), self.batch_size):
            batch = experiences[start : start + self.batch_size]
            # Only an explicit id can name other content: a content-hash id is its content.
            claims = [{"id": e.key, "content_id": e.content_id()} for e in batch if e.key != e.content_id()]
            steps: list[Row] = []
            links: list[Row] = []
            fresh = [exp for exp in batch if exp.key not in existing]
            vectors_given: set[str] = set()
            for exp in fresh:
                s, n = step_rows(exp, vectors_given)
                steps += s
                links += n
            failures = [row for exp in fresh for row in failure_rows(exp)]
            calls: list[tuple[str, dict[str, Any]]] = []
            if claims:
                calls.append(("experience_content_claims", {"kb": kb, "rows": claims}))
            if count_growth:
                calls.append(("kb_state_growth_counted", {"kb": kb, "ids": [e.key for e in batch]}))
            calls.append(("experience_upsert", {"kb": kb, "rows": [experience_row(e) for e in batch]}))
            if steps:
                calls.append(("step_upsert", {"kb": kb, "rows": steps}))
            if links:
                calls.append(("step_link_next", {"kb": kb, "rows": links}))
            if failures:
                calls.append(("failure_mode_upsert", {"kb": kb, "rows": failures}))
            self.gateway.write_all(calls, verify=_verify_batch(calls, where if claims else None))
            if on_batch:
                on_batch(len(batch))
        # Relations are not content: they are (re)written for every experience given.
        relations = [row for exp in experiences for row in relation_rows(exp)]
        for start in range(0, len(relations), self.batch_size * 4):
            self.gateway.write_all([
                ("relation_upsert", {"kb": kb, "rows": relations[start : start + self.batch_size * 4]}),
                # Declared relations change the namespace's totals behind any process that
                # remembers them with its link plan (ingest/consolidate.py): it starts over.
                ("kb_state_facts_changed", {"kb": kb}),
            ])

    def get_many(self, ids: Sequence[str]) -> list[Experience]:
        """Experiences in the order of ``ids``; unknown ids are skipped."""
        by_id: dict[str, Experience] = {}
        for start in range(0, len(ids), 1000):
            for record in self.gateway.read("experience_get", kb=self.namespace, ids=list(ids[start : start + 1000])):
                exp = experience_from_record(record)
                by_id[exp.key] = exp
        return [by_id[i] for i in ids if i in by_id]

    def iter_ids(self, page_size: int = 1000) -> Iterable[str]:
        after = ""
        while True:
            rows = self.gateway.read("experience_ids_page", kb=self.namespace, after=after, limit=page_size)
            if not rows:
                return
            for row in rows:
                yield row["id"]
            after = rows[-1]["id"]

    def delete(self, ids: Sequence[str]) -> int:
        deleted = 0
        for start in range(0, len(ids), 1000):
            rows = self.gateway.write_all([
                ("experience_delete", {"kb": self.namespace, "ids": list(ids[start : start + 1000])}),
                ("kb_state_facts_changed", {"kb": self.namespace}),  # no process links from what it remembers
            ])[0]
            deleted += rows[0]["deleted"] if rows else 0
        return deleted

    def delete_namespace(self) -> None:
        self.gateway.auto_commit("namespace_delete", kb=self.namespace)
