"""Several agents (docs/design.md §5): EDV verification into shared and private banks, and the ability
matrix that says which agent should take a task.

- :func:`add_verified` stores candidate experiences according to the votes of the agents that
  executed their task, by the vote rules of :mod:`kbgraph.core.votes` (re-exported here): unanimous
  approval → one shared experience; partial → one private copy per approver; none → one
  ``rejected`` experience, kept for audit and never retrieved.
- The ability matrix counts, per agent and domain, the attempts and successes agents report
  through feedback (:mod:`kbgraph.learning.feedback`); :func:`best_agents` orders agents for a domain by
  their smoothed success rate.

The functions here are the bodies of ``KnowledgeBase.add_verified``, ``ability_matrix`` and
``best_agents``; the façade passes them what they use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from kbgraph.core.errors import InvalidInputError
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.core.models import Experience
from kbgraph.core.utility import ability
from kbgraph.core.votes import MAX_VOTERS, apply_votes, check_votes, most_common
from kbgraph.store.writer import ExperienceWriter

__all__ = [
    "MAX_VOTERS", "AbilityCell", "AbilityMatrix", "VerifiedReport", "ability_matrix", "add_verified", "apply_votes",
    "best_agents", "check_votes", "most_common",
]


class VerifiedReport(BaseModel):
    """What one ``add_verified`` call stored: each candidate's verdict, and the ids written."""

    verdicts: list[str]
    ids: list[str]


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


def add_verified(
    writer: ExperienceWriter, items: Iterable[Experience | Mapping[str, Any]], votes: Mapping[str, bool]
) -> VerifiedReport:
    """EDV verify stage: validates every candidate, applies the votes to each, writes the result."""
    checked = check_votes(votes)
    candidates = writer.validate(items)
    stored: list[Experience] = []
    verdicts: list[str] = []
    for candidate in candidates:
        verdict, experiences = apply_votes(candidate, checked)
        verdicts.append(verdict)
        stored.extend(experiences)
    writer.add(stored)
    return VerifiedReport(verdicts=verdicts, ids=[e.key for e in stored])


def ability_matrix(gateway: Neo4jGateway, namespace: str) -> AbilityMatrix:
    """Agent × domain attempts, successes and smoothed success rate, from reported outcomes."""
    return AbilityMatrix.from_rows(gateway.read("ability_matrix", kb=namespace))


def best_agents(
    gateway: Neo4jGateway, namespace: str, domains_like: Callable[[str], Sequence[str]],
    domain: str | None = None, task: str | None = None,
) -> list[AbilityCell]:
    """Agents for a task, best first: by their record in ``domain``, or — given only the ``task``
    text — in the most common domain of ``domains_like(task)`` (the domains of the experiences
    most like it; search is the façade's, so it is passed in)."""
    if domain is not None and not domain.strip():
        raise InvalidInputError(["domain: empty; give a domain, or leave it out and give a task"])
    if task is not None and not task.strip():
        raise InvalidInputError(["task: empty; give the task's text"])
    if domain is None:
        if not task:
            raise InvalidInputError(["best_agents: give a domain or a task"])
        domain = most_common(domains_like(task))
        if domain is None:
            return []
    return ability_matrix(gateway, namespace).rank_agents(domain)
