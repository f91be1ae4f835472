"""Workflow shapes: what the structural index, the relations and merging compare.

- the **action shape** is the sequence of tool names (same tools, same order = same workflow);
- the **verb shape** keeps only what each step does (lookup, cancel, update, …), and the
  **operation shape** only its state-changing part, so workflows with different tool vocabularies
  in different domains can still be recognised as the same shape.

Pure functions of tool names, below the store (which stores each experience's operations) and
the ingestion pipeline alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any


# First word of a tool name → what kind of step it is. Unknown verbs stand for themselves.
# Domain vocabulary: written with the ingestion (03e7d78, 2026-11-22) for the tool names of the
# shared trajectories and real runs (τ-bench retail and airline: ``transfer_to_human_agents``; web
# tasks), not measured on another tool set; a domain whose verbs are missing keeps them as their own
# classes (its workflows then match only its own).
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


#: What an agent "opens" by making it (``open_bank_account``, ``open_ticket``), where opening a
#: page, a file or a product shows it (a look-up). This word list and the two below are domain
#: vocabulary, measured on the banking gold runs of the development suite (39539b2, 2026-12-01: 94 of
#: 97 runs with the operations short_banking judges by, 11 before; short_banking .552 → .625).
OPENED_BY_CREATING = frozenset({"account", "accounts", "ticket", "case", "claim", "incident", "dispute", "request",
                                "position", "issue", "deposit", "loan", "subscription", "membership"})
#: Words of an action that checks who or what it deals with (``verify_identity``,
#: ``log_verification``, ``validate_schema``): a check changes nothing the user holds.
CHECK_WORDS = frozenset({"verify", "verification", "validate", "validation", "authenticate", "authentication"})
#: Words of an action on the agent's own toolbox (``unlock_discoverable_agent_tool``,
#: ``give_discoverable_user_tool``): making a tool available changes nothing the user holds.
TOOLBOX_WORDS = frozenset({"tool", "tools"})


def _words(action: str) -> list[str]:
    return action.replace("-", "_").lower().split("_")


@lru_cache(maxsize=65536)  # asked for every step of every experience on every ingest's linking
def verb_of(action: str) -> str:
    words = _words(action)
    if action.lower() not in VERB_CLASSES and words[0] == "open" and OPENED_BY_CREATING.intersection(words[1:]):
        return "create"
    return VERB_CLASSES.get(action.lower(), VERB_CLASSES.get(words[0], words[0]))


@lru_cache(maxsize=65536)
def changes_state(action: str) -> bool:
    """Whether a step of this action changes what the user holds (an operation), as opposed to
    gathering or preparing: a look-up (:func:`verb_of`), a check of identity or input
    (:data:`CHECK_WORDS`), or a step on the agent's own tools (:data:`TOOLBOX_WORDS`; a call
    made *through* a tool wrapper counts as the tool it called, :func:`dispatched_tool`, and one
    whose tool cannot be told stays a call). Runs that did the same things but checked or
    unlocked a different number of times share one workflow."""
    if verb_of(action) == "lookup":
        return False
    words = _words(action)
    if CHECK_WORDS.intersection(words):
        return False
    return not (TOOLBOX_WORDS.intersection(words) and words[0] not in DISPATCH_VERBS)


#: First words of an action that calls another tool by name (``call_discoverable_agent_tool``).
DISPATCH_VERBS = frozenset({"call", "invoke", "use", "run", "execute", "dispatch"})
#: The argument that names the tool called: ``tool``, ``tool_name``, ``agent_tool_name``, ``name``, …
_TOOL_ARGUMENT = re.compile(r"(?:^|_)tool(?:_name)?$|^name$")
#: A tool name that is only a name: letters, digits, ``_ . -``.
_TOOL_NAME = re.compile(r"^[A-Za-z][\w.-]{0,99}$")
#: A numeric suffix names one instance of a tool (``close_debit_card_4721``), not another tool.
_INSTANCE_SUFFIX = re.compile(r"[_-]\d+$")


def dispatched_tool(action: str, arguments: Mapping[str, Any]) -> str | None:
    """The tool a generic call dispatches to, or None when ``action`` is no such call.

    Some agents reach their tools through one wrapper action that names the tool in an argument
    (``call_discoverable_agent_tool(agent_tool_name="close_debit_card_4721", …)``). By the action
    alone, every such run reads "call, call, call" and closing a card equals freezing one; by the
    tool it called, the run has the way it really took. A wrapper is an action whose first word
    calls (:data:`DISPATCH_VERBS`) and which mentions a tool, with one argument naming the tool; a
    numeric suffix (an instance of the tool) is dropped."""
    words = _words(action)
    if words[0] not in DISPATCH_VERBS or "tool" not in words:
        return None
    names = [v for k, v in arguments.items() if _TOOL_ARGUMENT.search(str(k).lower()) and isinstance(v, str)]
    if len(names) != 1 or not _TOOL_NAME.match(names[0].strip()):
        return None
    return _INSTANCE_SUFFIX.sub("", names[0].strip()) or None


def counted_tool(action: str, arguments: Mapping[str, Any]) -> str:
    """The tool a call counts as: the one a wrapper dispatched to (:func:`dispatched_tool`), else
    the action itself."""
    return dispatched_tool(action, arguments) or action


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
    return tuple(a for a in actions if changes_state(a))


def operation_shape(actions: Sequence[str]) -> tuple[str, ...]:
    """The verb shape of the state-changing steps only: lookups are how an agent gathers what it
    needs, which differs between tools and domains; the operations are what carries over."""
    return verb_shape([a for a in actions if changes_state(a)])


#: The intent text of a workflow that changes nothing: it answers from look-ups alone.
NO_CHANGE_TEXT = "answer the question from look-ups, change nothing"


@lru_cache(maxsize=65536)  # asked for every operation of every candidate a request is matched with
def operation_words(action: str) -> str:
    """An operation's name as words: ``exchange_delivered_order_items`` → "exchange delivered order items"."""
    return " ".join(word for word in _words(action) if word)


def intent_text(operations_made: Sequence[str]) -> str:
    """What a workflow changes, in words and in order: its operations (:func:`operations`, repeats
    kept: cancelling two orders is not cancelling one) read as words, "cancel pending order, then
    return delivered order items". It is what a request in the customer's own words is matched with
    (kbgraph.search.student.intent); a workflow of look-ups alone reads :data:`NO_CHANGE_TEXT`."""
    return ", then ".join(operation_words(op) for op in operations_made) or NO_CHANGE_TEXT
