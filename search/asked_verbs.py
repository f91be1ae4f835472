"""The operations a request's words name by their verb, and the verb an operation's name has.

"Can I swap it?" names an exchange, "I'd like to send it back" a return, "please call off my
order" a cancellation, whatever MiniLM makes of the words: the verb lexicon of concept
deduplication (:mod:`kbgraph.core.operation_keys`) reads the canonical verb of each word of the ask
in its base form, as a request asks, with a request's everyday words besides ("scrap" → cancel;
phrases such as "send back" and "get rid of" first; a verb after a negation is not asked), and that
of an operation's name in the plain lexicon (``exchange_delivered_order_items`` → exchange;
``commit_and_push`` names no update). The intent match raises an ask's cosine with an operation whose verb the ask names by
``intent.verb_shift`` (kbgraph.search.student.intent). Plain English verbs, the lexicon's. Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache

from kbgraph.core.operation_keys import LOOKUP_VERBS, REQUEST_VERB_PHRASES, operation_key, verb_group

__all__ = ["asked_verbs", "operation_verb"]

_WORD = re.compile(r"[a-z_'’]+")
#: Words that deny the verb after them: "I don't want to change my trip".
_NEGATORS = frozenset("not never no without don't doesn't didn't won't can't cannot dont doesnt didnt wont cant "
                      "don’t doesn’t didn’t won’t can’t".split())


def asked_verbs(ask: str) -> frozenset[str]:
    """The canonical verbs of change the ask asks for ("swap" → exchange, "send back" → return):
    verbs in their base form only, as a request asks ("can I swap", "please cancel", "I want to
    return"); a verb in another form describes what happened ("I booked it this morning", "she is
    opening an account"), and one after a negation is not asked ("I don't want to change my trip")."""
    text = ask.lower()
    for phrase in REQUEST_VERB_PHRASES:  # "send back", "get rid of": one verb each
        text = re.sub(rf"\b{phrase}\b", phrase.replace(" ", "_"), text)
    words = _WORD.findall(text)
    found: set[str] = set()
    for position, word in enumerate(words):
        verb = verb_group(word.replace("_", " "), everyday=True)
        if verb is not None and not _NEGATORS.intersection(words[max(0, position - 3):position]):
            found.add(verb)
    return frozenset(found - LOOKUP_VERBS)


@lru_cache(maxsize=4096)
def operation_verb(operation: str) -> str | None:
    """The canonical verb of an operation's name, or None when the lexicon knows none."""
    key = operation_key(operation.replace("_", " "))
    return key.verb if key is not None and key.verb not in LOOKUP_VERBS else None
