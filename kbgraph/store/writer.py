"""The write path of :meth:`KnowledgeBase.add_experiences <kbgraph.kb.KnowledgeBase.add_experiences>`:
validate everything (types, limits, embedding sizes, relation targets) before any write, refuse an
id given with other content, pool the provenance of duplicates, embed what has no vector yet, and
hand the batch to :class:`~kbgraph.store.experiences.ExperienceStore`.

It sits in the store layer, below the ingestion pipeline (which writes its experiences through it)
and the façade; maintenance after growth is the façade's to start, since it is learning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import neo4j
from pydantic import BaseModel, Field, ValidationError

from kbgraph.embedders import Embedder
from kbgraph.core.errors import InvalidInputError, Problem, validation_problems
from kbgraph.store.experiences import ExperienceStore, Progress, StepTextGone, step_text, step_text_key
from kbgraph.store.transaction import ENTITY_NOT_FOUND
from kbgraph.core.models import Experience

__all__ = ["ExperienceWriter", "WriteReport"]


class WriteReport(BaseModel):
    """What one ``add_experiences`` call did."""

    received: int
    new: int
    existing: int
    ids: list[str] = Field(default_factory=list)


def _combine_duplicates(experiences: list[Experience]) -> list[Experience]:
    """One experience per id; duplicates (the same content from several trajectories) pool their
    provenance and the outcome of each run, so no source is lost, and average their success rate
    over it."""
    by_id: dict[str, Experience] = {}
    for exp in experiences:
        first = by_id.get(exp.key)
        if first is None:
            by_id[exp.key] = exp.model_copy(deep=False)
            continue
        fresh = [s for s in exp.source_ids if s not in first.source_ids]
        if first.source_ids and fresh:
            known = len(first.source_ids)
            first.success_rate = (first.success_rate * known + exp.success_rate * len(fresh)) / (known + len(fresh))
        first.source_ids = [*first.source_ids, *fresh]
        first.failed_source_ids = [*first.failed_source_ids, *(s for s in exp.failed_source_ids if s in fresh)]
    return list(by_id.values())


@dataclass(frozen=True)
class ExperienceWriter:
    """Validates, embeds and writes experiences into ``store``'s namespace with ``embedder``.
    Cheap to make: the façade makes one per call, so it always uses its current embedder.
    ``complete``: what each valid experience becomes before it is written (the façade and the
    ingest give their failure modes a record: ``kbgraph.ingest.failure_records.with_records``)."""

    store: ExperienceStore
    embedder: Embedder
    complete: Callable[[Experience], Experience] | None = None

    def validate(
        self, items: Iterable[Experience | Mapping[str, Any]], labels: Sequence[str] | None = None
    ) -> list[Experience]:
        """Every item as an Experience, or InvalidInputError listing every problem as
        ``where: field: reason`` (``where`` is ``labels[i]`` or ``experiences[i]``)."""
        experiences: list[Experience] = []
        item_labels: list[str] = []
        problems: list[str] = []
        for index, item in enumerate(items):
            label = labels[index] if labels is not None else f"experiences[{index}]"
            try:
                exp = item if isinstance(item, Experience) else Experience.model_validate(item)
            except ValidationError as error:
                problems += validation_problems(label, error)
                continue
            problems += self._embedding_problems(exp, label)
            experiences.append(exp if self.complete is None else self.complete(exp))
            item_labels.append(label)
        known = {e.key for e in experiences}
        targets = {r.target_id for e in experiences for r in e.relations} - known
        if targets and not problems:
            missing = targets - self.store.existing_ids(targets)
            for index, exp in enumerate(experiences):
                for r_index, relation in enumerate(exp.relations):
                    if relation.target_id in missing:
                        problems.append(Problem(
                            item_labels[index], f"no experience {relation.target_id!r} in namespace "
                            f"{self.store.namespace!r} or in this batch", f"relations.{r_index}.target_id"))
        if problems:
            raise InvalidInputError(problems)
        return experiences

    def _embedding_problems(self, exp: Experience, label: str) -> list[str]:
        dim = self.embedder.dimension
        vectors: list[tuple[str, list[float] | None]] = [(f, getattr(exp, f)) for f in
                                                         ("pg_embedding", "structure_embedding", "context_embedding")]
        vectors += [(f"steps.{i}.embedding", s.embedding) for i, s in enumerate(exp.steps)]
        vectors += [(f"failure_modes.{i}.embedding", f.embedding) for i, f in enumerate(exp.failure_modes)]
        return [
            Problem(label, f"has {len(vector)} values, this knowledge base's embedder ({self.embedder.name}) uses {dim}",
                    name)
            for name, vector in vectors
            if vector is not None and len(vector) != dim
        ]

    def embed_missing(self, experiences: Sequence[Experience], every_step: bool = False) -> None:
        """Fills every absent embedding, with one embedder call per kind of text. A step whose
        text the namespace holds a vector for is left without one (``step_upsert`` links it to
        the stored vector; one read of keys), unless ``every_step``."""
        known = set() if every_step else self.store.known_step_texts(
            step_text_key(s) for exp in experiences for s in exp.steps if s.embedding is None)
        jobs: list[tuple[Any, str, str]] = []  # (object, attribute, text)
        for exp in experiences:
            if exp.pg_embedding is None:
                jobs.append((exp, "pg_embedding", exp.pg_text()))
            if exp.structure_embedding is None:
                jobs.append((exp, "structure_embedding", exp.structure_text()))
            if exp.context_embedding is None:
                jobs.append((exp, "context_embedding", exp.context_text()))
            jobs += [(s, "embedding", step_text(s)) for s in exp.steps
                     if s.embedding is None and step_text_key(s) not in known]
            jobs += [
                (f, "embedding", f"{f.issue_type or 'failure'}: {f.description}")
                for f in exp.failure_modes if f.embedding is None
            ]
        if not jobs:
            return
        vectors = self.embedder.embed([text for _, _, text in jobs])
        for (target, attribute, _), vector in zip(jobs, vectors, strict=True):
            setattr(target, attribute, vector.tolist())

    def add(
        self, items: Iterable[Experience | Mapping[str, Any]], on_progress: Progress | None = None,
        labels: Sequence[str] | None = None, count_growth: bool = False,
    ) -> WriteReport:
        """Validates, embeds and writes; nothing is written when any item is invalid.
        ``on_progress`` gets the number of experiences each committed batch wrote. With
        ``count_growth`` the new ones count towards the maintenance checkpoints as they are
        written (ExperienceStore.write); checking whether one was crossed is the caller's."""
        experiences = self.validate(items, labels)
        where, stored = self._refuse_changed_content(experiences, labels)
        unique = _combine_duplicates(experiences)
        existing = {e.key for e in unique if e.key in stored}
        fresh = [e for e in unique if e.key not in existing]
        self.embed_missing(fresh)
        try:
            self.store.write(unique, existing, on_batch=on_progress, where=where, count_growth=count_growth)
        except (StepTextGone, neo4j.exceptions.ClientError) as error:
            # A delete removed texts between the read of known keys and the write (or, holding a
            # text's lock, while this write waited for it: EntityNotFound): every step gets its
            # vector this time (the write is idempotent; committed batches stay as they are).
            if isinstance(error, neo4j.exceptions.ClientError) and error.code != ENTITY_NOT_FOUND:
                raise
            self.embed_missing(fresh, every_step=True)
            self.store.write(unique, existing, on_batch=on_progress, where=where, count_growth=count_growth)
        return WriteReport(
            received=len(experiences), new=len(unique) - len(existing), existing=len(existing),
            ids=[e.key for e in experiences],
        )

    def _refuse_changed_content(
        self, experiences: Sequence[Experience], labels: Sequence[str] | None
    ) -> tuple[dict[str, str], set[str]]:
        """An id names one content. The same id with the same content is a duplicate (counted as
        existing); with other content it is an error, in this batch or against what is stored:
        there is no update mode (delete the old experience first, or give the new one its own id).
        Returns where each id was first given, and which ids are stored already; the write checks
        again against what another client stored meanwhile (ExperienceStore.write)."""
        problems: list[str] = []
        first_seen: dict[str, tuple[str, str]] = {}
        for index, exp in enumerate(experiences):
            where = labels[index] if labels is not None and index < len(labels) else f"experiences[{index}]"
            content = exp.content_id()
            seen = first_seen.setdefault(exp.key, (content, where))
            if seen[0] != content:
                problems.append(f"{where}: id: {exp.key!r} was given at {seen[1]} with different content")
        stored = self.store.stored_content_ids(first_seen)
        for key, (content, where) in first_seen.items():
            if stored.get(key) not in (None, content):
                problems.append(f"{where}: id: {key!r} is already stored with different content (delete it first, "
                                "or give the new experience another id)")
        if problems:
            raise InvalidInputError(problems)
        return {key: where for key, (_, where) in first_seen.items()}, set(stored)
