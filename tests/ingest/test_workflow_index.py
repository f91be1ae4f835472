"""A domain's workflows as rows of bits and codes: asked for the longer workflows holding one in
order, they give exactly those a scan with the order test gives, closest first; asked for the
shorter ones one may hold, they never leave one out and hand over only what passes the set test;
whatever was added and removed before (pure)."""

from __future__ import annotations

import random

import pytest

from kbgraph.ingest.link import Workflow
from kbgraph.core.shapes import is_subsequence
from kbgraph.ingest.workflow_index import DomainWorkflows, offered, required


def _random_workflows(rnd: random.Random, count: int, names: int) -> list[Workflow]:
    vocabulary = [f"op_{i}" for i in range(names)]
    made = {("retail", tuple(rnd.choice(vocabulary) for _ in range(rnd.randint(0, 7)))) for _ in range(count)}
    return sorted(made)


def _ordered(present: list[Workflow]) -> list[Workflow]:
    return sorted(present, key=lambda w: (len(w[1]), w[1]))


def _check_longer(index: DomainWorkflows, present: list[Workflow], small: Workflow) -> None:
    handed = [w for w, _ in index.longer_containing(small)]  # exact: the order is checked too
    assert handed == [w for w in _ordered(present) if len(w[1]) > len(small[1]) and is_subsequence(small[1], w[1])]


def _check_shorter(index: DomainWorkflows, present: list[Workflow], big: Workflow) -> None:
    handed = [w for w, _ in index.shorter_within(big)]
    by_set = [w for w in _ordered(present) if len(w[1]) < len(big[1]) and set(w[1]) <= set(big[1])]
    assert set(handed) <= set(by_set)
    assert [w for w in handed if is_subsequence(w[1], big[1])] == [w for w in by_set if is_subsequence(w[1], big[1])]


@pytest.mark.parametrize(("seed", "names"), [(0, 5), (1, 12), (2, 70), (3, 140)])  # 70, 140: rows of 2 and 3 words
def test_set_containment_matches_the_definition_through_adds_and_removals(seed: int, names: int) -> None:
    rnd = random.Random(seed)
    pool = _random_workflows(rnd, 300, names)
    index = DomainWorkflows()
    present: list[Workflow] = []
    for step in range(600):
        if present and rnd.random() < 0.3:
            gone = present.pop(rnd.randrange(len(present)))
            index.place(gone, present=False)
        else:
            fresh = [w for w in pool if w not in present]
            if fresh:
                added = rnd.choice(fresh)
                present.append(added)
                index.place(added, present=True)
        if step % 25 == 0:  # ask (and so build the bits) only now and then: both paths are exercised
            for probe in rnd.sample(pool, 10):
                _check_longer(index, present, probe)
                _check_shorter(index, present, probe)
    assert len(index) == len(present)
    assert [e[1] for e in index.entries] == _ordered(present)


def test_the_order_of_operations_rules_out_workflows_before_any_order_test() -> None:
    index = DomainWorkflows()
    for workflow in [("d", ("a",)), ("d", ("a", "b")), ("d", ("b", "a", "c")), ("d", ("c", "b", "a", "a"))]:
        index.place(workflow, present=True)
    assert list(index.longer_containing(("d", ("z",)))) == []
    # (b, a, c) and (c, b, a, a) hold a and b, but no a before a b.
    assert [w for w, _ in index.longer_containing(("d", ("a", "b")))] == []
    assert [w for w, _ in index.longer_containing(("d", ("a", "a")))] == [("d", ("c", "b", "a", "a"))]
    # (a, b) is shorter than (b, a, c, z) and its operations are there, but not a before b.
    assert [w for w, _ in index.shorter_within(("d", ("b", "a", "c", "z")))] == [("d", ("a",)), ("d", ("b", "a", "c"))]
    assert ("a", "b") in offered(("a", "c", "b")) and ("b", "a") not in offered(("a", "c", "b"))
    assert required(("a", "c", "b")) == {"a", "b", "c", ("a", "c"), ("c", "b")}
