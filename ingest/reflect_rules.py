"""Which operation a sentence is about: the state-changing verbs it names ("cannot be cancelled" →
cancel) and the action of a run they fit.

The reflector files an agent's rule under the operation it is about, and the audit
(:mod:`kbgraph.audit`) reads a pitfall's operation the same way to check that a skill's pitfalls are
about its own actions. Verbs are read through the operation lexicon of concept deduplication
(:func:`kbgraph.core.operation_keys.operation_key`), with their inflections ("cancelled",
"changing", "books") brought back to the word the lexicon knows. Pure, no state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from kbgraph.core.shapes import changes_state
from kbgraph.core.generalise import humanise_action
from kbgraph.core.operation_keys import LOOKUP_VERBS, operation_key

__all__ = ["LOOKUP_VERBS", "about_actions", "action_verb", "rule_operation", "rule_verb", "verbs_in_order", "verbs_named"]

#: Verbs that name the same change from another side (an upgrade of a cabin is an update).
_SAME_CHANGE = {"upgrade": "update", "downgrade": "update", "add": "update", "remove": "update", "refund": "cancel"}
_WORD = re.compile(r"[a-z]+")
#: The verb a rule's modal governs: "cannot be cancelled", "can only be changed", "must not book".
_GOVERNED = re.compile(r"\b(?:cannot|can't|can not|not|only|must|may|allowed to)\s+(?:not\s+)?(?:be\s+)?([a-z]+)")
_SUFFIXES = (("lled", "l"), ("led", "l"), ("ied", "y"), ("ed", ""), ("ed", "e"), ("ing", ""), ("ing", "e"),
             ("es", ""), ("s", ""))


def _change(verb: str) -> str:
    return _SAME_CHANGE.get(verb, verb)


@lru_cache(maxsize=4096)
def _word_verb(word: str) -> str | None:
    for candidate in (word, *(word[: -len(end)] + add for end, add in _SUFFIXES if word.endswith(end))):
        if len(candidate) < 3:
            continue
        key = operation_key(candidate)
        if key is not None and not key.objects:
            return key.verb
    return None


def verbs_in_order(text: str) -> list[str]:
    """The state-changing operations ``text`` names, as canonical verbs ("cancel", "update"), in
    the order it first names them."""
    verbs = (_word_verb(word) for word in _WORD.findall(text.lower()))
    return list(dict.fromkeys(_change(v) for v in verbs if v is not None and v not in LOOKUP_VERBS))


def verbs_named(text: str) -> frozenset[str]:
    """The state-changing operations ``text`` names (:func:`verbs_in_order`), as a set."""
    return frozenset(verbs_in_order(text))


def action_verb(action: str) -> str | None:
    """The canonical verb of a state-changing action (``cancel_reservation`` → "cancel"); None
    for a look-up."""
    if not changes_state(action):
        return None
    key = operation_key(humanise_action(action))
    return _change(key.verb) if key is not None and key.verb not in LOOKUP_VERBS else None


def rule_verb(rule: str) -> str | None:
    """The operation a rule is about: the verb its "cannot / only / must … be" governs ("it was
    created more than 24 hours ago, so it cannot be canceled due to a change of plans": cancel), or
    else the first it names."""
    for word in _GOVERNED.findall(rule.lower()):
        verb = _word_verb(word)
        if verb is not None and verb not in LOOKUP_VERBS:
            return _change(verb)
    named = verbs_in_order(rule)
    return named[0] if named else None


def rule_operation(rule: str, actions: Sequence[str]) -> str | None:
    """The action a rule stated before ``actions`` (the run's remaining calls) is about: the first
    state change of the operation it is about (:func:`rule_verb`); the first state change when it
    names none; None when the run did not go on to do what it is about, or changes nothing more."""
    changes = [a for a in actions if changes_state(a)]
    verb = rule_verb(rule)
    if verb is None:
        return changes[0] if changes else None
    return next((a for a in changes if action_verb(a) == verb), None)


def about_actions(text: str, actions: Iterable[str]) -> bool:
    """Whether ``text`` names no state change, or one of ``actions``'."""
    named = verbs_named(text)
    return not named or bool(named & {action_verb(a) for a in actions})
