"""Several agents (DESIGN §5): EDV verification into shared and private banks, and the ability
matrix that says which agent should take a task.

- :func:`apply_votes` (:mod:`kbgraph.votes`, re-exported here) turns a candidate experience and
  the votes of the agents that executed its task into what is stored.
- The ability matrix counts, per agent and domain, the attempts and successes agents report
  through feedback (:mod:`kbgraph.feedback`); :func:`rank_agents` orders agents for a domain by
  their smoothed success rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from kbgraph.utility import ability
from kbgraph.votes import MAX_VOTERS, apply_votes, check_votes, most_common

__all__ = ["MAX_VOTERS", "AbilityCell", "AbilityMatrix", "apply_votes", "check_votes", "most_common"]


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
