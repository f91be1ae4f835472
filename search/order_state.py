"""The state a request says its object is in, and the state an operation needs it in.

Operations of shops name the state of the order they act on: ``exchange_delivered_order_items``,
``modify_pending_order_items``. Customers say it in other words: "the kettle I got", "the boots
came in size 10", "the grill that hasn't shipped yet", "before it leaves". MiniLM does not join
"came" to "delivered", so "the dumbbells that came are too heavy, can I get the 30-50 lb ones?"
matched ``modify_pending_order_items`` as well as the exchange. :func:`stated_states` reads the
states an ask states; :func:`operation_state` the state an operation's name needs. The intent
match moves an ask's cosine with an operation by ``intent.state_shift`` towards the operations of the
state it states and away from those of the other (kbgraph.search.student.intent).

The words are the order's life in English (delivered: received, got, arrived, came; pending: not
shipped yet, before it leaves): a domain's vocabulary, measured on the retail development sets
(short_retail, composite, intent_retail). Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["STATES", "operation_state", "stated_states"]

#: What each state is called in operations' names, and how a customer says it.
_SAID = {
    "delivered": re.compile(
        r"\b(?:received|arrived|came|got|delivered|showed up|turned up)\b", re.IGNORECASE),
    "pending": re.compile(
        r"\b(?:has\s*n[o']?t|has not|have\s*n[o']?t|have not|not|not yet|yet to)\s+(?:yet\s+)?(?:been\s+)?"
        r"(?:shipped|ship|gone out|left|been sent|sent)\b"
        r"|\bbefore it (?:ships|leaves|goes out)\b|\bstill (?:pending|processing)\b|\bpending\b|\bopen order\b",
        re.IGNORECASE),
}
STATES = tuple(_SAID)


def stated_states(ask: str) -> frozenset[str]:
    """The states :data:`STATES` the ask says its object is in (none, one or, for an ask about two
    objects, both)."""
    return frozenset(state for state, said in _SAID.items() if said.search(ask))


@lru_cache(maxsize=4096)
def operation_state(operation: str) -> str | None:
    """The state an operation's name needs its object in (``return_delivered_order_items`` →
    "delivered"), or None when it names none of :data:`STATES`."""
    words = set(re.split(r"[^a-z]+", operation.lower()))
    named = [state for state in STATES if state in words]
    return named[0] if len(named) == 1 else None
