"""Stage 1 — reading: JSON Lines of trajectories (the reference format) or ready-made experiences.

A record with a ``task`` is a trajectory, one with a ``problem`` an experience. Each record is
validated on its own; problems come back as ``file:line: field: reason``. Reading streams: one
line in memory at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from kbgraph.agents import check_votes
from kbgraph.errors import InvalidInputError, validation_problems
from kbgraph.ids import content_hash
from kbgraph.jsonl import read_jsonl
from kbgraph.models import Experience, Trajectory


@dataclass(frozen=True)
class Record:
    where: str
    item: Trajectory | Experience | None
    problems: tuple[str, ...] = ()
    # The record's content as read (canonical JSON hashed): tells "the same record twice" from
    # "another record under the same id".
    fingerprint: str = ""


def read_records(paths: list[Path]) -> Iterator[Record]:
    for path in paths:
        if not path.is_file():
            yield Record(str(path), None, (f"{path}: no such file",))
            continue
        empty = True
        for line in read_jsonl(path):
            empty = False
            if line.value is None:
                yield Record(line.where, None, (f"{line.where}: {line.problem}",))
                continue
            model: type[Trajectory] | type[Experience] = Experience if "problem" in line.value and "task" not in line.value else Trajectory
            try:
                item = model.model_validate(line.value)
            except ValidationError as error:
                yield Record(line.where, None, tuple(validation_problems(line.where, error)))
                continue
            if isinstance(item, Trajectory) and "votes" in item.metadata:
                try:  # EDV: the executing agents' votes decide where the experience goes
                    check_votes(item.metadata["votes"], where=f"{line.where}: metadata.votes")
                except InvalidInputError as error:
                    yield Record(line.where, None, tuple(error.problems))
                    continue
            yield Record(line.where, item, fingerprint=content_hash(line.value, "record"))
        if empty:
            yield Record(str(path), None, (f"{path}: empty file, nothing to ingest",))
