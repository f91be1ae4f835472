"""Workflow shapes: what the structural index, the relations and merging compare.

- the **action shape** is the sequence of tool names (same tools, same order = same workflow);
- the **verb shape** keeps only what each step does (lookup, cancel, update, …), and the
  **operation shape** only its state-changing part, so workflows with different tool vocabularies
  in different domains can still be recognised as the same shape.

Pure functions of tool names, below the store (which stores each experience's operations) and
the ingestion pipeline alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache


# First word of a tool name → what kind of step it is. Unknown verbs stand for themselves.
VERB_CLASSES = {
    **dict.fromkeys(["get", "find", "list", "search", "lookup", "read", "fetch", "query", "check", "calculate",
                     "view", "open", "show", "retrieve", "count", "inspect", "describe", "think"], "lookup"),
    **dict.fromkeys(["cancel", "delete", "remove", "revoke", "close", "freeze", "block", "lock"], "cancel"),
    **dict.fromkeys(["update", "modify", "change", "edit", "set", "rename", "patch", "replace"], "update"),
    **dict.fromkeys(["create", "add", "book", "apply", "open_account", "register", "submit", "order", "new"], "create"),
    **dict.fromkeys(["return", "refund", "exchange", "rollback", "revert", "restore"], "reverse"),
    **dict.fromkeys(["send", "transfer", "pay", "notify", "email", "message", "transfer_to_human_agents"], "send"),
    **dict.fromkeys(["verify", "validate", "authenticate", "confirm", "test", "run"], "verify"),
}


@lru_cache(maxsize=65536)  # asked for every step of every experience on every ingest's linking
def verb_of(action: str) -> str:
    first = action.replace("-", "_").split("_")[0].lower()
    return VERB_CLASSES.get(action.lower(), VERB_CLASSES.get(first, first))


def verb_shape(actions: Sequence[str]) -> tuple[str, ...]:
    """What each step does, consecutive repeats collapsed (two lookups in a row are one lookup)."""
    verbs: list[str] = []
    for action in actions:
        verb = verb_of(action)
        if not verbs or verbs[-1] != verb:
            verbs.append(verb)
    return tuple(verbs)


def is_subsequence(small: Sequence[str], big: Sequence[str]) -> bool:
    """True when every item of ``small`` appears in ``big`` in the same order (gaps allowed)."""
    it = iter(big)
    return all(item in it for item in small)  # ``in`` consumes the iterator up to the match


def operations(actions: Sequence[str]) -> tuple[str, ...]:
    """The state-changing actions, by name, in order (repeats kept): what a run *did*, as opposed to
    what it looked up on the way. Runs of one task differ mostly in their lookups (how many times
    the agent re-read a reservation), so two runs that changed the same things the same way share
    one workflow. ``()`` is the workflow that answers from lookups alone, changing nothing."""
    return tuple(a for a in actions if verb_of(a) != "lookup")


def operation_shape(actions: Sequence[str]) -> tuple[str, ...]:
    """The verb shape of the state-changing steps only: lookups are how an agent gathers what it
    needs, which differs between tools and domains; the operations are what carries over."""
    return verb_shape([a for a in actions if verb_of(a) != "lookup"])
