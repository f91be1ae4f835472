"""Deterministic synthetic experiences for round-trip tests and write benchmarks.

Texts are varied enough to give distinct content-hash ids; embeddings are random unit vectors
(float64, as a caller might pass them), so no model runs and writes are measured alone.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np

from kbgraph.core.models import Experience, FailureMode, Relation, RelationType, Step

ACTIONS = [
    "find_user", "get_order_details", "get_product_details", "cancel_pending_order", "return_items",
    "exchange_items", "modify_address", "search_flights", "book_reservation", "update_baggage",
    "open_page", "click", "type_text", "run_tests", "rollback_deploy", "query_sql",
]
DOMAINS = ["retail", "airline", "banking", "web/shopping_admin", "devops", "data_analysis"]
ISSUES = ["item_not_found", "permission_denied", "timeout", "invalid_argument"]


def _unit(rng: np.random.Generator, dim: int) -> list[float]:
    vector = rng.standard_normal(dim)
    return [float(x) for x in vector / np.linalg.norm(vector)]


def synthetic_experiences(
    count: int, steps: int = 8, dimension: int = 384, seed: int = 0, with_embeddings: bool = True
) -> list[Experience]:
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    experiences: list[Experience] = []
    for i in range(count):
        domain = DOMAINS[i % len(DOMAINS)]
        actions = [rnd.choice(ACTIONS) for _ in range(steps)]
        step_list = [
            Step(
                action=action,
                text=f"{action.replace('_', ' ')} for {{entity_{j}}} (case {seed}-{i}-{j})",
                args_schema={"id": "string", "count": "integer"} if j % 2 else {},
                reward=round(rnd.random(), 3),
                issue_type=rnd.choice(ISSUES) if j == 3 and i % 3 == 0 else None,
                resolution_effectiveness=round(rnd.random(), 3) if j == 3 and i % 3 == 0 else None,
                embedding=_unit(rng, dimension) if with_embeddings else None,
            )
            for j, action in enumerate(actions)
        ]
        failures = []
        if i % 2 == 0:
            failures.append(FailureMode(
                description=f"step {3} failed with {ISSUES[i % len(ISSUES)]} on case {seed}-{i}",
                issue_type=ISSUES[i % len(ISSUES)], recovery="looked the entity up again and retried",
                step_order=3, embedding=_unit(rng, dimension) if with_embeddings else None,
            ))
        experiences.append(Experience(
            problem=f"Customer case {seed}-{i}: needs {actions[0].replace('_', ' ')} then {actions[-1].replace('_', ' ')}",
            goal=f"Complete case {seed}-{i} with every change confirmed",
            domain=domain,
            difficulty=rnd.choice(["easy", "medium", "hard"]),
            steps=step_list,
            failure_modes=failures,
            success_rate=round(rnd.random(), 3),
            quality=round(rnd.random(), 3),
            efficiency=round(rnd.random(), 3),
            generalizability=round(rnd.random(), 3),
            retrieved=rnd.randint(5, 20), used=rnd.randint(2, 5), succeeded=rnd.randint(0, 2),
            created_at=start + timedelta(minutes=i),
            last_used_at=start + timedelta(days=1, minutes=i) if i % 2 else None,
            scope="private" if i % 5 == 0 else "shared",
            owner_agent=f"agent-{i % 3}" if i % 5 == 0 else None,
            source="synthetic",
            source_ids=[f"traj-{seed}-{i}"],
            pg_embedding=_unit(rng, dimension) if with_embeddings else None,
            structure_embedding=_unit(rng, dimension) if with_embeddings else None,
            context_embedding=_unit(rng, dimension) if with_embeddings else None,
        ))
    # Relations among them: each experience points at its predecessor (targets are in the batch).
    for i in range(1, count, 4):
        experiences[i].relations.append(Relation(
            type=list(RelationType)[(i // 4) % 4],
            target_id=experiences[i - 1].key, weight=0.5, reason="synthetic",
        ))
    return experiences
