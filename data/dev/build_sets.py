"""Builds the project's own development sets (data/dev/*_queries.jsonl, *_qrels.jsonl) from the
shared gold trajectories and the hand-written requests in this folder.

    python data/dev/build_sets.py [--data DIR] [--out DIR]

Deterministic and standard library only: the same inputs give byte-identical files, so a test can
check that the committed sets are exactly what this script builds (see data/dev/README.md).

The sets:
- ``short_<domain>``: the hand-written customer requests of ``short_requests.jsonl``; relevant =
  the other trajectories of the request's domain whose sequence of state-changing actions equals
  the source trajectory's; the source itself is excluded (the request is new).
- ``pay_<domain>``: the same rule over ``pay_requests.jsonl``, short requests that also say how
  the customer wants to pay or be refunded (retail and airline).
- ``lodo`` (leave one domain out): gold task texts of retail, airline and banking; every
  trajectory of the query's own domain is excluded; relevant = the trajectories of the *other*
  domains whose set of state-change kinds (``KIND``) equals the query's.
- ``alternative``: the hand-written handovers of ``alternative_requests.jsonl``, each ending in a
  step that failed, over the real runs (``../real_runs``); every run of the source task is
  excluded; relevant = the successful runs that got past the same failure another way (rel 2) or
  took that way from the start (rel 1) — see :func:`alternative_set`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "trajectories"
#: The real runs (successes and failures, with tool errors) beside the gold files.
REAL_RUNS = "real_runs"

#: The gold files the sets are built from, by domain.
GOLD_FILES = {"retail": "retail_train.jsonl", "airline": "airline.jsonl", "banking": "banking.jsonl"}
DOMAINS = tuple(GOLD_FILES)

#: Actions that only look things up: the shared qrels' definition of "not state-changing".
LOOKUP_PREFIXES = ("get_", "find_", "list_", "calculate", "search", "think")

#: Banking's tools are reached through these wrappers; the tool really called is named in the
#: arguments (its numeric suffix dropped: ``close_debit_card_4721`` -> ``close_debit_card``).
#: Without resolving them every banking run would read "unlock, call, unlock, call" and a card
#: freeze would equal an account closure.
DISCOVERABLE_CALLS = {"call_discoverable_agent_tool": "agent_tool_name",
                      "call_discoverable_user_tool": "discoverable_tool_name"}

#: Banking actions that change nothing the customer holds: making a tool available to the agent
#: or the user (unlock_/give_), recording that identity was checked (log_verification), and the
#: simulated user's own request to be handed over (request_human_agent_transfer, said 1 to 8
#: times per run; the handover itself is the agent's transfer_to_human_agents).
PROCEDURAL_ACTIONS = frozenset({"unlock_discoverable_agent_tool", "give_discoverable_user_tool",
                                "log_verification", "request_human_agent_transfer"})

#: The kind of state change each state-changing action makes, by its verb. The lodo set's
#: relevance is "same set of kinds in another domain". Every state-changing action of the gold
#: files must be listed: an unlisted one stops the build rather than being guessed.
KIND: Mapping[str, str] = {
    # cancel: ends something the customer holds
    "cancel_pending_order": "cancel",
    "cancel_reservation": "cancel",
    "close_bank_account": "cancel",
    "close_credit_card_account": "cancel",
    "close_debit_card": "cancel",
    # refund: money given back to the customer
    "return_delivered_order_items": "refund",
    "apply_statement_credit": "refund",
    "apply_checking_account_credit": "refund",
    "apply_savings_account_credit": "refund",
    # change: alters something the customer already holds
    "exchange_delivered_order_items": "change",
    "modify_pending_order_items": "change",
    "modify_pending_order_address": "change",
    "modify_pending_order_payment": "change",
    "update_reservation_flights": "change",
    "update_reservation_passengers": "change",
    "update_reservation_baggages": "change",
    "change_user_email": "change",
    "update_transaction_rewards": "change",
    "freeze_debit_card": "change",
    "unfreeze_debit_card": "change",
    "activate_debit_card": "change",
    "reset_debit_card_pin": "change",
    "clear_debit_card_fraud_alert": "change",
    "apply_credit_card_account_flag": "change",
    "log_credit_card_closure_reason": "change",
    "request_temporary_debit_card_limit_increase": "change",
    "submit_credit_limit_increase_request": "change",
    "approve_credit_limit_increase": "change",
    "deny_credit_limit_increase": "change",
    # create: a new booking, card or account
    "book_reservation": "create",
    "apply_for_credit_card": "create",
    "open_bank_account": "create",
    "order_debit_card": "create",
    "order_replacement_credit_card": "create",
    # transfer: money moved between the customer's own places
    "transfer_funds_between_bank_accounts": "transfer",
    "pay_credit_card_from_checking": "transfer",
    "submit_transaction": "transfer",
    "deposit_check": "transfer",
    # handoff: the conversation is handed to a person
    "transfer_to_human_agents": "handoff",
    "initial_transfer_to_human_agent": "handoff",
    "emergency_credit_bureau_incident_transfer": "handoff",
    # dispute: a complaint filed for someone to investigate
    "file_credit_card_transaction_dispute": "dispute",
    "file_debit_card_transaction_dispute": "dispute",
    "submit_cash_back_dispute": "dispute",
    "submit_interest_discrepancy_report": "dispute",
    # refer: a friend referred (no other domain has one)
    "submit_referral": "refer",
}

#: A set may hold at most this share of requests whose source changed nothing.
MAX_NO_CHANGE_SHARE = 0.15
#: Queries per domain in the lodo set.
LODO_PER_DOMAIN = 20

#: Retail gold tasks start with the simulated user's e-mail and traits ("x@example.com. You are
#: busy, sad. "): not part of the request.
RETAIL_PERSONA = re.compile(r"^\S+@\S+\.\s+You are [^.]*\.\s*")
#: Banking gold tasks are long persona stories; most quote the customer's opening line.
BANKING_OPENING = re.compile(r"(?:Start naturally|Opening)[^\"“]{0,80}?[\"“]([^\"”]{15,600})[\"”]")


class BuildError(Exception):
    """The inputs cannot make a valid set; the message names the file and line."""


@dataclass(frozen=True)
class Trajectory:
    id: str
    domain: str
    task: str
    changes: tuple[str, ...]

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(KIND[action] for action in self.changes)


def tool_name(step: Mapping[str, Any]) -> str:
    """The tool a step really called: the named tool of a discoverable-tool call, else the action."""
    action = str(step["action"])
    key = DISCOVERABLE_CALLS.get(action)
    if key is None:
        return action
    return re.sub(r"_\d+$", "", str(step["arguments"][key]))


def state_changes(steps: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The state-changing actions of a run, in order (lookups and procedural steps left out)."""
    names = (tool_name(step) for step in steps if step["action"] not in PROCEDURAL_ACTIONS)
    return tuple(name for name in names if not name.startswith(LOOKUP_PREFIXES))


def _jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if not path.is_file():
        raise BuildError(f"{path}: no such file")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise BuildError(f"{path}:{number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise BuildError(f"{path}:{number}: not a JSON object")
        yield f"{path}:{number}", record


def load_corpus(data: Path) -> list[Trajectory]:
    """The gold trajectories of every domain, in file order."""
    corpus: list[Trajectory] = []
    for domain, name in GOLD_FILES.items():
        for where, record in _jsonl(data / name):
            changes = state_changes(record["steps"])
            unknown = sorted(set(changes) - set(KIND))
            if unknown:
                raise BuildError(f"{where}: actions without a kind in KIND: {', '.join(unknown)}")
            corpus.append(Trajectory(record["id"], domain, record["task"], changes))
    return corpus


def _line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def _qrels(qid: str, relevant: Iterable[str]) -> list[str]:
    return [_line({"qid": qid, "doc_id": doc, "rel": 1}) for doc in relevant]


def short_sets(corpus: Sequence[Trajectory], requests: Path, prefix: str = "short",
               by_domain: bool = True) -> dict[str, str]:
    """``<prefix>_<domain>_queries.jsonl`` and ``_qrels.jsonl`` for every domain of ``requests``
    (``<prefix>_queries.jsonl`` and ``_qrels.jsonl`` for them all when not ``by_domain``)."""
    by_id = {t.id: t for t in corpus}
    queries: dict[str, list[str]] = {d: [] for d in DOMAINS}
    qrels: dict[str, list[str]] = {d: [] for d in DOMAINS}
    no_change: dict[str, int] = {d: 0 for d in DOMAINS}
    seen: set[str] = set()
    for where, request in _jsonl(requests):
        fields = {"qid", "query", "domain", "source"}
        if set(request) != fields or not all(isinstance(request[f], str) and request[f].strip() for f in fields):
            raise BuildError(f"{where}: needs exactly the non-blank strings {', '.join(sorted(fields))}")
        qid, domain, source = request["qid"], request["domain"], by_id.get(request["source"])
        if qid in seen:
            raise BuildError(f"{where}: qid: {qid!r} is used twice")
        seen.add(qid)
        if domain not in queries:
            raise BuildError(f"{where}: domain: {domain!r} is not one of {', '.join(DOMAINS)}")
        if source is None or source.domain != domain:
            raise BuildError(f"{where}: source: {request['source']!r} is no {domain} trajectory")
        relevant = [t.id for t in corpus if t.domain == domain and t.id != source.id and t.changes == source.changes]
        if not relevant:
            raise BuildError(f"{where}: source: no other {domain} trajectory makes the same state changes")
        no_change[domain] += not source.changes
        queries[domain].append(_line({"qid": qid, "query": request["query"], "domain": domain,
                                      "exclude": [source.id]}))
        qrels[domain] += _qrels(qid, relevant)
    files: dict[str, str] = {}
    for domain in DOMAINS:
        if not queries[domain]:
            continue
        if no_change[domain] > MAX_NO_CHANGE_SHARE * len(queries[domain]):
            raise BuildError(f"{requests}: {no_change[domain]} of {len(queries[domain])} {domain} requests change "
                             f"nothing; at most {MAX_NO_CHANGE_SHARE:.0%} may")
        name = f"{prefix}_{domain}" if by_domain else prefix
        files[f"{name}_queries.jsonl"] = files.get(f"{name}_queries.jsonl", "") + "".join(queries[domain])
        files[f"{name}_qrels.jsonl"] = files.get(f"{name}_qrels.jsonl", "") + "".join(qrels[domain])
    return files


def lodo_text(trajectory: Trajectory, overrides: Mapping[str, str]) -> str:
    """The query text of a gold task: retail without its persona prefix, airline as written,
    banking reduced to the customer's quoted opening line (or a hand-written extract)."""
    if trajectory.id in overrides:
        return overrides[trajectory.id]
    if trajectory.domain == "retail":
        return RETAIL_PERSONA.sub("", trajectory.task)
    if trajectory.domain == "banking":
        opening = BANKING_OPENING.search(trajectory.task)
        if opening is None:
            raise BuildError(f"{trajectory.id}: no quoted opening line in its task; add a shortened text "
                             "for it to lodo_requests.jsonl")
        return opening.group(1).strip()
    return trajectory.task


def _round_robin(groups: Mapping[tuple[str, ...], list[Trajectory]], count: int) -> list[Trajectory]:
    """Up to ``count`` trajectories, one from each kind set in turn (kind sets in sorted order,
    trajectories in corpus order), so no single kind of change fills the set."""
    queues = [list(groups[key]) for key in sorted(groups)]
    chosen: list[Trajectory] = []
    while len(chosen) < count and any(queues):
        for queue in queues:
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def lodo_set(corpus: Sequence[Trajectory], requests: Path) -> dict[str, str]:
    """``lodo_queries.jsonl`` and ``lodo_qrels.jsonl``."""
    overrides: dict[str, str] = {}
    for where, record in _jsonl(requests):
        if set(record) != {"source", "query"} or not all(isinstance(v, str) and v.strip() for v in record.values()):
            raise BuildError(f"{where}: needs exactly the non-blank strings query, source")
        overrides[record["source"]] = record["query"]
    unknown = sorted(set(overrides) - {t.id for t in corpus})
    if unknown:
        raise BuildError(f"{requests}: sources not in the corpus: {', '.join(unknown)}")
    queries: list[str] = []
    qrels: list[str] = []
    for domain in DOMAINS:
        own = sorted(t.id for t in corpus if t.domain == domain)
        groups: dict[tuple[str, ...], list[Trajectory]] = {}
        relevant: dict[str, list[str]] = {}
        for t in corpus:
            if t.domain != domain or not t.changes:
                continue
            relevant[t.id] = [o.id for o in corpus if o.domain != domain and o.changes and o.kinds == t.kinds]
            if relevant[t.id]:
                groups.setdefault(tuple(sorted(t.kinds)), []).append(t)
        for t in _round_robin(groups, LODO_PER_DOMAIN):
            qid = f"lodo-{t.id}"
            queries.append(_line({"qid": qid, "query": lodo_text(t, overrides), "domain": domain, "exclude": own}))
            qrels += _qrels(qid, relevant[t.id])
    return {"lodo_queries.jsonl": "".join(queries), "lodo_qrels.jsonl": "".join(qrels)}


# --------------------------------------------------------------------------- alternative


@dataclass(frozen=True)
class Run:
    """A real run: its id, its task (the id less ``-t<n>``), whether it succeeded and each step as
    (action, error class or None)."""

    id: str
    task: str
    domain: str
    succeeded: bool
    steps: tuple[tuple[str, str | None], ...]


#: Lookups of facts, as the recovering runs made them between a failure and the retry that went
#: through (think and calculate look nothing up).
FACT_LOOKUPS = ("get_", "find_", "list_", "search")


def error_class(error: str) -> str:
    """An error without its values: ``Error: payment method certificate_75 not found`` ->
    ``payment method # not found``; the same kind of failure whatever the ids and amounts."""
    text = re.sub(r"^error:\s*", "", error.strip().lower())
    return re.sub(r"\S*\d\S*", "#", text)


def load_runs(folder: Path) -> list[Run]:
    """Every run of the ``*.jsonl`` files in ``folder``, in file order."""
    runs: list[Run] = []
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise BuildError(f"{folder}: no real-run files (*.jsonl) there")
    for path in files:
        for where, record in _jsonl(path):
            run_id = str(record["id"])
            steps = tuple((str(s["action"]), error_class(s["error"]) if s.get("error") else None) for s in record["steps"])
            runs.append(Run(run_id, re.sub(r"-t\d+$", "", run_id), str(record["domain"]),
                            bool(record["outcome"].get("success")), steps))
    return runs


def recovery_lookups(run: Run, action: str, failure: str) -> frozenset[str] | None:
    """The facts ``run`` looked up between its first ``failure`` of ``action`` and the next call of
    ``action`` that went through; None when it never failed so or never got past it."""
    failed_at = next((i for i, step in enumerate(run.steps) if step == (action, failure)), None)
    if failed_at is None:
        return None
    for i in range(failed_at + 1, len(run.steps)):
        if run.steps[i] == (action, None):
            return frozenset(a for a, _ in run.steps[failed_at + 1:i] if a.startswith(FACT_LOOKUPS))
    return None


def took_the_way_from_the_start(run: Run, action: str, lookups: frozenset[str]) -> bool:
    """``run`` called ``action`` without an error, after one of ``lookups``, before any error of it."""
    for name, error in run.steps:
        if name == action:
            return False  # reached the action before looking anything up, or it failed first
        if name in lookups:
            return any(step == (action, None) for step in run.steps) and not any(
                a == action and e is not None for a, e in run.steps)
    return False


def _handover_steps(where: str, steps: object) -> list[dict[str, Any]]:
    if not isinstance(steps, list) or not steps:
        raise BuildError(f"{where}: steps_so_far: needs a non-empty list of steps")
    for number, step in enumerate(steps):
        if not isinstance(step, dict) or not set(step) <= {"action", "arguments", "error"} \
                or not isinstance(step.get("action"), str) or not isinstance(step.get("arguments", {}), dict):
            raise BuildError(f"{where}: steps_so_far[{number}]: needs action (a string), arguments (an object), "
                             "optional error")
    if not isinstance(steps[-1].get("error"), str) or not steps[-1]["error"].strip():
        raise BuildError(f"{where}: steps_so_far: the last step must carry the error it failed with")
    return steps


def alternative_set(runs: Sequence[Run], requests: Path) -> dict[str, str]:
    """``alternative_queries.jsonl`` and ``alternative_qrels.jsonl``: an agent's handover ending in a
    failed step. Relevant, among the runs of other tasks that succeeded: rel 2, a run that failed
    the same way (same action, same :func:`error_class`) and then got the action through; rel 1, a
    run that made, before its first call of the action, one of the lookups those recoveries made
    between the failure and the retry that worked (the same way, taken from the start)."""
    queries: list[str] = []
    qrels: list[str] = []
    seen: set[str] = set()
    tasks = {run.task for run in runs}
    for where, request in _jsonl(requests):
        if set(request) != {"qid", "query", "source", "steps_so_far"} or not all(
                isinstance(request[f], str) and request[f].strip() for f in ("qid", "query", "source")):
            raise BuildError(f"{where}: needs exactly the non-blank strings qid, query, source and steps_so_far")
        qid, source = request["qid"], request["source"]
        if qid in seen:
            raise BuildError(f"{where}: qid: {qid!r} is used twice")
        seen.add(qid)
        if source not in tasks:
            raise BuildError(f"{where}: source: {source!r} is no task of the real runs")
        steps = _handover_steps(where, request["steps_so_far"])
        action, failure = steps[-1]["action"], error_class(steps[-1]["error"])
        recovered = {run.id: found for run in runs if run.succeeded
                     and (found := recovery_lookups(run, action, failure)) is not None}
        way = frozenset().union(*recovered.values()) if recovered else frozenset()
        others = [run for run in runs if run.task != source and run.succeeded]
        graded = [(run.id, 2) for run in others if run.id in recovered]
        graded += [(run.id, 1) for run in others if run.id not in recovered and way
                   and took_the_way_from_the_start(run, action, way)]
        if not graded:
            raise BuildError(f"{where}: no successful run of another task got past {action!r} failing with "
                             f"{failure!r}")
        domain = next(run.domain for run in runs if run.task == source)
        queries.append(_line({"qid": qid, "query": request["query"], "domain": domain, "steps_so_far": steps,
                              "exclude": sorted(run.id for run in runs if run.task == source)}))
        qrels += [_line({"qid": qid, "doc_id": doc, "rel": rel}) for doc, rel in sorted(graded)]
    return {"alternative_queries.jsonl": "".join(queries), "alternative_qrels.jsonl": "".join(qrels)}


def build(data: Path, here: Path = HERE, real_runs: Path | None = None) -> dict[str, str]:
    """Every set's file name and content, built from the gold files in ``data`` and the real runs
    (``real_runs``, by default ``data``'s sibling folder ``real_runs``)."""
    corpus = load_corpus(data)
    runs = load_runs(real_runs if real_runs is not None else data.parent / REAL_RUNS)
    return {**short_sets(corpus, here / "short_requests.jsonl"),
            # Short requests that also say how the customer pays or is refunded.
            **short_sets(corpus, here / "pay_requests.jsonl", "pay"),
            # Requests that name no product, order or place: only the change they want.
            **short_sets(corpus, here / "intent_requests.jsonl", "intent"),
            # Requests for two or more changes at once: their answer is a composite workflow.
            **short_sets(corpus, here / "composite_requests.jsonl", "composite", by_domain=False),
            # The short requests again, over the runs of which half retried a call that failed for
            # the moment (the suite derives that corpus: search/eval/transient.py).
            **short_sets(corpus, here / "short_requests.jsonl", "transient", by_domain=False),
            **lodo_set(corpus, here / "lodo_requests.jsonl"),
            # Handovers ending in a failed step: the other way that worked after it.
            **alternative_set(runs, here / "alternative_requests.jsonl")}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the gold trajectory files")
    parser.add_argument("--out", type=Path, default=HERE, help="folder the sets are written to")
    args = parser.parse_args(argv)
    try:
        files = build(args.data)
    except BuildError as error:
        print(f"build_sets: {error}", file=sys.stderr)
        return 1
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8")
        print(f"{args.out / name}: {text.count(chr(10))} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
