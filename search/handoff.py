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
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["HANDOFF_PATTERN", "hands_off", "is_handoff"]

#: Whole-string match, case-insensitive; plain alternations only (read alike by Python and Java).
HANDOFF_PATTERN = (
    "(?i).*(transfer|escalat|hand_?off|hand_?over|handover).*"
    "(human|agent|person|support|staff|operator|representative|supervisor).*"
)
_COMPILED = re.compile(HANDOFF_PATTERN)


@lru_cache(maxsize=16_384)
def is_handoff(action: str) -> bool:
    """Whether ``action`` hands the task to a human (see the module's docstring). Cached: a
    domain has a few dozen tools, while a search reads the operations of thousands of ways, and the
    pattern's leading ``.*`` makes each match cost ~1.5 µs."""
    return _COMPILED.fullmatch(action) is not None


def hands_off(operations: Iterable[str]) -> bool:
    """Whether a way (its state-changing operations) hands the task to a human."""
    return any(is_handoff(op) for op in operations)
