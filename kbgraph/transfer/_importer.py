"""Import: a checked export file MERGEd into a namespace in batches (see :mod:`kbgraph.transfer`).

What the namespace already holds is left as it is; only what is missing is created, with every
property, so importing again after a failure completes the rest and creates no duplicates.
"""

from __future__ import annotations

import time
from pathlib import Path

import neo4j
from pydantic import BaseModel, Field, ValidationError

from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.store.gateway import Neo4jGateway, Row, run_named
from kbgraph.store.search_version import RENEW
from kbgraph.store.step_texts import migrate_step_texts
from kbgraph.store.vector_cache import vector_bytes
from kbgraph.core.jsonl import read_jsonl
from kbgraph.transfer._check import check_export_file
from kbgraph.transfer._export import vector_dimension
from kbgraph.transfer._format import LABELS, RELATIONSHIP_TYPES, Progress, TransferError
from kbgraph.transfer._records import _DATA_RECORD, NodeRecord, RelationshipRecord
from kbgraph.transfer._values import _value_rows

class ImportCounts(BaseModel):
    new: int = Field(default=0)
    existing: int = Field(default=0)


class ImportReport(BaseModel):
    """What one import did: per label and relationship type, how many were new and how many the
    target namespace already held (those were left as they were)."""

    file: str
    source_namespace: str
    namespace: str
    nodes: dict[str, ImportCounts]
    relationships: dict[str, ImportCounts]
    nodes_new: int
    nodes_existing: int
    relationships_new: int
    relationships_existing: int
    seconds: float


class _Importer:
    def __init__(self, gateway: Neo4jGateway, namespace: str, path: Path, batch_size: int,
                 on_progress: Progress | None, total: int):
        self.gateway = gateway
        self.namespace = namespace
        self.path = path
        self.batch_size = batch_size
        self.on_progress = on_progress
        self.total = total
        self.done = 0
        self.nodes: dict[str, ImportCounts] = {}
        self.relationships: dict[str, ImportCounts] = {}
        # Into a namespace that has a state node, what is imported changes it behind any process
        # that remembers its link plan (ingest/consolidate.py): each batch gives it a new facts
        # version. Into an empty one, the exported state node brings the version its facts had.
        self.changes_a_namespace = bool(gateway.read("kb_state_get", kb=namespace))

    def run(self) -> None:
        # One batch per label or type: relationships come ordered by start node, their types mixed.
        # Every node is written before the first relationship (the file lists nodes first).
        batches: dict[tuple[str, str], list[tuple[int, NodeRecord | RelationshipRecord]]] = {}
        with self.gateway.session() as session:
            for record in read_jsonl(self.path):
                line = int(record.where.rsplit(":", 1)[1])
                if record.value is None or record.value.get("record") == "header":
                    continue
                try:
                    item = _DATA_RECORD.validate_python(record.value)
                except ValidationError as error:  # the file changed since it was checked
                    raise InvalidInputError(validation_problems(record.where, error, strip_value_error=True),
                                            headline="the file changed while it was imported") from None
                if isinstance(item, NodeRecord):
                    group = ("node", item.label)
                else:
                    group = ("relationship", item.type)
                    for waiting in [g for g in batches if g[0] == "node"]:
                        self.flush(session, batches.pop(waiting))
                batch = batches.setdefault(group, [])
                batch.append((line, item))
                if len(batch) >= self.batch_size:
                    self.flush(session, batches.pop(group))
            for group in sorted(batches):  # nodes before relationships
                self.flush(session, batches.pop(group))

    def flush(self, session: neo4j.Session, batch: list[tuple[int, NodeRecord | RelationshipRecord]]) -> None:
        first = batch[0][1]
        rows: list[Row]
        if isinstance(first, NodeRecord):
            counts = self.nodes.setdefault(first.label, ImportCounts())
            merge_query, values_query = LABELS[first.label].merge_query, "import_node_values"
            rows = [{"line": line, "key": item.key} for line, item in batch if isinstance(item, NodeRecord)]
        else:
            counts = self.relationships.setdefault(first.type, ImportCounts())
            merge_query, values_query = RELATIONSHIP_TYPES[first.type].merge_query, "import_relationship_values"
            rows = [{"line": line, "start": item.start.key, "end": item.end.key}
                    for line, item in batch if isinstance(item, RelationshipRecord)]
        by_line = dict(batch)

        def work(tx: neo4j.ManagedTransaction) -> list[Row]:
            merged = run_named(tx, merge_query, {"kb": self.namespace, "rows": rows})
            missing = sorted({int(row["line"]) for row in rows} - {int(row["line"]) for row in merged})
            if missing:  # checked before writing, so only a concurrent delete gets here; rolled back
                raise TransferError(
                    f"{self.path}:{missing[0]}: a node of this relationship is missing from namespace "
                    f"{self.namespace!r} (deleted while importing?); this batch was not written, re-running resumes")
            created = []
            for row in merged:
                if not row["created"]:
                    continue
                item = by_line[row["line"]]
                plain, temporal = _value_rows(item.properties)
                value_row: Row = {"element_id": row["element_id"], "properties": plain, "temporal": temporal}
                if isinstance(item, NodeRecord):
                    value_row["vectors"] = [{"key": k, "value": v} for k, v in sorted(item.vectors.items())]
                    plain.update({packed: vector_bytes(item.vectors[vector])
                                  for vector, packed in LABELS[item.label].vector_bytes if vector in item.vectors})
                created.append(value_row)
            if created:
                run_named(tx, values_query, {"kb": self.namespace, "rows": created})
                run_named(tx, RENEW, {"kb": self.namespace})  # after the values: a file's version is not kept
                if self.changes_a_namespace:
                    run_named(tx, "kb_state_facts_changed", {"kb": self.namespace})
            return merged

        merged = session.execute_write(work)
        new = sum(1 for row in merged if row["created"])
        counts.new += new
        counts.existing += len(merged) - new
        self.done += len(batch)
        if self.on_progress:
            self.on_progress("import", self.done, self.total)


def import_file(
    gateway: Neo4jGateway, namespace: str, path: Path, *, batch_size: int = 500,
    on_progress: Progress | None = None,
) -> ImportReport:
    """Imports an export file into ``namespace`` (whatever namespace it was exported from).

    The whole file is checked first (see :func:`check_export_file`); a malformed one raises
    InvalidInputError and nothing is written. Then nodes and relationships are MERGEd in
    transactions of ``batch_size`` records: what the namespace already holds is left as it is,
    the rest is created with every property. Should the database fail part-way, the batches
    already committed stay, and importing the file again completes the rest.
    """
    started = time.perf_counter()
    header = check_export_file(path, vector_dimension(gateway), on_progress)
    total = sum(header.counts.nodes.values()) + sum(header.counts.relationships.values())
    importer = _Importer(gateway, namespace, path, batch_size, on_progress, total)
    importer.run()
    migrate_step_texts(gateway, namespace)  # a version 1 file's steps held vectors of their own
    nodes, relationships = importer.nodes, importer.relationships
    return ImportReport(
        file=str(path), source_namespace=header.namespace, namespace=namespace,
        nodes=dict(sorted(nodes.items())), relationships=dict(sorted(relationships.items())),
        nodes_new=sum(c.new for c in nodes.values()), nodes_existing=sum(c.existing for c in nodes.values()),
        relationships_new=sum(c.new for c in relationships.values()),
        relationships_existing=sum(c.existing for c in relationships.values()),
        seconds=round(time.perf_counter() - started, 2),
    )
