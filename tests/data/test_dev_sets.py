"""Specification of the project's own development sets (data/dev): they are exactly what
data/dev/build_sets.py makes from the shared gold trajectories and real runs, every query can be
answered, the
short requests speak as a customer would (no tool names or tool words) and each short set is big
enough. No database, no model: files and the builder's pure functions only."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from kbgraph.search.eval.data import load_qrels, load_queries, qrels_by_query
from tests.conftest import SHARED_DATA

DEV = Path(__file__).resolve().parents[2] / "data" / "dev"
TRAJECTORIES = SHARED_DATA / "trajectories"
REAL_RUNS = SHARED_DATA / "real_runs"
SHORT_SETS = ("short_retail", "short_airline", "short_banking")
#: Short requests that also say how the customer pays or is refunded.
PAY_SETS = ("pay_retail", "pay_airline")
#: Requests naming only the change they want, and requests for two or more changes at once.
REQUEST_SETS = (*SHORT_SETS, *PAY_SETS, "intent_retail", "composite")
SETS = (*REQUEST_SETS, "lodo", "alternative", "transient")

#: Words of the tools' names a customer would not say ("swap an item that arrived", not "exchange
#: delivered order items"). Everyday words that tools share with customers (order, cancel, return,
#: book, card, account, flight, refund) are allowed.
TOOL_WORDS = frozenset({
    "modify", "pending", "delivered", "exchange", "items", "update", "reservation", "reservations",
    "baggages", "passengers", "submit", "apply", "discrepancy", "referral", "dispute", "human",
    "discoverable", "unlock", "verification",
})


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_sets", DEV / "build_sets.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


build_sets = _builder()


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    if not (TRAJECTORIES / "retail_train.jsonl").is_file():
        pytest.fail(f"the shared data is missing: {TRAJECTORIES}")
    files: dict[str, str] = build_sets.build(TRAJECTORIES)
    return files


def _action_names() -> set[str]:
    """Every tool name of the gold files: the actions and the banking tools called through them."""
    names: set[str] = set()
    for name in build_sets.GOLD_FILES.values():
        for line in (TRAJECTORIES / name).read_text(encoding="utf-8").splitlines():
            for step in json.loads(line)["steps"]:
                names |= {step["action"], build_sets.tool_name(step)}
    return names


# --------------------------------------------------------------------------- the committed files


def test_the_committed_sets_are_what_the_builder_makes(built: dict[str, str]) -> None:
    assert sorted(built) == sorted(f"{s}_{part}.jsonl" for s in SETS for part in ("queries", "qrels"))
    for name, text in built.items():
        assert (DEV / name).read_text(encoding="utf-8") == text, f"{name} differs: run data/dev/build_sets.py"
    committed = {p.name for p in DEV.glob("*_queries.jsonl")} | {p.name for p in DEV.glob("*_qrels.jsonl")}
    assert committed == set(built), "a set file in data/dev that the builder does not make"


@pytest.mark.parametrize("name", SETS)
def test_every_query_has_a_relevant_trajectory_it_does_not_exclude(name: str) -> None:
    queries = load_queries(DEV / f"{name}_queries.jsonl")
    judged = qrels_by_query(load_qrels(DEV / f"{name}_qrels.jsonl"))
    assert set(judged) == {q.qid for q in queries}
    for query in queries:
        found = {doc for doc, rel in judged[query.qid].items() if rel > 0} - query.exclude
        assert found, f"{name}: {query.qid} has no relevant trajectory left once its exclude list is applied"


def test_the_transient_set_asks_the_short_requests_with_their_relevance() -> None:
    # The same requests and judgements; only the corpus differs (search/eval/transient.py).
    for part in ("queries", "qrels"):
        short = [line for name in SHORT_SETS for line in (DEV / f"{name}_{part}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert sorted((DEV / f"transient_{part}.jsonl").read_text(encoding="utf-8").splitlines()) == sorted(short)


@pytest.mark.parametrize(("name", "at_least"), [*((name, 30) for name in SHORT_SETS), *((name, 15) for name in PAY_SETS)])
def test_each_short_and_pay_set_has_enough_short_requests_without_steps(name: str, at_least: int) -> None:
    queries = load_queries(DEV / f"{name}_queries.jsonl")
    assert len(queries) >= at_least
    assert all(q.steps_so_far is None and len(q.exclude) == 1 for q in queries)
    assert all(len(q.query.split()) <= 35 for q in queries), "a short request is one or two sentences"


#: How a customer names a way to pay or be refunded.
PAYMENT_WORDS = re.compile(r"gift card|paypal|credit card|card ending|\bcard\b|certificate|mastercard", re.IGNORECASE)


def test_pay_requests_say_how_to_pay_and_their_source_paid_with_a_method() -> None:
    paid: dict[str, bool] = {}
    for name in ("retail_train.jsonl", "airline.jsonl"):
        for line in (TRAJECTORIES / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            paid[record["id"]] = any({"payment_method_id", "payment_id", "payment_methods"} & set(step["arguments"])
                                     for step in record["steps"] if step["action"] in build_sets.KIND)
    for line in (DEV / "pay_requests.jsonl").read_text(encoding="utf-8").splitlines():
        request = json.loads(line)
        assert PAYMENT_WORDS.search(request["query"]), f"{request['qid']} says nothing of how to pay: {request['query']}"
        assert paid[request["source"]], f"{request['qid']}: its source {request['source']} paid with no method"


def test_intent_requests_name_no_order_product_or_place() -> None:
    queries = load_queries(DEV / "intent_retail_queries.jsonl")
    assert len(queries) >= 20
    assert not [q.qid for q in queries if re.search(r"#|\d", q.query)], "an intent-only request carries no id or number"


@pytest.mark.parametrize("name", REQUEST_SETS)
def test_short_requests_name_no_tool_and_use_no_tool_word(name: str) -> None:
    actions = {a for a in _action_names() if "_" in a}
    phrases = actions | {a.replace("_", " ") for a in actions}
    for query in load_queries(DEV / f"{name}_queries.jsonl"):
        text = query.query.lower()
        assert not [p for p in phrases if p in text], f"{query.qid} names a tool: {query.query}"
        words = set(re.findall(r"[a-z]+", text))
        assert not words & TOOL_WORDS, f"{query.qid} uses tool words {sorted(words & TOOL_WORDS)}: {query.query}"


def test_lodo_excludes_the_whole_own_domain_and_judges_only_other_domains(built: dict[str, str]) -> None:
    corpus = build_sets.load_corpus(TRAJECTORIES)
    domain_of = {t.id: t.domain for t in corpus}
    judged = qrels_by_query(load_qrels(DEV / "lodo_qrels.jsonl"))
    queries = load_queries(DEV / "lodo_queries.jsonl")
    assert {q.domain for q in queries} == {"retail", "airline", "banking"}
    for query in queries:
        assert query.exclude == {t.id for t in corpus if t.domain == query.domain}
        assert all(domain_of[doc] != query.domain for doc in judged[query.qid])


# --------------------------------------------------------------------------- the builder's rules


def test_banking_tools_called_through_a_wrapper_count_as_themselves() -> None:
    steps = [
        {"action": "log_verification", "arguments": {"name": "Ana"}},
        {"action": "unlock_discoverable_agent_tool", "arguments": {"agent_tool_name": "close_debit_card_4721"}},
        {"action": "call_discoverable_agent_tool", "arguments": {"agent_tool_name": "get_debit_cards_by_account_id_7823"}},
        {"action": "call_discoverable_agent_tool", "arguments": {"agent_tool_name": "close_debit_card_4721"}},
        {"action": "call_discoverable_user_tool", "arguments": {"discoverable_tool_name": "deposit_check_3847"}},
        {"action": "request_human_agent_transfer", "arguments": {}},
        {"action": "transfer_to_human_agents", "arguments": {}},
    ]
    assert build_sets.state_changes(steps) == ("close_debit_card", "deposit_check", "transfer_to_human_agents")


def test_a_state_change_without_a_kind_stops_the_build(tmp_path: Path) -> None:
    for name in build_sets.GOLD_FILES.values():
        (tmp_path / name).write_text("", encoding="utf-8")
    record = {"id": "retail-x", "task": "t", "steps": [{"action": "teleport_order", "arguments": {}}]}
    (tmp_path / "retail_train.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(build_sets.BuildError, match=r"retail_train.jsonl:1: .*teleport_order"):
        build_sets.load_corpus(tmp_path)


def test_alternative_handovers_end_in_a_failed_step_and_exclude_their_whole_task() -> None:
    runs = build_sets.load_runs(REAL_RUNS)
    task_of = {run.id: run.task for run in runs}
    succeeded = {run.id for run in runs if run.succeeded}
    judged = qrels_by_query(load_qrels(DEV / "alternative_qrels.jsonl"))
    queries = load_queries(DEV / "alternative_queries.jsonl")
    assert len(queries) >= 15
    for query in queries:
        assert query.steps_so_far and query.steps_so_far[-1].error, query.qid
        source_tasks = {task_of[run] for run in query.exclude}
        assert len(source_tasks) == 1 and query.exclude == {r for r, t in task_of.items() if t in source_tasks}
        assert set(judged[query.qid]) <= succeeded, "only runs that reached the goal are relevant"
        assert 2 in judged[query.qid].values(), f"{query.qid}: no run got past the same failure"


def _run(run_id: str, succeeded: bool, *steps: tuple[str, str | None]) -> object:
    return build_sets.Run(run_id, run_id.rsplit("-", 1)[0], "airline", succeeded, steps)


def test_the_same_failure_is_the_same_action_and_error_whatever_the_values() -> None:
    assert build_sets.error_class("Error: payment method certificate_7504069 not found") == "payment method # not found"
    assert build_sets.error_class("Error: payment method not found") == "payment method not found"
    assert build_sets.error_class("Error: total price is 305, but paid 255") == "total price is # but paid #"


def test_relevant_runs_got_past_the_failure_or_took_the_recovering_way_from_the_start(tmp_path: Path) -> None:
    fail = ("pay", "payment method not found")
    runs = [
        _run("query-t0", True, ("lookup_x", None), ("pay", None)),  # the query's own task: excluded
        _run("recovered-t0", True, fail, ("get_profile", None), ("pay", None)),
        _run("recovered_late-t0", False, fail, ("get_profile", None), ("pay", None)),  # the run then failed
        _run("from_start-t0", True, ("get_profile", None), ("pay", None)),
        _run("no_lookup-t0", True, ("pay", None)),
        _run("failed_other_way-t0", True, ("pay", "card expired"), ("get_profile", None), ("pay", None)),
    ]
    request = {"qid": "q", "query": "pay for the change", "source": "query",
               "steps_so_far": [{"action": "pay", "arguments": {}, "error": "Error: payment method not found"}]}
    requests = tmp_path / "alternative_requests.jsonl"
    requests.write_text(json.dumps(request) + "\n", encoding="utf-8")
    files = build_sets.alternative_set(runs, requests)
    judged = [json.loads(line) for line in files["alternative_qrels.jsonl"].splitlines()]
    assert {(j["doc_id"], j["rel"]) for j in judged} == {("recovered-t0", 2), ("from_start-t0", 1)}
    assert json.loads(files["alternative_queries.jsonl"])["exclude"] == ["query-t0"]


def test_a_handover_whose_last_step_did_not_fail_is_refused(tmp_path: Path) -> None:
    request = {"qid": "q", "query": "pay", "source": "query", "steps_so_far": [{"action": "pay", "arguments": {}}]}
    requests = tmp_path / "alternative_requests.jsonl"
    requests.write_text(json.dumps(request) + "\n", encoding="utf-8")
    with pytest.raises(build_sets.BuildError, match=r"alternative_requests.jsonl:1: steps_so_far: the last step"):
        build_sets.alternative_set([_run("query-t0", True, ("pay", None))], requests)


def test_a_request_whose_change_nobody_else_made_is_refused(tmp_path: Path) -> None:
    corpus = [build_sets.Trajectory("r-1", "retail", "t", ("cancel_pending_order",)),
              build_sets.Trajectory("r-2", "retail", "t", ("return_delivered_order_items",))]
    requests = tmp_path / "short_requests.jsonl"
    requests.write_text(json.dumps({"qid": "q", "query": "stop my order", "domain": "retail", "source": "r-1"}) + "\n",
                        encoding="utf-8")
    with pytest.raises(build_sets.BuildError, match=r"short_requests.jsonl:1: source: no other retail"):
        build_sets.short_sets(corpus, requests)
