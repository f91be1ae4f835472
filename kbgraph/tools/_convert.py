"""Where kbgraph's results become a tool's answer (and a tool's trajectory becomes kbgraph's).

One place for every way in: a retriever's :class:`~kbgraph.search.results.SearchResults` as a
:class:`SearchExperiencesResult` with a one-line explanation per hit, an experience as
:class:`ExperienceDetails` (no embeddings), and a trajectory checked and ingested.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from kbgraph.core.errors import InvalidInputError, validation_problems
from kbgraph.core.models import Experience, Step, Trajectory
from kbgraph.kb import KnowledgeBase
from kbgraph.search.results import SearchHit, SearchResults
from kbgraph.tools._inputs import TrajectoryInput
from kbgraph.tools._views import (MAX_PITFALLS_PER_HIT, MAX_SOURCE_IDS_SHOWN, AddTrajectoryResult, ConceptDocumentHit,
                                  ExperienceDetails, ExperienceHit, PitfallView, SearchExperiencesResult, StepView)


def _explanation(hit: SearchHit) -> str:
    b = hit.breakdown
    parts = [f"semantic {b.semantic:.2f}", f"lexical {b.lexical:.2f}"]
    if b.structural is not None:
        parts.append(f"workflow shape {b.structural:.2f}")
    if b.fine is not None:
        parts.append(f"steps so far {b.fine:.2f} (weight {1 - b.lam:.2f})")
    parts += [f"domain transfer {b.trans:.2f}", f"success {b.success:.2f}"]
    if b.utility is not None:
        parts.append(f"utility {b.utility:.2f}")
    text = "matched on " + ", ".join(parts)
    if hit.path:
        hops = " → ".join(f"{hop.relation.value} ({hop.weight:.2f}) {hop.to_id}" for hop in hit.path)
        text += f"; reached from {hit.seed_id or hit.path[0].from_id} via {hops}"
    return text + f"; final {b.final:.2f}"


def step_view(step: Step) -> StepView:
    return StepView(order=step.order, action=step.action, text=step.text)


def _pitfalls(experience: Experience, limit: int | None = None) -> list[PitfallView]:
    failures = experience.failure_modes if limit is None else experience.failure_modes[:limit]
    return [PitfallView(description=f.description, issue_type=f.issue_type, recovery=f.recovery,
                        step_order=f.step_order) for f in failures]


def search_result(results: SearchResults) -> SearchExperiencesResult:
    hits = [
        ExperienceHit(
            rank=hit.rank, id=hit.id, score=round(hit.score, 4), problem=hit.experience.problem,
            goal=hit.experience.goal, domain=hit.experience.domain, kind=hit.experience.kind,
            success_rate=hit.experience.success_rate,
            steps=[step_view(s) for s in hit.experience.steps],
            pitfalls=_pitfalls(hit.experience, MAX_PITFALLS_PER_HIT), found_by=hit.found_by,
            explanation=_explanation(hit),
        )
        for hit in results.hits
    ]
    concepts = [ConceptDocumentHit(id=c.id, name=c.name, score=round(c.score, 4), document=c.document)
                for c in results.concepts]
    return SearchExperiencesResult(query=results.query, experiences=hits, concepts=concepts,
                                   retrieved_ids=results.ids(), notes=results.notes)


_EMBEDDINGS: Any = {"pg_embedding": True, "structure_embedding": True, "context_embedding": True,
                    "steps": {"__all__": {"embedding"}}, "failure_modes": {"__all__": {"embedding"}}}


def experience_details(experience: Experience, utility: float | None) -> ExperienceDetails:
    fields = experience.model_dump(mode="json", exclude=_EMBEDDINGS)
    fields.update(utility=utility, source_count=len(experience.source_ids),
                  source_ids=experience.source_ids[:MAX_SOURCE_IDS_SHOWN])
    return ExperienceDetails.model_validate(fields)


def read_experience(kb: KnowledgeBase, experience_id: str) -> ExperienceDetails | None:
    """One experience in full with its current utility; None when the namespace has no such id."""
    experience = kb.get(experience_id)
    if experience is None:
        return None
    states = kb.learning_state([experience_id])
    return experience_details(experience, states[0].utility if states else None)


def trajectory_payload(trajectory: TrajectoryInput | dict[str, Any]) -> dict[str, Any]:
    """A trajectory as sent (the same fingerprint as a file line), without an outcome of null."""
    payload = trajectory.model_dump(exclude_unset=True) if isinstance(trajectory, TrajectoryInput) else trajectory
    if payload.get("outcome") is None:
        payload.pop("outcome", None)
    return payload


def parse_trajectory(trajectory: TrajectoryInput | dict[str, Any]) -> Trajectory:
    """The reference model's checks (id pattern, lengths, a task that is not blank …), with
    problems named ``trajectory: field: reason``."""
    try:
        return Trajectory.model_validate(trajectory_payload(trajectory))
    except ValidationError as error:
        raise InvalidInputError(validation_problems("trajectory", error, strip_value_error=True),
                                "invalid trajectory, nothing was written") from None


def ingest_trajectory(kb: KnowledgeBase, trajectory: Trajectory) -> AddTrajectoryResult:
    """Runs the whole ingestion pipeline on one trajectory (:meth:`KnowledgeBase.add_trajectories`,
    so maintenance checkpoints count it), in memory."""
    report = kb.add_trajectories([trajectory])
    # The abstracted experience may have been merged into a look-alike: find the experiences whose
    # provenance names this trajectory.
    return AddTrajectoryResult(trajectory_id=trajectory.id, experience_ids=experiences_holding(kb, trajectory.id),
                               experiences_new=report.experiences_new,
                               already_ingested=report.records_already_ingested > 0, report=report)


def experiences_holding(kb: KnowledgeBase, trajectory_id: str) -> list[str]:
    """The experiences whose provenance names ``trajectory_id`` (after merging with look-alikes)."""
    return [row["id"] for row in kb.gateway.read("experiences_by_source", kb=kb.namespace, source_id=trajectory_id)]
