"""CLI of the learning loop and of several agents: ``feedback``, ``maintain``, ``restore``,
``agents`` (the ability matrix), ``steps`` (MAEL step-wise retrieval) and ``verify`` (EDV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kbgraph.learning.agents import check_votes
from kbgraph.cli._common import JsonOption, NamespaceOption, _open, _parse_assignments, _print_json, add_commands, out
from kbgraph.cli.records import add_files
from kbgraph.core.errors import InvalidInputError
from kbgraph.core.value_bounds import MAX_COUNT
from kbgraph.core.terminal import plain


def register(app: typer.Typer) -> None:
    add_commands(app, {"feedback": feedback, "maintain": maintain, "restore": restore, "agents": agents,
                       "steps": steps, "verify": verify})


def _votes(values: list[str] | None) -> dict[str, bool]:
    votes: dict[str, bool] = {}
    for item in values or []:
        agent, sep, raw = item.partition("=")
        answer = raw.strip().lower()
        if not sep or answer not in {"yes", "no", "true", "false", "1", "0"}:
            raise InvalidInputError([f"--vote {item!r}: expected AGENT=yes or AGENT=no"])
        votes[agent.strip()] = answer in {"yes", "true", "1"}
    return votes


def _outcome(value: str | None) -> bool | float | None:
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered in {"success", "succeeded", "true", "yes"}:
        return True
    if lowered in {"failure", "failed", "false", "no"}:
        return False
    try:
        return float(lowered)
    except ValueError:
        raise InvalidInputError([f"--outcome {value!r}: expected success, failure or a score in [0, 1]"]) from None


def feedback(
    used: Annotated[list[str] | None, typer.Option("--used", "-u", help="An experience the agent used (repeat)")] = None,
    retrieved: Annotated[list[str] | None, typer.Option("--retrieved", "-r", help="An experience search returned (repeat)")] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", "-o", help="success, failure or a score in [0, 1]")] = None,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="The agent reporting (fills the ability matrix)")] = None,
    domain: Annotated[str | None, typer.Option("--domain", "-d", help="The task's domain [default: the used experiences']")] = None,
    step_reward: Annotated[list[str] | None, typer.Option(
        "--step-reward", help="EXPERIENCE_ID:ORDER=REWARD, a step's reward in [-1, 1] (repeat)")] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Record what an agent did with search results: retrieved, used, the outcome, step rewards."""
    rewards: list[dict[str, Any]] = []
    for name, value in _parse_assignments(step_reward, "--step-reward").items():
        experience_id, sep, order = name.rpartition(":")
        if not sep or not (order.isascii() and order.isdigit()):  # "²".isdigit(), yet int() refuses it
            raise InvalidInputError([f"--step-reward {name!s:.80}={value!s:.20}: expected EXPERIENCE_ID:ORDER=REWARD"])
        # Checked as text: Python refuses to read an integer of more than 4,300 digits (ValueError).
        if len(order.lstrip("0")) > len(str(MAX_COUNT)) or int(order) > MAX_COUNT:
            shown = order if len(order) <= 40 else f"a number of {len(order):,} digits"
            raise InvalidInputError([f"--step-reward {experience_id:.60}:ORDER: {shown} is not a step order "
                                     f"(a whole number from 0 to {MAX_COUNT:,})"])
        rewards.append({"experience_id": experience_id, "order": int(order), "reward": value})
    with _open(namespace) as kb:
        report = kb.record_feedback(retrieved=retrieved or [], used=used or [], outcome=_outcome(outcome),
                                    agent=agent, domain=domain, step_rewards=rewards)
    if as_json:
        _print_json(report.model_dump(mode="json"))
        return
    table = Table("experience", "retrieved", "used", "succeeded", "quality", "utility", title="after this event")
    for state in report.experiences:
        table.add_row(plain(state.id), str(state.retrieved), str(state.used), str(state.succeeded),
                      f"{state.quality:.3f}", f"{state.utility:.3f}")
    out.print(table)


def maintain(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change and why; change nothing")] = False,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """AutoRefine maintenance now: merge near-duplicates, archive (reversibly) what does not help,
    relink the workflows over what stays active."""
    with _open(namespace) as kb:
        report = kb.maintain(dry_run=dry_run)
    if as_json:
        _print_json(report.model_dump(mode="json"))
        return
    verb = "would" if dry_run else "did"
    out.print(f"maintenance {report.run_id} ({'dry run' if dry_run else report.trigger}): examined "
              f"{report.examined} active experiences, {report.eligible_for_pruning} with a record to judge; "
              f"{verb} merge {report.merged} and archive {report.archived}"
              + (f", create {report.workflows_created} and bring back {report.workflows_restored} workflows"
                 if report.workflows_created or report.workflows_restored else ""))
    for change in report.changes:
        target = f" into {change.into}" if change.into else ""
        out.print(f"  {change.action} {change.id}{target}: {change.reason}", markup=False, highlight=False)
    if report.archived and not dry_run:
        out.print(f"undo with: kbgraph restore --run {report.run_id}")


def restore(
    ids: Annotated[list[str] | None, typer.Argument(help="Archived experience ids [default: the last run's]")] = None,
    run: Annotated[str | None, typer.Option("--run", help="Restore everything this maintenance run archived")] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Undo pruning: archived experiences become active (searchable) again."""
    with _open(namespace) as kb:
        restored = kb.restore(run_id=run, ids=ids or [])
    if as_json:
        _print_json({"restored": restored})
        return
    out.print(f"restored {len(restored)} experiences" + "".join(f"\n  {i}" for i in restored),
              markup=False, highlight=False)


def agents(
    domain: Annotated[str | None, typer.Option("--domain", "-d", help="Rank agents for this domain")] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Rank agents for this task (its domain is looked up)")] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """The ability matrix (agent × domain success), or the agents ranked for a domain or task."""
    with _open(namespace) as kb:
        if domain is not None or task is not None:
            ranked = kb.best_agents(domain=domain, task=task)
            if as_json:
                _print_json([c.model_dump() for c in ranked])
                return
            for n, cell in enumerate(ranked, 1):
                out.print(f"{n}. {cell.agent}: {cell.successes}/{cell.attempts} in {cell.domain} "
                          f"(ability {cell.ability:.3f})", markup=False, highlight=False)
            if not ranked:
                out.print("no agent has a record there yet")
            return
        matrix = kb.ability_matrix()
    if as_json:
        _print_json(matrix.model_dump())
        return
    table = Table("agent", title="ability: (successes + 1) / (attempts + 2)")
    for domain_name in matrix.domains:  # stored text: a header never read as markup
        table.add_column(plain(domain_name))
    cells = {(c.agent, c.domain): c for c in matrix.cells}
    for agent in matrix.agents:
        table.add_row(plain(agent), *(f"{cells[agent, d].ability:.2f} ({cells[agent, d].successes}/{cells[agent, d].attempts})"
                               if (agent, d) in cells else "—" for d in matrix.domains))
    out.print(table)


def steps(
    action: Annotated[str, typer.Argument(help="The action about to be taken")],
    text: Annotated[str | None, typer.Option("--text", help="What the step does, in words")] = None,
    domain: Annotated[str | None, typer.Option("--domain", "-d")] = None,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="Also search this agent's private bank")] = None,
    k: Annotated[int, typer.Option("-k", help="How many steps")] = 5,
    alpha: Annotated[float | None, typer.Option("--alpha", help="α of α·similarity + (1−α)·reward")] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """MAEL step-wise retrieval: stored steps like this one, scored α·similarity + (1−α)·reward."""
    with _open(namespace) as kb:
        hits = kb.search_steps(action, text=text, domain=domain, agent=agent, k=k, alpha=alpha)
    if as_json:
        _print_json([h.model_dump() for h in hits])
        return
    for hit in hits:
        reward = "unrated" if hit.reward is None else f"{hit.reward:+.2f} ({hit.rewards_reported} reports)"
        out.print(f"{hit.rank}. {hit.score:.3f}  step {hit.order} {hit.action} of {hit.experience_id} — "
                  f"similarity {hit.similarity:.3f}, reward {reward}", markup=False, highlight=False)


def verify(
    files: Annotated[list[Path], typer.Argument(help="JSON Lines files of candidate experiences")],
    vote: Annotated[list[str] | None, typer.Option("--vote", help="AGENT=yes|no, one per executing agent (repeat)")] = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """EDV: store candidate experiences by the votes of the agents that executed their task —
    all yes: shared bank; some: the approvers' private banks; none: rejected (kept, never retrieved)."""
    votes = check_votes(_votes(vote), where="--vote")  # before connecting: a typo fails at once
    with _open(namespace) as kb:
        report = add_files(kb, files, votes=votes)
    if as_json:
        _print_json(report)
        return
    out.print(f"{len(report['verdicts'])} candidates: " + ", ".join(
        f"{v} {report['verdicts'].count(v)}" for v in ("shared", "private", "rejected") if v in report["verdicts"]))
