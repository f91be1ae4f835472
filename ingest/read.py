"""Stage 1 — reading: JSON Lines of trajectories (the reference format) or ready-made experiences.

A record with a ``task`` is a trajectory, one with a ``problem`` an experience. Each record is
validated on its own; problems come back as ``file:line: field: reason``. Reading streams: one
line in memory at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.core.ids import content_hash
from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.models import Experience, Trajectory
from kbgraph.core.value_bounds import value_problem
from kbgraph.core.votes import check_votes


@dataclass(frozen=True)
class Record:
    where: str
    item: Trajectory | Experience | None
    problems: tuple[str, ...] = ()
    # The record's content as read (canonical JSON hashed): tells "the same record twice" from
    # "another record under the same id".
    fingerprint: str = ""


def read_records(paths: list[Path]) -> Iterator[Record]:
    """Records of JSON Lines files; a folder stands for its ``*.jsonl`` files, in name order."""
    for path in expand_folders(paths):
        if path.is_dir():
            yield Record(str(path), None, (f"{path}: a folder without .jsonl files, nothing to ingest",))
            continue
        if not path.is_file():
            yield Record(str(path), None, (f"{path}: no such file",))
            continue
        empty = True
        for line in read_jsonl(path):
            empty = False
            if line.value is None:
                yield Record(line.where, None, (f"{line.where}: {line.problem}",))
                continue
            yield record_from_value(line.where, line.value)
        if empty:
            yield Record(str(path), None, (f"{path}: empty file, nothing to ingest",))


def expand_folders(paths: list[Path]) -> list[Path]:
    """Each folder replaced by its ``*.jsonl`` files (name order); a folder without any is kept, to be named."""
    out: list[Path] = []
    for path in paths:
        inside = sorted(p for p in path.glob("*.jsonl") if p.is_file()) if path.is_dir() else []
        out += inside or [path]
    return out


def record_from_value(where: str, value: dict[str, Any]) -> Record:
    """One record from its JSON value (within the input bounds), validated as a trajectory (it has
    a ``task``) or a ready-made experience (a ``problem``); problems are named ``where: field``."""
    model: type[Trajectory] | type[Experience] = Experience if "problem" in value and "task" not in value else Trajectory
    try:
        item = model.model_validate(value)
    except ValidationError as error:
        return Record(where, None, tuple(validation_problems(where, error)))
    if isinstance(item, Trajectory) and "votes" in item.metadata:
        try:  # EDV: the executing agents' votes decide where the experience goes
            check_votes(item.metadata["votes"], where=f"{where}: metadata.votes")
        except InvalidInputError as error:
            return Record(where, None, tuple(error.problems))
    return Record(where, item, fingerprint=content_hash(value, "record"))


def listed_items(items: Sequence[Trajectory | Experience | Mapping[str, Any]],
                 labels: Sequence[str] | None = None) -> list[Trajectory | Experience | Mapping[str, Any]]:
    """The runs handed to ``kb.add_trajectories`` as a list, or InvalidInputError: not a list, an
    empty one, or not one label per run."""
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise InvalidInputError(["trajectories: expected a list of trajectories"])
    listed = list(items)
    if not listed:
        raise InvalidInputError(["trajectories: empty list, nothing to ingest"])
    if labels is not None and len(labels) != len(listed):
        raise InvalidInputError([f"labels: {len(labels)} labels for {len(listed)} trajectories"])
    return listed


def records_from_items(items: Sequence[Trajectory | Experience | Mapping[str, Any]],
                       labels: Sequence[str] | None = None) -> Iterator[Record]:
    """Records handed over in memory (``kb.add_trajectories``), named ``labels[i]`` (by default
    ``trajectories[i]``): a dict is read exactly as a line of a file would be (same bounds, same
    fingerprint); a model by the fields that were set on it (so the same run given as a dict or as
    a model is one record)."""
    for index, item in enumerate(items):
        where = labels[index] if labels is not None else f"trajectories[{index}]"
        if isinstance(item, (Trajectory, Experience)):
            value: Any = item.model_dump(mode="json", exclude_unset=True)
        elif isinstance(item, Mapping):
            try:  # what a file could hold: JSON values only (the fingerprint hashes them as JSON)
                value = json.loads(json.dumps(item, allow_nan=False))
            except (TypeError, ValueError) as error:
                yield Record(where, None, (f"{where}: not a JSON value ({error})",))
                continue
            except RecursionError:
                yield Record(where, None, (f"{where}: nested too deep",))
                continue
        else:
            yield Record(where, None, (f"{where}: expected a trajectory (a Trajectory or a dict), got {type(item).__name__}",))
            continue
        if problem := value_problem(value):
            yield Record(where, None, (f"{where}: {problem}",))
            continue
        yield record_from_value(where, value)
