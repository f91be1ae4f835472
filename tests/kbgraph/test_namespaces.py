"""Two tenants in one database never see each other's data, through any API: search, refine,
step search, feedback, learning state, ability, stats, maintenance, restore and export.

Both tenants hold an experience with the same content — so the same id — to show that the
namespace, not the id, keeps them apart."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator

import neo4j
import pytest
from pydantic import ValidationError

from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, FailureMode, Step
from kbgraph.core.settings import Settings
from kbgraph.transfer import export_namespace
from tests.cli_in_process import run_kbgraph
from tests.conftest import Neo4jTarget

COMMON = Experience(
    problem="Cancel a pending order placed by mistake.", goal="Get done: cancel pending order", domain="retail",
    steps=[Step(action="get_order_details", text="look up the order"),
           Step(action="cancel_pending_order", text="cancel the order", issue_type="wrong_status")],
    failure_modes=[FailureMode(description="cancel failed: order already shipped", issue_type="wrong_status",
                               recovery="offer a return instead", step_order=1)],
)


def only_in(tenant: str) -> list[Experience]:
    # Different workflows (the last action differs), so maintenance has nothing to merge.
    return [Experience(problem=f"Cancel a pending order for tenant {tenant}, item {n}.", goal="Get done: cancel",
                       domain="retail", failure_modes=COMMON.failure_modes,
                       steps=[Step(action="get_order_details", text="look up the order"),
                              Step(action=f"cancel_pending_order_{n}", text="cancel the order",
                                                    issue_type="wrong_status")])
            for n in range(6)]


@pytest.fixture
def tenants(driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str) -> Iterator[tuple[KnowledgeBase, KnowledgeBase]]:
    a = KnowledgeBase(driver, embedder, namespace=namespace + "-a")
    b = KnowledgeBase(driver, embedder, namespace=namespace + "-b")
    a.add_experiences([COMMON, *only_in("a")])
    b.add_experiences([COMMON, *only_in("b")])
    try:
        yield a, b
    finally:
        a.clear()
        b.clear()


def ids_of(kb: KnowledgeBase) -> set[str]:
    return set(kb.store.iter_ids())


def test_search_refine_and_step_search_stay_in_their_namespace(tenants: tuple[KnowledgeBase, KnowledgeBase]) -> None:
    a, b = tenants
    b_only = ids_of(b) - ids_of(a)
    for kb, other_only in ((a, b_only), (b, ids_of(a) - ids_of(b))):
        found = kb.search("cancel a pending order placed by mistake", k=100, agent="x")
        assert set(found.ids()) <= ids_of(kb) and not set(found.ids()) & other_only
        refined = kb.refine([{"action": "cancel_pending_order", "error": "order already shipped",
                              "issue_type": "wrong_status"}], k=100)
        seen = {m.experience_id for m in refined.steps} | {f.experience_id for f in refined.failures}
        assert seen and seen <= ids_of(kb)
        steps = kb.search_steps("cancel_pending_order", text="cancel the order", k=100)
        assert {h.experience_id for h in steps} <= ids_of(kb)


def test_feedback_learning_state_and_ability_stay_in_their_namespace(tenants: tuple[KnowledgeBase, KnowledgeBase]) -> None:
    a, b = tenants
    b_only = sorted(ids_of(b) - ids_of(a))
    with pytest.raises(InvalidInputError, match="not in namespace"):
        a.record_feedback(used=[b_only[0]], outcome=True)
    assert a.learning_state(b_only) == []
    a.record_feedback(retrieved=[COMMON.key], used=[COMMON.key], outcome=True, agent="agent-a")
    assert a.learning_state([COMMON.key])[0].used == 1
    assert b.learning_state([COMMON.key])[0].used == 0, "the same id in the other tenant is untouched"
    assert [c.agent for c in a.ability_matrix().cells] == ["agent-a"] and b.ability_matrix().cells == []


def test_stats_maintenance_and_restore_stay_in_their_namespace(tenants: tuple[KnowledgeBase, KnowledgeBase]) -> None:
    a, b = tenants
    before_b = b.stats()
    assert a.stats().experiences == 7 and before_b.experiences == 7
    # In b, one experience keeps being retrieved and never helps; the rest work.
    worst = sorted(ids_of(b) - {COMMON.key})[0]
    for exp_id in ids_of(b):
        for n in range(5):
            b.record_feedback(retrieved=[exp_id], **({} if exp_id == worst else {"used": [exp_id], "outcome": True}))
    assert a.maintain().changes == [], "a has no record to judge, whatever b has"
    report = b.maintain()
    assert [c.id for c in report.changes] == [worst]
    assert a.restore(report.run_id) == [] and a.restore(ids=[worst]) == []
    assert b.get(worst).status == "archived"  # type: ignore[union-attr]
    assert a.stats().experiences_by_status == {"active": 7}
    assert b.restore(report.run_id) == [worst]


def test_export_holds_one_namespace_only(tenants: tuple[KnowledgeBase, KnowledgeBase]) -> None:
    a, b = tenants
    sink = io.StringIO()
    export_namespace(a.gateway, a.namespace, sink)
    text = sink.getvalue()
    assert b.namespace not in text
    experience_ids = {json.loads(line).get("key") or json.loads(line).get("id") for line in text.splitlines()[1:]}
    assert not (ids_of(b) - ids_of(a)) & {i for i in experience_ids if i}
    assert all(i in text for i in ids_of(a))


@pytest.mark.parametrize("blank", ["", " ", "a b", "x" * 65])
def test_the_api_refuses_a_blank_or_malformed_namespace(driver: neo4j.Driver, embedder: CachedEmbedder, blank: str) -> None:
    with pytest.raises(InvalidInputError, match="namespace"):
        KnowledgeBase(driver, embedder, namespace=blank)


@pytest.mark.parametrize("blank", ["", "  ", "\t"])
def test_an_empty_namespace_setting_is_refused_not_defaulted(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    monkeypatch.setenv("KBGRAPH_NAMESPACE", blank)
    with pytest.raises(ValidationError, match="is not a namespace.*from KBGRAPH_NAMESPACE"):
        Settings()
    with pytest.raises(ValidationError, match="is not a namespace"):  # refused before connecting
        KnowledgeBase.from_settings(namespace=blank)


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_namespace_at_any_door_deletes_nothing_even_with_kbgraph_namespace_set(
    tenants: tuple[KnowledgeBase, KnowledgeBase], neo4j_target: Neo4jTarget, embedder: CachedEmbedder, blank: str
) -> None:
    # `KBGRAPH_NAMESPACE=x kbgraph delete --all --yes -n ""` once deleted x: "" meant "the configured one".
    a, b = tenants
    before = ids_of(a), ids_of(b)

    def kbgraph(env_namespace: str, *args: str) -> subprocess.CompletedProcess[str]:
        # In this process (tests/cli_in_process.py), with an empty standard input, as the
        # subprocess these once were had (`mcp` must not wait on it).
        return run_kbgraph(neo4j_target.env(env_namespace), *args, embedder=embedder)

    refused = [
        kbgraph(a.namespace, "delete", "--all", "--yes", "-n", blank),
        kbgraph(a.namespace, "mcp", "-n", blank),
        kbgraph(blank, "delete", "--all", "--yes"),  # KBGRAPH_NAMESPACE itself blank
    ]
    for result in refused:
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert "is not a namespace" in result.stderr and "Traceback" not in result.stderr and len(lines) <= 2
    assert "KBGRAPH_NAMESPACE" in refused[2].stderr
    assert (ids_of(a), ids_of(b)) == before and len(before[0]) == 7
