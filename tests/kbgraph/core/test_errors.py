"""A problem of an input (kbgraph/core/errors.py Problem) is the text people read, rendered once
from parts that readers take as they are: where, which field, what is wrong."""

from __future__ import annotations

import copy
import pickle

import pytest
from pydantic import BaseModel, ValidationError

from kbgraph.core.errors import InvalidInputError, Problem, validation_problems


def test_a_problem_reads_as_where_field_message_and_keeps_its_parts() -> None:
    problem = Problem("a.jsonl:3", "Field required", "steps.0.action")
    assert problem == "a.jsonl:3: steps.0.action: Field required"
    assert (problem.where, problem.field, problem.message) == ("a.jsonl:3", "steps.0.action", "Field required")
    assert Problem("a.jsonl", "no such file") == "a.jsonl: no such file"
    for copied in (copy.deepcopy(problem), pickle.loads(pickle.dumps(problem))):
        assert (copied, copied.where, copied.field) == (problem, "a.jsonl:3", "steps.0.action")


class _Query(BaseModel):
    task: str


def test_pydantics_problems_are_problems_with_the_field_path_or_record() -> None:
    with pytest.raises(ValidationError) as caught:
        _Query.model_validate({})
    [problem] = validation_problems("query", caught.value)
    assert isinstance(problem, Problem) and (problem.where, problem.field) == ("query", "task")
    assert InvalidInputError([problem]).problems[0] is problem
