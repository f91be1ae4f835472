"""The operation a concept label names, so that deduplication never merges two different ones.

Concept labels of agent runs name operations: "book reservation", "cancel a booking", "return
delivered order items", "not found during get order details". Embeddings put "book reservation"
and "cancel reservation" close (they share a word, and their runs share their look-ups), so
clustering alone merged them. :func:`operation_key` reads the operation from the label — its verb,
through a small lexicon of synonyms (change / modify / edit → update; call off → cancel; send back
→ return), with negations kept apart (unfreeze is not freeze) — and the objects it acts on, with a
few object synonyms (booking → reservation), its head object first. :func:`cannot_link` then says
two labels must stay apart: both name a known operation and the verbs differ (book / cancel,
return / exchange, add / remove, upgrade / downgrade), or the verbs agree but their head objects
differ and neither names the other's (update flights / update baggages; get user details / get
reservation details; but cancel a reservation / call off the flight booking may merge). Labels whose verb
the lexicon does not know are left to the embeddings, as before. Pure, no state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LOOKUP_VERBS", "REQUEST_VERB_PHRASES", "VERB_PHRASES", "OperationKey", "cannot_link", "operation_key", "verb_group"]

_VERB_GROUPS: dict[str, tuple[str, ...]] = {
    "book": ("book", "reserve"),
    "buy": ("buy", "purchase"),
    "cancel": ("cancel", "void", "annul", "call off", "cancellation"),
    "return": ("return", "send back", "give back"),
    "exchange": ("exchange", "swap", "trade in"),
    "update": ("update", "modify", "change", "edit", "alter", "amend", "adjust", "rename", "move", "reschedule",
               "switch", "rebook"),
    "get": ("get", "look up", "lookup", "look", "fetch", "find", "retrieve", "check", "view", "search", "list", "read",
            "show", "query", "inspect", "see", "obtain"),
    "add": ("add", "insert", "include", "attach"),
    "remove": ("remove", "delete", "drop", "detach", "take off", "take"),
    "freeze": ("freeze", "block", "lock", "suspend", "disable", "deactivate"),
    "unfreeze": ("unfreeze", "unblock", "unlock", "unsuspend", "enable", "reactivate", "activate"),
    "upgrade": ("upgrade",),
    "downgrade": ("downgrade",),
    "transfer": ("transfer", "escalate", "hand over", "hand off", "handoff"),
    "send": ("send", "notify", "message", "give", "grant", "issue"),
    "refund": ("refund", "reimburse"),
    "pay": ("pay", "charge"),
    "verify": ("verify", "authenticate", "confirm", "validate", "log verification"),
    "apply": ("apply",),
    "submit": ("submit", "file"),
    "open": ("open", "create"),
    "close": ("close",),
    "calculate": ("calculate", "compute"),
    "request": ("request", "process", "handle", "initiate"),
    "think": ("think",),
}
#: How a customer says some of them in everyday words ("scrap it", "push my flight back a day",
#: "bump up my cabin"). Read in a request only (:func:`verb_group` with ``everyday``): a tool or a
#: concept named with these words means them literally (``commit_and_push`` pushes, "To Kill a
#: Mockingbird" is a title), so labels, action names and the tasks a skill quotes never read them.
#: Chosen from development requests that asked with them and failed (docs/search.md, "Everyday
#: verbs of cancelling, closing and moving").
_EVERYDAY_GROUPS: dict[str, tuple[str, ...]] = {
    "cancel": ("scrap", "ditch", "nix", "kill", "get rid of"),
    "update": ("shift", "push", "postpone"),
    "upgrade": ("bump up",),
    "close": ("shut",),
}
_VERBS = {word: group for group, words in _VERB_GROUPS.items() for word in words}
_EVERYDAY = {word: group for group, words in _EVERYDAY_GROUPS.items() for word in words}
_PHRASES = sorted((w for w in _VERBS if " " in w), key=lambda w: -len(w))
#: The verbs of several words ("call off", "send back", "look up"), longest first.
VERB_PHRASES: tuple[str, ...] = tuple(_PHRASES)
#: The same with a request's everyday phrases ("get rid of", "bump up"), longest first.
REQUEST_VERB_PHRASES: tuple[str, ...] = tuple(sorted((*_PHRASES, *(w for w in _EVERYDAY if " " in w)),
                                                     key=lambda w: -len(w)))
#: Operation verbs that change nothing: a sentence naming only these is about no state change.
LOOKUP_VERBS = frozenset({"get", "verify", "think", "calculate", "request"})


def verb_group(word: str, everyday: bool = False) -> str | None:
    """The canonical verb of ``word`` as the lexicon has it (base forms and :data:`VERB_PHRASES`:
    "swap" → exchange, "send back" → return), or None; no inflection, no negating prefix.
    ``everyday``: ``word`` is a request's, which may also say it in everyday words ("scrap" →
    cancel, :data:`REQUEST_VERB_PHRASES`)."""
    verb = _VERBS.get(word)
    return _EVERYDAY.get(word) if verb is None and everyday else verb
# A negating prefix makes another operation (unfreeze, delist), unless the lexicon names it.
_NEGATIONS = ("un", "dis", "de")
_OBJECT_SYNONYMS = {"booking": "reservation", "bookings": "reservation", "reservations": "reservation",
                    "product": "item", "products": "item", "items": "item", "bags": "baggage", "bag": "baggage",
                    "baggages": "baggage", "luggage": "baggage", "suitcase": "baggage", "suitcases": "baggage",
                    "flights": "flight", "trip": "flight", "orders": "order", "purchase": "order",
                    "customer": "user", "client": "user", "profile": "user", "representative": "agent",
                    "cost": "price", "costs": "price",
                    "passengers": "passenger", "traveller": "passenger", "traveler": "passenger",
                    "cards": "card", "accounts": "account", "dates": "date", "seats": "seat", "agents": "agent",
                    "addresses": "address", "certificates": "certificate", "payments": "payment"}
#: Words that name no object of their own.
_VAGUE = frozenset({"a", "an", "the", "to", "of", "for", "on", "in", "with", "and", "or", "by", "from", "its", "their",
                    "his", "her", "my", "your", "details", "detail", "info", "information", "data", "it", "them",
                    "all", "one", "some", "new", "existing", "request", "via", "using", "up", "back", "off",
                    "during", "after", "before", "when", "if", "is", "are", "be", "that", "this", "method", "methods", "of",
                    "type", "status", "first", "then", "now", "again", "who", "what", "where", "how", "which",
                    "s"})
#: Verbs that name one operation from two sides, so their labels may share a meta-concept: checking
#: and verifying; adding to or removing from something and updating it; applying and opening or
#: submitting; a return and its refund.
_COMPATIBLE = frozenset(frozenset(pair) for pair in (
    ("get", "verify"), ("add", "update"), ("remove", "update"), ("apply", "open"), ("apply", "submit"),
    ("return", "refund"),
))
_PREPOSITIONS = frozenset({"of", "to", "for", "with", "on", "in", "from", "at", "by", "via", "into", "off", "onto"})


@dataclass(frozen=True)
class OperationKey:
    """The canonical verb of a label, the objects it names (possibly none) and its head object: the
    last one named ("update reservation **flights**", "call off the flight **booking**"), or the
    one before "of" ("change the **flights** of a reservation")."""

    verb: str
    objects: frozenset[str]
    head: str | None = None


def _verb_of(word: str) -> str | None:
    if word in _VERBS:
        return _VERBS[word]
    for prefix in _NEGATIONS:
        if word.startswith(prefix) and word[len(prefix):] in _VERBS:
            return f"{prefix}-{_VERBS[word[len(prefix):]]}"
    return None


def operation_key(label: str) -> OperationKey | None:
    """The operation ``label`` names, or None when its verb is not one the lexicon knows.

    "<issue> during <action>" labels name the action's operation; action names
    (``book_reservation``) read as words."""
    text = label.lower().replace("e-mail", "email").replace("_", " ").replace("-", " ")
    if " during " in text:
        text = text.split(" during ", 1)[1]
    for phrase in _PHRASES:  # "call off", "send back", "look up": one verb each
        text = re.sub(rf"\b{phrase}\b", phrase.replace(" ", "_"), text)
    words = [w.replace("_", " ") for w in re.findall(r"[a-z0-9_]+", text)]
    found: list[tuple[int, str]] = []
    for position, word in enumerate(words):
        verb = _VERBS.get(word) if " " in word else _verb_of(word)
        if verb is not None:
            found.append((position, verb))
    # "request a transfer", "process a return": a general verb gives way to the operation after it.
    if len(found) > 1 and found[0][1] == "request":
        found = found[1:]
    for position, verb in found:
        after = words[position + 1:]
        # The head is the last object named before a preposition: "change the *flights* of a
        # reservation", "move a *reservation* to another date".
        cut = next((i for i, w in enumerate(after) if w in _PREPOSITIONS), len(after))
        head_words = after[:cut]
        named = [_OBJECT_SYNONYMS.get(w, w) for w in after if w not in _VAGUE and not w.isdigit() and _verb_of(w) is None]
        heads = [_OBJECT_SYNONYMS.get(w, w) for w in head_words if w not in _VAGUE and not w.isdigit()
                 and _verb_of(w) is None]
        return OperationKey(verb, frozenset(named), heads[-1] if heads else (named[-1] if named else None))
    return None


def cannot_link(a: OperationKey | None, b: OperationKey | None) -> bool:
    """Two labels that must never share a meta-concept: both name a known operation, and either
    the verbs differ (unless they name one operation from two sides, :data:`_COMPATIBLE`), or the
    heads differ on the same thing — they share another object, and
    neither head is among the other's objects ("update reservation flights" / "update reservation
    baggages"; but "book a reservation" / "book a flight" may merge: different words are not
    different things unless the labels name the same thing around them)."""
    if a is None or b is None:
        return False
    if a.verb != b.verb:
        return frozenset((a.verb, b.verb)) not in _COMPATIBLE
    if a.head is None or b.head is None or a.head == b.head:
        return False
    shared = (a.objects - {a.head}) & (b.objects - {b.head})
    return bool(shared) and a.head not in b.objects and b.head not in a.objects
