"""Several agents (DESIGN §5): EDV verification into shared and private banks, and the ability
matrix that says which agent should take a task.

- :func:`apply_votes` turns a candidate experience and the votes of the agents that executed its
  task into what is stored: unanimous approval → one shared experience; partial → one private
  copy per approver (``scope='private'``, ``owner_agent``); none → one ``rejected`` experience,
  kept for audit and never retrieved. Votes stay on the nodes (``approved_by``/``rejected_by``).
- The ability matrix counts, per agent and domain, the attempts and successes agents report
  through feedback (:mod:`kbgraph.feedback`); :func:`rank_agents` orders agents for a domain by
  their smoothed success rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from kbgraph.errors import InvalidInputError
from kbgraph.models import Experience
from kbgraph.utility import Verdict, ability, edv_verdict

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


class AbilityCell(BaseModel):
    agent: str
    domain: str
    attempts: int
    successes: int
    ability: float = Field(description="(successes + 1) / (attempts + 2): the success rate, smoothed.")


class AbilityMatrix(BaseModel):
    """Agent × domain success (EDV): which agent should take a task in a domain."""

    cells: list[AbilityCell] = Field(default_factory=list)

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, Any]]) -> AbilityMatrix:
        return cls(cells=[AbilityCell(agent=r["agent"], domain=r["domain"], attempts=int(r["attempts"]),
                                      successes=int(r["successes"]),
                                      ability=round(ability(int(r["successes"]), int(r["attempts"])), 6))
                          for r in rows])

    @property
    def agents(self) -> list[str]:
        return sorted({c.agent for c in self.cells})

    @property
    def domains(self) -> list[str]:
        return sorted({c.domain for c in self.cells})

    def rank_agents(self, domain: str) -> list[AbilityCell]:
        """Agents with a record in ``domain``, best first (ability, then attempts, then name);
        an agent with no record in the domain is not ranked."""
        cells = [c for c in self.cells if c.domain.casefold() == domain.casefold()]
        return sorted(cells, key=lambda c: (-c.ability, -c.attempts, c.agent))

    def table(self) -> dict[str, dict[str, float]]:
        """``{agent: {domain: ability}}``."""
        out: dict[str, dict[str, float]] = {}
        for c in self.cells:
            out.setdefault(c.agent, {})[c.domain] = c.ability
        return out
