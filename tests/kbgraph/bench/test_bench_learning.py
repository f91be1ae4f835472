"""The learning-loop simulation (``kbgraph bench learning``): the oracle, the perturbations and the
per-pass figures as plain functions; then the simulation itself on a reduced setting against the
real Neo4j and MiniLM, and the command as a user runs it. Mechanics only, never exact figures."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import neo4j
import pytest

from kbgraph.bench.learning import (
    GrowthVerdict,
    LearningSimulation,
    PassFigures,
    QueryOutcome,
    SimulationData,
    ValuePools,
    aggregate_pass,
    compare_passes,
    control_settings,
    growth_verdict,
    learning_minus_control,
    load_simulation_data,
    oracle_success,
    perturb_round,
    perturb_trajectory,
    save_plot,
    state_changing_actions,
    subset,
    task_sequences,
    value_kind,
    value_pools,
)
from kbgraph.embedders import CachedEmbedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.kb import KnowledgeBase
from kbgraph.core.models import Experience, Step, Trajectory
from kbgraph.core.settings import Settings
from tests.cli_in_process import run_kbgraph
from tests.conftest import SHARED_DATA, Neo4jTarget

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def shared_data() -> SimulationData:
    if not (SHARED_DATA / "trajectories" / "retail_train.jsonl").is_file():
        pytest.fail(f"the shared data is missing: {SHARED_DATA}")
    return load_simulation_data(SHARED_DATA)


def experience(*actions: str, kind: str = "concrete") -> Experience:
    return Experience(problem="Customer task", goal="done", domain="retail", kind=kind,  # type: ignore[arg-type]
                      steps=[Step(action=a, text=a) for a in actions])


def figures(run: str, pass_no: int, success: float, ndcg: float) -> PassFigures:
    return PassFigures(run=run, pass_no=pass_no, queries=10, successes=int(success * 10),  # type: ignore[arg-type]
                       success_at_1=success, ndcg=ndcg, recall=0.1, mrr=0.5, evaluated=10, active=5, archived=0,
                       total=5)


# -- the oracle -----------------------------------------------------------------------------------------


def test_state_changing_actions_are_every_action_but_lookups_in_order() -> None:
    actions = ["find_user_id_by_email", "get_order_details", "list_all_product_types", "calculate", "think",
               "search_flights", "exchange_delivered_order_items", "get_product_details", "cancel_pending_order"]
    assert state_changing_actions(actions) == ("exchange_delivered_order_items", "cancel_pending_order")
    assert state_changing_actions([]) == ()


def test_a_task_sequence_is_the_one_all_relevant_trajectories_share() -> None:
    actions = {"t1": ["get_order_details", "cancel_pending_order"], "t2": ["cancel_pending_order"],
               "t3": ["return_delivered_order_items"]}
    assert task_sequences({"q1": {"t1": 1, "t2": 1, "t3": 0}}, actions) == {"q1": ("cancel_pending_order",)}


def test_a_task_sequence_that_is_ambiguous_missing_or_absent_is_refused_naming_the_query() -> None:
    actions = {"t1": ["cancel_pending_order"], "t3": ["return_delivered_order_items"]}
    with pytest.raises(InvalidInputError) as refused:
        task_sequences({"q1": {"t1": 1, "t3": 1}, "q2": {"t9": 1}, "q3": {"t1": 0}}, actions)
    problems = "\n".join(refused.value.problems)
    assert "q1: relevant trajectories disagree" in problems
    assert "q2: relevant trajectories not in the corpus: t9" in problems
    assert "q3: no relevant trajectory" in problems


def test_the_oracle_succeeds_only_when_the_state_changing_actions_match() -> None:
    task = ("exchange_delivered_order_items", "cancel_pending_order")
    assert oracle_success(experience("get_order_details", "exchange_delivered_order_items", "find_user_id_by_email",
                                     "cancel_pending_order"), task)
    assert oracle_success(experience("exchange_delivered_order_items", "cancel_pending_order", kind="abstract"), task)
    assert not oracle_success(experience("cancel_pending_order", "exchange_delivered_order_items"), task), "order counts"
    assert not oracle_success(experience("exchange_delivered_order_items"), task), "a part is not the whole"
    assert not oracle_success(experience("get_order_details"), task)
    assert not oracle_success(None, task), "nothing retrieved, nothing used: a failure"


# -- perturbation -----------------------------------------------------------------------------------------

ADDRESS_TASK = {
    "id": "retail-train-7", "domain": "retail", "source": "tau-bench retail train (MIT)",
    "outcome": {"success": True},
    "task": "li4495@example.com. You are shy. Cancel order #W6236251 because ordered by mistake. For #W1205816, "
            "change address to {'order_id': '#W1205816', 'address1': '629 Sunset Drive', 'address2': 'Suite 581', "
            "'city': 'San Diego', 'country': 'USA', 'state': 'CA', 'zip': '92159'} (same as #W6236251). "
            "Return #W1205816 via credit_card_4190576: Electric Kettle;",
    "steps": [
        {"action": "cancel_pending_order", "arguments": {"order_id": "#W6236251", "reason": "ordered by mistake"}},
        {"action": "modify_pending_order_address", "arguments": {
            "order_id": "#W1205816", "address1": "629 Sunset Drive", "address2": "Suite 581", "city": "San Diego",
            "country": "USA", "state": "CA", "zip": "92159"}},
        {"action": "return_delivered_order_items", "arguments": {
            "order_id": "#W1205816", "item_ids": ["9624127908", "8917609800"], "payment_method_id": "credit_card_4190576"}},
    ],
}
OTHER_TASK = {
    "id": "retail-train-8", "domain": "retail", "outcome": {"success": True},
    "task": "ab12@example.com. Return #W7777777 via credit_card_1111111: Lamp;",
    "steps": [{"action": "return_delivered_order_items", "arguments": {
        "order_id": "#W7777777", "item_ids": ["1234567890"], "payment_method_id": "credit_card_1111111"}},
        {"action": "modify_pending_order_address", "arguments": {"order_id": "#W5555555", "zip": "10001"}}],
}


def test_values_have_kinds_and_the_pools_hold_the_corpus_values_of_each_kind() -> None:
    assert value_kind("#W6236251") == "order_id"
    assert value_kind("credit_card_4190576") == "payment:credit_card"
    assert value_kind("gift_card_1725971") == "payment:gift_card"
    assert value_kind("li4495@example.com") == "email"
    assert value_kind("9624127908") == "item_id"
    assert value_kind("92159") == "zip"
    assert value_kind("629 Sunset Drive") == "number"
    assert value_kind("ordered by mistake") is None and value_kind("San Diego") is None
    pools = value_pools([ADDRESS_TASK, OTHER_TASK])
    assert pools.by_kind["order_id"] == ("#W1205816", "#W5555555", "#W6236251", "#W7777777")
    assert pools.by_kind["email"] == ("ab12@example.com", "li4495@example.com"), "e-mails come from the task text"
    assert "number" not in pools.by_kind


def test_a_perturbed_trajectory_keeps_its_actions_and_swaps_values_for_others_of_the_same_kind() -> None:
    pools = value_pools([ADDRESS_TASK, OTHER_TASK])
    perturbed = perturb_trajectory(ADDRESS_TASK, round_no=3, seed=0, pools=pools)
    Trajectory.model_validate(perturbed)
    assert perturbed["id"] == "retail-train-7-r3"
    assert [s["action"] for s in perturbed["steps"]] == [s["action"] for s in ADDRESS_TASK["steps"]]  # type: ignore[index]
    cancel, address, ret = (s["arguments"] for s in perturbed["steps"])
    for new, old in ((cancel["order_id"], "#W6236251"), (address["order_id"], "#W1205816"),
                     (ret["payment_method_id"], "credit_card_4190576"), (address["zip"], "92159"),
                     (address["address1"], "629 Sunset Drive")):
        assert new != old and value_kind(new) == value_kind(old)
        assert old not in perturbed["task"] and new in perturbed["task"], "the task says what the arguments do"
    assert address["order_id"] == ret["order_id"], "one order stays one order"
    assert address["address1"].endswith(" Sunset Drive") and address["city"] == "San Diego"
    assert cancel["reason"] == "ordered by mistake", "values that are not identifiers stay"
    assert all(value_kind(i) == "item_id" and i not in ("9624127908", "8917609800") for i in ret["item_ids"])
    assert "li4495@example.com" not in perturbed["task"] and "ab12@example.com" in perturbed["task"]


def test_perturbations_are_reproducible_per_seed_and_differ_between_rounds() -> None:
    pools = value_pools([ADDRESS_TASK, OTHER_TASK])
    assert perturb_trajectory(ADDRESS_TASK, 1, 0, pools) == perturb_trajectory(ADDRESS_TASK, 1, 0, pools)
    assert perturb_trajectory(ADDRESS_TASK, 1, 0, pools)["task"] != perturb_trajectory(ADDRESS_TASK, 2, 0, pools)["task"]
    assert perturb_trajectory(ADDRESS_TASK, 1, 0, pools) != perturb_trajectory(ADDRESS_TASK, 1, 1, pools)
    assert ADDRESS_TASK["id"] == "retail-train-7", "the input is left alone"


def test_a_kind_without_other_values_in_the_pool_gets_new_digits() -> None:
    lonely = ValuePools(by_kind={"order_id": ("#W6236251",)})
    record = {"id": "t", "task": "Cancel order #W6236251 because no longer needed.",
              "steps": [{"action": "cancel_pending_order", "arguments": {"order_id": "#W6236251"}}]}
    new = perturb_trajectory(record, 1, 0, lonely)["steps"][0]["arguments"]["order_id"]
    assert re.fullmatch(r"#W\d{7}", new) and new != "#W6236251"


def test_every_shared_trajectory_perturbs_into_a_valid_one_a_filler_word_apart(shared_data: SimulationData) -> None:
    pools = value_pools(shared_data.trajectories)
    for original, perturbed in zip(shared_data.trajectories, perturb_round(shared_data.trajectories, 1, 0, pools),
                                   strict=True):
        Trajectory.model_validate(perturbed)
        assert [s["action"] for s in perturbed["steps"]] == [s["action"] for s in original["steps"]]
        assert abs(len(perturbed["task"].split(" ")) - len(original["task"].split(" "))) == 1, perturbed["task"]
        assert perturbed["task"] != original["task"] and perturbed["id"] == f"{original['id']}-r1"


# -- the data ----------------------------------------------------------------------------------------------


def test_the_shared_data_gives_every_retail_query_one_task_sequence(shared_data: SimulationData) -> None:
    assert len(shared_data.trajectories) == 500 and len(shared_data.queries) == 79
    assert set(shared_data.sequences) == {q.qid for q in shared_data.queries}
    assert all(sequence for sequence in shared_data.sequences.values())
    assert [q.qid for q in shared_data.queries][:2] == ["retail-q0", "retail-q1"], "file order"


def test_a_subset_holds_relevant_trajectories_of_every_chosen_query(shared_data: SimulationData) -> None:
    small = subset(shared_data, queries=20, trajectories=120)
    assert len(small.queries) == 20 and len(small.trajectories) == 120
    ids = {t["id"] for t in small.trajectories}
    for query in small.queries:
        relevant = {d for d, rel in small.qrels[query.qid].items() if rel > 0}
        assert relevant and relevant <= ids, query.qid
    assert small.sequences == {q.qid: shared_data.sequences[q.qid] for q in small.queries}
    with pytest.raises(InvalidInputError, match="too few"):
        subset(shared_data, queries=79, trajectories=3)
    with pytest.raises(InvalidInputError, match="queries: 0: must be at least 1"):
        subset(shared_data, queries=0)


def test_bad_data_files_are_reported_by_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "trajectories").mkdir()
    (tmp_path / "eval").mkdir()
    (tmp_path / "trajectories" / "retail_train.jsonl").write_text('{"id": "t1", "task": "x"}\n{"id": "t2"}\nnope\n')
    (tmp_path / "eval" / "retail_queries.jsonl").write_text('{"qid": "q1", "query": "x", "domain": "retail"}\n')
    with pytest.raises(InvalidInputError) as refused:
        load_simulation_data(tmp_path)
    problems = "\n".join(refused.value.problems)
    assert "retail_train.jsonl:2: task: Field required" in problems
    assert "retail_train.jsonl:3: invalid JSON" in problems
    assert "retail_qrels.jsonl: no such file" in problems


# -- figures -----------------------------------------------------------------------------------------------


def test_a_pass_aggregates_success_at_1_over_every_task_and_rankings_over_the_judged_ones() -> None:
    outcomes = [
        QueryOutcome(qid="q1", retrieved=["e1"], ranking=["t1", "t9"], used="e1", success=True),
        QueryOutcome(qid="q2", retrieved=["e2"], ranking=["t9", "t2"], used="e2", success=False),
        QueryOutcome(qid="q3", retrieved=[], ranking=[], used=None, success=False),
        QueryOutcome(qid="q4", retrieved=["e1"], ranking=["t1"], used="e1", success=True),
    ]
    qrels = {"q1": {"t1": 1.0}, "q2": {"t2": 1.0}, "q3": {"t3": 1.0}, "q4": {"t4": 0.0}}
    metrics = aggregate_pass(outcomes, qrels, k=10)
    assert (metrics.queries, metrics.successes, metrics.success_at_1) == (4, 2, 0.5)
    assert metrics.evaluated == 3, "q4 has no relevant trajectory in the corpus"
    assert metrics.mrr == round((1 + 0.5 + 0) / 3, 4)
    assert metrics.recall == round(2 / 3, 4)
    assert 0 < metrics.ndcg < 1


def test_passes_compare_first_against_last_and_learning_against_the_control() -> None:
    learning = [figures("learning", 1, 0.3, 0.4), figures("learning", 2, 0.5, 0.45)]
    control = [figures("control", 1, 0.4, 0.4), figures("control", 2, 0.4, 0.4)]
    comparison = compare_passes(learning)
    assert comparison is not None and comparison.first_pass == 1 and comparison.last_pass == 2
    assert comparison.delta["success_at_1"] == 0.2 and comparison.beats == {
        "success_at_1": True, "ndcg": True, "recall": False, "mrr": False}
    flat = compare_passes(control)
    assert flat is not None and not any(flat.beats.values())
    assert compare_passes(learning[:1]) is None
    deltas = learning_minus_control(learning, control)
    assert [(d.pass_no, d.delta["success_at_1"], d.delta["ndcg"]) for d in deltas] == [(1, -0.1, 0.0), (2, 0.1, 0.05)]


def test_growth_is_bounded_within_a_factor_of_round_one_and_when_it_flattens() -> None:
    flattening = growth_verdict(157, [202, 232, 240])
    assert isinstance(flattening, GrowthVerdict)
    assert flattening.growth == [45, 30, 8] and flattening.bounded and flattening.flattening
    linear = growth_verdict(100, [200, 300, 400])
    assert linear is not None and not linear.within_factor and not linear.bounded
    speeding_up = growth_verdict(100, [110, 150])
    assert speeding_up is not None and speeding_up.within_factor and speeding_up.flattening is False
    assert not speeding_up.bounded
    one_round = growth_verdict(100, [120])
    assert one_round is not None and one_round.flattening is None and one_round.bounded
    assert growth_verdict(100, []) is None


# -- the simulation on a real knowledge base ---------------------------------------------------------------


def _png(path: Path) -> bool:
    return path.read_bytes()[:8] == PNG_SIGNATURE


def test_the_simulation_learns_from_feedback_keeps_the_control_clean_and_records_size_per_round(
    kb: KnowledgeBase, shared_data: SimulationData, driver: neo4j.Driver, embedder: CachedEmbedder,
    neo4j_target: Neo4jTarget, tmp_path: Path,
) -> None:
    neighbour = KnowledgeBase(driver, embedder, namespace=f"{kb.namespace}-neighbour", database=neo4j_target.database)
    neighbour.add_experiences([experience("cancel_pending_order")])
    stages: set[str] = set()
    try:
        report = LearningSimulation(kb, subset(shared_data, queries=20, trajectories=120),
                                    {"passes": 2, "reingest_rounds": 2},
                                    on_progress=lambda stage, done, total: stages.add(stage.split(":")[0])).run()
        assert neighbour.count() == 1, "the simulation clears its own namespace only"
    finally:
        neighbour.clear()

    assert report.ingest.records == 120 and report.ingest.total > 0
    assert [(f.run, f.pass_no) for f in report.control] == [("control", 1), ("control", 2)]
    assert [(f.run, f.pass_no) for f in report.learning] == [("learning", 1), ("learning", 2)]
    for row in [*report.control, *report.learning]:
        assert row.queries == 20 and row.evaluated == 20
        assert all(0.0 <= value <= 1.0 for value in (row.success_at_1, row.ndcg, row.recall, row.mrr))
        assert row.success_at_1 == round(row.successes / 20, 4)
        assert row.active + row.archived <= row.total
    # (Control passes are not compared with each other: the vector and full-text indexes are shared
    # by every namespace of the server, so other tenants writing meanwhile can move a ranking.)

    assert report.control_changed_counters is False
    assert report.counters["after_control"].used == 0 and report.counters["after_control"].retrieved == 0
    assert report.feedback_changed_counters is True
    used = sum(1 for f in report.learning for o in report.outcomes[f"learning pass {f.pass_no}"] if o.used)
    assert report.counters["after_learning"].used >= used > 0
    assert report.counters["after_learning"].retrieved >= report.counters["after_learning"].used

    if report.maintenance_available:
        assert all(f.maintenance_run for f in report.learning) and all(r.maintenance_run for r in report.rounds)
    else:
        assert any("kb.maintain" in note for note in report.notes)
    assert {c.run for c in report.comparisons} == {"learning", "control"}
    assert [d.pass_no for d in report.learning_minus_control] == [1, 2]

    assert [r.round for r in report.rounds] == [1, 2]
    assert all(r.records == 120 and r.total >= r.active > 0 for r in report.rounds)
    assert report.growth is not None and report.growth.totals == [r.total for r in report.rounds]
    assert report.growth.growth[0] == report.rounds[0].total - report.growth.before
    assert stages >= {"ingest", "control pass 1", "learning pass 2", "round 1", "re-ingest rounds"}

    plot = save_plot(report, tmp_path / "plots" / "learning.png")
    assert _png(plot) and plot.stat().st_size > 10_000
    assert json.loads(report.model_dump_json())["options"]["passes"] == 2


def test_the_control_alone_changes_no_counter_and_maintains_nothing(
    driver: neo4j.Driver, embedder: CachedEmbedder, namespace: str, neo4j_target: Neo4jTarget, tmp_path: Path,
    shared_data: SimulationData,
) -> None:
    settings = control_settings(Settings(namespace=namespace, neo4j_database=neo4j_target.database))
    kb = KnowledgeBase(driver, embedder, namespace=namespace, database=neo4j_target.database, settings=settings)
    try:
        report = LearningSimulation(kb, subset(shared_data, queries=5, trajectories=30),
                                    {"passes": 2, "reingest_rounds": 1, "learning": False}).run()
    finally:
        kb.clear()
    assert report.learning == [] and len(report.control) == 2 and report.comparisons[0].run == "control"
    assert report.feedback_changed_counters is None and report.control_changed_counters is False
    assert {name: totals.used for name, totals in report.counters.items()} == {
        "after_ingest": 0, "after_control": 0, "after_rounds": 0}
    assert all(f.maintenance_run is None and f.archived == 0 for f in report.control)
    assert report.rounds[0].maintenance_run is None and report.rounds[0].growth_checkpoint_run is None
    assert report.rounds[0].archived == 0
    assert _png(save_plot(report, tmp_path / "control.png"))


# -- the command --------------------------------------------------------------------------------------------


def kbgraph(target: Neo4jTarget, namespace: str, embedder: CachedEmbedder, *args: str
            ) -> subprocess.CompletedProcess[str]:
    """``kbgraph bench learning ARGS`` from the repository's root, in this process
    (tests/cli_in_process.py), sharing the session's MiniLM."""
    return run_kbgraph(target.env(namespace), "bench", "learning", *args, embedder=embedder,
                       cwd=Path(__file__).resolve().parents[3])


def test_the_command_refuses_the_default_and_demo_namespaces_and_a_bad_plot_before_connecting(
    embedder: CachedEmbedder, tmp_path: Path
) -> None:
    nowhere = Neo4jTarget("bolt://127.0.0.1:1", "neo4j", "x", "neo4j", "NEO4J_URI")
    for name in ("default", "demo"):
        refused = kbgraph(nowhere, "x", embedder, "-n", name, "--plot", str(tmp_path / "p.png"))
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert f"--namespace {name}: the simulation deletes everything in its namespace first" in refused.stderr
        assert "--force" in refused.stderr
    bad = kbgraph(nowhere, "x", embedder, "--plot", str(tmp_path / "plot.svg"), "--passes", "0",
                  "--data", str(tmp_path))
    assert bad.returncode == 2
    assert "--plot" in bad.stderr and "must name a .png file" in bad.stderr and "--passes 0" in bad.stderr
    missing = kbgraph(nowhere, "x", embedder, "--plot", str(tmp_path / "p.png"), "--data", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "retail_train.jsonl: no such file" in missing.stderr
    assert not (tmp_path / "p.png").exists()


@pytest.fixture
def cli_namespace(neo4j_target: Neo4jTarget, namespace: str, embedder: CachedEmbedder):  # type: ignore[no-untyped-def]
    yield namespace
    run_kbgraph(neo4j_target.env(namespace), "delete", "--all", "--yes", embedder=embedder)


def test_the_command_prints_figures_as_json_and_saves_the_plot(
    neo4j_target: Neo4jTarget, cli_namespace: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    plot = tmp_path / "learning.png"
    run = kbgraph(neo4j_target, cli_namespace, embedder, "-n", cli_namespace, "--queries", "4", "--trajectories", "24",
                  "--passes", "2", "--reingest-rounds", "1", "--plot", str(plot), "--json")
    assert run.returncode == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    assert report["namespace"] == cli_namespace and report["queries"] == 4 and report["trajectories"] == 24
    assert len(report["learning"]) == 2 and len(report["control"]) == 2 and len(report["rounds"]) == 1
    assert report["plot"] == str(plot) and _png(plot)
    assert "learning pass 1" in run.stderr, "progress goes to stderr"


def test_the_command_prints_tables_and_the_control_alone(
    neo4j_target: Neo4jTarget, cli_namespace: str, embedder: CachedEmbedder, tmp_path: Path
) -> None:
    run = kbgraph(neo4j_target, cli_namespace, embedder, "-n", cli_namespace, "--queries", "3", "--trajectories", "15",
                  "--reingest-rounds", "1", "--no-learning", "--plot", str(tmp_path / "control.png"))
    assert run.returncode == 0, run.stderr
    for text in ("per pass", "first pass vs last pass", "control pass 1", "control pass 2", "per re-ingest round",
                 "bounded:", "control changed the counters: no", "plot saved to"):
        assert text in run.stdout, text
    assert "learning pass" not in run.stdout
    assert _png(tmp_path / "control.png")
