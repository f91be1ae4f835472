"""Runs that handed the task to a human.

A run that ends by transferring the user to a human agent is graded a success by benchmarks such
as tau-bench whenever nothing had to change, but the agent did not resolve the request: it passed
it on. As a way to follow it is weaker evidence than a run that resolved a task like it, so search
counts such a way's successes at ``handoff_credit`` (a setting, 0.5 by default: half a success) —
in its success factor and in its share of its task's successful runs. A way whose task only
worked by handing off still ranks where it fits; it just no longer outranks, on equal fit, a way
that resolved a task like it. ``handoff_credit = 1`` turns this off.

A handoff is read from the action name: a verb of handing over (transfer, escalate, hand off /
over) and a human party (human, agent, person, support, staff, operator, representative,
supervisor), in that order — ``transfer_to_human_agents``, ``escalate_to_support``; a
``transfer_funds`` is not one. Search reads it here, from the operations the scoring facts return
(evaluated in Cypher, over every candidate's and its task's ways, it took a third of that query's
time);
it keeps to syntax Java's regular expressions read alike, for people who run it in Cypher.

A request may ask for the handoff itself: "I want to talk to a real person", "if you can't sort
that out, put me through to a supervisor". :func:`asks_for_a_human` reads that from the customer's
words (a verb of reaching someone, then a human party); for such a request a way that hands the
task to a human does what was asked: the intent match takes the handoff operations as the answer
to that ask (kbgraph.search.student.intent), and their successes count in full
(:attr:`kbgraph.search.student.context.Run.handoff_credit`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["HANDOFF_PATTERN", "asks_for_a_human", "hands_off", "is_handoff"]

#: Whole-string match, case-insensitive; plain alternations only (read alike by Python and Java).
HANDOFF_PATTERN = (
    "(?i).*(transfer|escalat|hand_?off|hand_?over|handover).*"
    "(human|agent|person|support|staff|operator|representative|supervisor).*"
)
_COMPILED = re.compile(HANDOFF_PATTERN)

# Someone a customer asks to be put through to: a person named as human ("a real person", "a
# human", "a live agent"), a role above the agent ("a supervisor", "your manager"), or, after a
# verb of talking or connecting, anyone ("someone above you", "a person who can").
_QUALIFIED = r"(?:real|live|actual|human)\s+(?:person|people|agent|being|representative|rep)"
_ROLE = r"(?:human|supervisor|manager|representative|operator)s?"
_ANYONE = r"(?:person|someone|somebody|agent|rep)"
_ARTICLE = r"(?:(?:a|an|the|your|some|one\s+of\s+your)\s+)?"
_NAMED = rf"{_ARTICLE}(?:{_QUALIFIED}|{_ROLE})\b"
_PARTY = rf"{_ARTICLE}(?:{_QUALIFIED}|{_ROLE}|{_ANYONE})\b"
_ASKS_FOR_A_HUMAN = re.compile(
    "|".join((
        # "talk to a real person", "speak with someone above you", "chat to a human"
        rf"\b(?:talk|speak|chat)(?:\s+\w+){{0,2}}?\s+(?:to|with)\s+{_PARTY}",
        # "put me through to a supervisor", "connect me with a person who can", "transfer me to a human"
        rf"\b(?:connect|put|transfer|pass|hand|escalate|switch|send)\s+(?:me|us|this|it|my\s+\w+)"
        rf"(?:\s+\w+){{0,2}}?\s+(?:to|with)\s+{_PARTY}",
        # "get me a real person", "I want a human", "I need a supervisor"
        rf"\b(?:get\s+me|want|need|demand|request|ask\s+for)\s+{_NAMED}",
    )),
    re.IGNORECASE,
)


def asks_for_a_human(request: str) -> bool:
    """Whether the customer's words ask to be put through to a human ("I want to talk to a real
    person!", "let me speak to someone above you", "get me a supervisor"): a verb of reaching
    someone followed by a human party. Naming a person is not asking for one ("refer one person",
    "a personal checking account"). Pure English, not any domain's words."""
    return _ASKS_FOR_A_HUMAN.search(request) is not None


@lru_cache(maxsize=16_384)
def is_handoff(action: str) -> bool:
    """Whether ``action`` hands the task to a human (see the module's docstring). Cached: a
    domain has a few dozen tools, while a search reads the operations of thousands of ways, and the
    pattern's leading ``.*`` makes each match cost ~1.5 µs."""
    return _COMPILED.fullmatch(action) is not None


def hands_off(operations: Iterable[str]) -> bool:
    """Whether a way (its state-changing operations) hands the task to a human."""
    return any(is_handoff(op) for op in operations)
