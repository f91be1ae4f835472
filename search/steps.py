"""MAEL step-wise retrieval: the stored steps most like the one an agent is about to take, scored
``α·similarity + (1 − α)·reward`` (docs/design.md §5; α is ``learning.step_alpha``, 0.5 by default).

Rewards come from feedback (:mod:`kbgraph.learning.feedback`, ``step_rewards``): a step that helped ranks
above an equally similar one that hurt. Each agent draws on the shared bank and its own private
bank (per-agent pools). Similarity is the cosine of the step texts (``action: description``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from kbgraph.embedders import Embedder
from kbgraph.core.errors import InvalidInputError
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.search.candidates import FIRST_FACTOR, index_query, nearest
from kbgraph.search.namespace_size import NamespaceSize
from kbgraph.search.params import SearchWeights
from kbgraph.search.scoring import neo4j_to_cosine, step_score
from kbgraph.search.student import StudentRetriever

# Candidates by similarity before the reward re-ranks them: a well-rewarded step a little further
# away must still be in the pool.
POOL_PER_RESULT = 5
MIN_POOL = 50


class StepHit(BaseModel):
    rank: int
    experience_id: str
    problem: str
    domain: str
    scope: str
    owner_agent: str | None = None
    order: int
    action: str
    text: str
    similarity: float = Field(description="Cosine of the step texts, clamped to [0, 1].")
    reward: float | None = Field(default=None, description="Mean reported reward in [-1, 1]; None if never rated.")
    rewards_reported: int = 0
    score: float = Field(description="α·similarity + (1 − α)·reward (reward mapped to [0, 1], unknown = 0.5).")


@dataclass(frozen=True, slots=True)
class StoredStepRow:
    """One stored step a steps search found: a map of the ``rows`` of each query of :data:`QUERIES`."""

    QUERIES: ClassVar[tuple[str, ...]] = ("steps_search", "steps_scan")

    experience_id: str
    problem: str
    domain: str
    scope: str
    owner_agent: str | None
    order: int
    action: str
    text: str | None
    reward: float | None
    reward_count: int | None
    score: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> StoredStepRow:
        r = record
        return cls(r["experience_id"], r["problem"], r["domain"], r["scope"], r["owner_agent"], r["order"],
                   r["action"], r["text"], r["reward"], r["reward_count"], r["score"])


class StepRetriever:
    def __init__(self, gateway: Neo4jGateway, embedder: Embedder, namespace: str, size: NamespaceSize | None = None,
                 weights: SearchWeights | None = None):
        self.gateway = gateway
        self.embedder = embedder
        self.namespace = namespace
        self.size = size or NamespaceSize(gateway, namespace)
        #: When the namespace's steps are scanned exactly: the search settings' exact_scan_max and
        #: overfetch_limit (see kbgraph.search.candidates).
        self.policy = (weights or SearchWeights()).scan

    def search(
        self, action: str, arguments: dict[str, Any] | None = None, *, text: str | None = None,
        domain: str | None = None, agent: str | None = None, k: int = 5, alpha: float,
    ) -> list[StepHit]:
        """The ``k`` stored steps most like ``action`` (with ``arguments`` and ``text``) by
        :func:`~kbgraph.search.scoring.step_score`; ``alpha`` is the caller's setting
        (``learning.step_alpha``), never a default of its own."""
        problems = []
        if not action or not action.strip():
            problems.append("steps search: action: must not be blank")
        if not 1 <= k <= 100:
            problems.append(f"steps search: k: must be between 1 and 100, not {k}")
        if not 0.0 <= alpha <= 1.0:
            problems.append(f"steps search: alpha: must be in [0, 1], not {alpha}")
        if problems:
            raise InvalidInputError(problems)
        vector = self.embedder.embed([StudentRetriever.step_text(action.strip(), arguments or {}, text)])[0].tolist()
        pool = max(k * POOL_PER_RESULT, MIN_POOL)

        filters = {"kb": self.namespace, "vector": vector, "k": pool, "domains": [domain] if domain else None,
                   "agent": agent}

        query = index_query(self.gateway, "steps_search", "step_text_embedding")

        def fetch(n: int) -> tuple[int, list[StoredStepRow]]:
            row = self.gateway.read(query, fetch=n, **filters)[0]
            return int(row["fetched"]), [StoredStepRow.from_record(r) for r in row["rows"]]

        def scan() -> list[StoredStepRow]:  # exact, and the namespace's own
            return [StoredStepRow.from_record(r) for r in self.gateway.read("steps_scan", **filters)[0]["rows"]]

        rows = nearest(self.policy, self.size.get(self.policy.exact_scan_max).steps, pool, scan=scan, fetch=fetch,
                       first=pool * FIRST_FACTOR).rows
        scored = []
        for row in rows:
            similarity = min(max(neo4j_to_cosine(float(row.score)), 0.0), 1.0)
            reward = None if row.reward is None else float(row.reward)
            scored.append((step_score(similarity, reward, alpha), similarity, row))
        scored.sort(key=lambda item: (-item[0], item[2].experience_id, item[2].order))
        return [
            StepHit(rank=i + 1, experience_id=row.experience_id, problem=row.problem, domain=row.domain,
                    scope=row.scope, owner_agent=row.owner_agent, order=int(row.order),
                    action=row.action, text=row.text or "", similarity=round(similarity, 6),
                    reward=None if row.reward is None else float(row.reward),
                    rewards_reported=int(row.reward_count or (0 if row.reward is None else 1)),
                    score=round(score, 6))
            for i, (score, similarity, row) in enumerate(scored[:k])
        ]
