"""The oracle of the learning simulation: a task's sequence of state-changing actions, and whether
the experience an agent used holds it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.models import Experience

#: Actions that only look things up (the qrels' definition of "not state-changing").
LOOKUP_PREFIXES = ("get_", "find_", "list_", "calculate", "search", "think")


def state_changing_actions(actions: Iterable[str]) -> tuple[str, ...]:
    """The actions that change state, in order: every action except lookups (names starting with
    get_, find_, list_, calculate, search or think), as the qrels define relevance."""
    return tuple(a for a in actions if not a.startswith(LOOKUP_PREFIXES))


def task_sequences(
    qrels: Mapping[str, Mapping[str, float]], trajectory_actions: Mapping[str, Sequence[str]]
) -> dict[str, tuple[str, ...]]:
    """Each query's task sequence: the state-changing actions its relevant trajectories share.

    Raises InvalidInputError naming the query when its relevant trajectories disagree (the
    oracle would be ill-defined), are missing from the corpus or when it has none."""
    sequences: dict[str, tuple[str, ...]] = {}
    problems: list[str] = []
    for qid in sorted(qrels):
        relevant = [doc for doc, rel in qrels[qid].items() if rel > 0]
        missing = [doc for doc in relevant if doc not in trajectory_actions]
        if not relevant:
            problems.append(f"qrels: {qid}: no relevant trajectory, so no task sequence")
            continue
        if missing:
            problems.append(f"qrels: {qid}: relevant trajectories not in the corpus: {', '.join(missing[:5])}")
            continue
        found = {state_changing_actions(trajectory_actions[doc]) for doc in relevant}
        if len(found) > 1:
            shown = "; ".join(" -> ".join(s) for s in sorted(found)[:3])
            problems.append(f"qrels: {qid}: relevant trajectories disagree on the task's actions ({shown})")
            continue
        sequences[qid] = found.pop()
    if problems:
        raise InvalidInputError(problems)
    return sequences


def oracle_success(used: Experience | None, task_sequence: Sequence[str]) -> bool:
    """Did using this experience solve the task? Iff its state-changing actions equal the task's
    (no experience used: failure)."""
    if used is None:
        return False
    return state_changing_actions(step.action for step in used.steps) == tuple(task_sequence)
