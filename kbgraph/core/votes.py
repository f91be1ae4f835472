"""The EDV vote rules (docs/design.md §5), pure: which votes are valid, and what a candidate experience
becomes under them — unanimous approval → one shared experience; partial → one private copy per
approver (``scope='private'``, ``owner_agent``); none → one ``rejected`` experience, kept for audit
and never retrieved. Votes stay on the nodes (``approved_by``/``rejected_by``).

They sit below the ingestion pipeline (a trajectory may carry its votes) and the agents' learning
(:mod:`kbgraph.learning.agents`, ``kb.add_verified``), which both apply them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbgraph.core.errors import InvalidInputError
from kbgraph.core.models import Experience
from kbgraph.core.utility import Verdict, edv_verdict

__all__ = ["MAX_VOTERS", "apply_votes", "check_votes", "most_common"]

MAX_VOTERS = 100


def check_votes(votes: Mapping[str, Any], where: str = "votes") -> dict[str, bool]:
    """Votes as ``{agent: approved}``; refuses non-boolean votes and blank agent names."""
    problems = []
    if not isinstance(votes, Mapping) or not votes:
        raise InvalidInputError([f"{where}: give at least one agent's vote, as {{agent: true|false}}"])
    if len(votes) > MAX_VOTERS:
        problems.append(f"{where}: at most {MAX_VOTERS} voters, not {len(votes)}")
    for agent, approved in votes.items():
        if not isinstance(agent, str) or not agent.strip() or len(agent) > 200:
            problems.append(f"{where}: agent name {agent!r} must be 1–200 characters")
        if not isinstance(approved, bool):
            problems.append(f"{where}.{agent}: vote must be true or false, not {approved!r}")
    if problems:
        raise InvalidInputError(problems)
    return {agent.strip(): approved for agent, approved in votes.items()}


def apply_votes(experience: Experience, votes: Mapping[str, bool]) -> tuple[Verdict, list[Experience]]:
    """The experiences to store for a candidate and its votes (EDV verify stage)."""
    verdict, approvers = edv_verdict(votes)
    rejected_by = sorted(agent for agent, approved in votes.items() if not approved)
    base = experience.model_dump(exclude={"id"})
    base.update(approved_by=approvers, rejected_by=rejected_by)
    if verdict == "shared":
        return verdict, [Experience.model_validate({**base, "scope": "shared", "owner_agent": None})]
    if verdict == "private":
        return verdict, [Experience.model_validate({**base, "scope": "private", "owner_agent": agent})
                         for agent in approvers]
    return verdict, [Experience.model_validate({**base, "status": "rejected"})]


def most_common(values: Sequence[str]) -> str | None:
    """The most frequent value; among equals, the first one given."""
    return max(dict.fromkeys(values), key=values.count) if values else None
