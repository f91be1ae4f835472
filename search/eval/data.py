"""Loaders for the retrieval benchmark's files (``shared/data/eval``): queries and qrels JSONL.

Each line is validated on its own into a typed pydantic model; every problem comes back as
``file:line: field: reason`` and all problems of a file are reported together in one
:class:`EvalDataError`, so a broken file is fixed in one pass rather than one error at a time.
A benchmark over half-read judgements would report wrong figures, so nothing is returned when any
line is bad.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.models import Trajectory

__all__ = [
    "EvalDataError",
    "EvalQuery",
    "EvalStep",
    "Qrel",
    "load_qrels",
    "load_queries",
    "qrels_by_query",
    "valid_runs",
]

NonBlank = Annotated[str, StringConstraints(min_length=1, strip_whitespace=False)]


class EvalDataError(InvalidInputError):
    """An evaluation file could not be read. ``problems`` lists each ``file:line: field: reason``."""

    def __init__(self, problems: list[str]):
        super().__init__(problems, headline="invalid evaluation data")


class _Strict(BaseModel):
    """Unknown fields are rejected: a misspelt ``exclude`` must not silently leak the answer."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class EvalStep(_Strict):
    """One step the agent already took (``steps_so_far``): the tool, its concrete arguments and,
    when it failed, the error it returned."""

    action: NonBlank
    arguments: dict[str, Any] = Field(default_factory=dict)
    error: NonBlank | None = None

    _blank = field_validator("action")(_not_blank)


class EvalQuery(_Strict):
    """One benchmark query. ``exclude`` names documents to drop from its ranking (leave-one-out:
    the query's own record); ``steps_so_far`` are the first steps taken, for step-level retrieval."""

    qid: NonBlank
    query: NonBlank
    domain: NonBlank
    steps_so_far: list[EvalStep] | None = None
    exclude: frozenset[str] = frozenset()

    _blank = field_validator("qid", "query", "domain")(_not_blank)

    @field_validator("exclude", mode="before")
    @classmethod
    def _exclude_is_list(cls, value: object) -> object:
        """JSON has no sets: accept a list of ids (strict mode would refuse it) and nothing else."""
        if not isinstance(value, list):
            raise ValueError("must be a list of document ids")
        if not all(isinstance(item, str) for item in value):
            raise ValueError("must be a list of document ids (strings)")
        return frozenset(value)


class Qrel(_Strict):
    """One relevance judgement: ``doc_id`` has relevance ``rel`` (> 0 relevant, 0 judged not) for
    ``qid``. ``rel`` is a float so graded judgements fit; integers in the file are accepted."""

    qid: NonBlank
    doc_id: NonBlank
    rel: float = Field(ge=0)

    _blank = field_validator("qid", "doc_id")(_not_blank)

    @field_validator("rel", mode="before")
    @classmethod
    def _rel_is_number(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("must be a number")
        return float(value)


Model = TypeVar("Model", bound=_Strict)


def _problems(where: str, error: ValidationError) -> list[str]:
    return validation_problems(where, error, strip_value_error=True)


def _read(path: Path, model: type[Model]) -> Iterator[tuple[str, Model | None, list[str]]]:
    """Each line as (where, parsed model or None, problems)."""
    if not path.is_file():
        yield str(path), None, [f"{path}: no such file"]
        return
    for record in read_jsonl(path):
        if record.value is None:
            yield record.where, None, [f"{record.where}: (record): {record.problem}"]
            continue
        try:
            yield record.where, model.model_validate(record.value), []
        except ValidationError as error:
            yield record.where, None, _problems(record.where, error)


def load_queries(path: Path) -> list[EvalQuery]:
    """All queries of a queries JSONL file, in file order; raises :class:`EvalDataError` listing
    every bad line, a repeated ``qid`` (which query would the judgements belong to?) or an empty
    file."""
    queries: list[EvalQuery] = []
    problems: list[str] = []
    first_seen: dict[str, str] = {}
    for where, query, found in _read(path, EvalQuery):
        problems += found
        if query is None:
            continue
        if query.qid in first_seen:
            problems.append(f"{where}: qid: {query.qid!r} repeats the query of {first_seen[query.qid]}")
            continue
        first_seen[query.qid] = where
        queries.append(query)
    if not queries and not problems:
        problems.append(f"{path}: empty file, no queries in it")
    if problems:
        raise EvalDataError(problems)
    return queries


def load_qrels(path: Path) -> list[Qrel]:
    """All judgements of a qrels JSONL file, in file order; raises :class:`EvalDataError` listing
    every bad line, a (qid, doc_id) pair judged twice (possibly differently) or an empty file."""
    qrels: list[Qrel] = []
    problems: list[str] = []
    first_seen: dict[tuple[str, str], str] = {}
    for where, qrel, found in _read(path, Qrel):
        problems += found
        if qrel is None:
            continue
        key = (qrel.qid, qrel.doc_id)
        if key in first_seen:
            problems.append(
                f"{where}: doc_id: {qrel.doc_id!r} is judged twice for {qrel.qid!r} (first at {first_seen[key]})"
            )
            continue
        first_seen[key] = where
        qrels.append(qrel)
    if not qrels and not problems:
        problems.append(f"{path}: empty file, no judgements in it")
    if problems:
        raise EvalDataError(problems)
    return qrels


def qrels_by_query(qrels: list[Qrel]) -> dict[str, dict[str, float]]:
    """The judgements as ``{qid: {doc_id: rel}}``, the shape :func:`kbgraph.search.eval.metrics.evaluate`
    takes."""
    grouped: dict[str, dict[str, float]] = {}
    for qrel in qrels:
        grouped.setdefault(qrel.qid, {})[qrel.doc_id] = qrel.rel
    return grouped


def valid_runs(files: Iterable[Path]) -> Iterator[Trajectory]:
    """The trajectories of these files, in order; lines that are no valid trajectory are skipped
    (the baselines' loader, :func:`kbgraph.search.eval.baselines.load_documents_from`, reports them)."""
    for path in files:
        for record in read_jsonl(path):
            if record.value is None:
                continue
            try:
                yield Trajectory.model_validate(record.value)
            except ValidationError:
                continue
