"""A search hit as a plan an agent can follow, and as a LangChain ``Document`` (the plan, with metadata).

The plan is what a model reads: problem, goal, numbered steps, pitfalls with their recoveries,
how often it worked. The metadata holds what code wants: id, kind, domain, score, its breakdown,
the search tool's one-line explanation, the evidence.
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document

from kbgraph.core.models import Experience, FailureMode, Step
from kbgraph.search.results import SearchHit, SearchResults
from kbgraph.tools import MAX_PITFALLS_PER_HIT, evidence_line, search_result


def _step_line(position: int, step: Step) -> str:
    said = step.text.strip()
    return f"{position}. {step.action}" + (f" — {said}" if said and said != step.action else "")


def _pitfall_line(failure: FailureMode, positions: dict[int, int]) -> str:
    where = ""
    if failure.step_order is not None and failure.step_order in positions:
        where = f"at step {positions[failure.step_order]}" + (f" ({failure.action})" if failure.action else "") + ": "
    elif failure.action:
        where = f"at {failure.action}: "
    return f"- {where}{failure.description}" + (f" — recovery: {failure.recovery}" if failure.recovery else "")


def _distinct_pitfalls(failures: list[FailureMode], limit: int) -> list[FailureMode]:
    # Real runs repeat the same failure with the same recovery: once is enough in a plan.
    seen: set[tuple[str, str]] = set()
    kept: list[FailureMode] = []
    for failure in failures:
        if (failure.description, failure.recovery) not in seen:
            seen.add((failure.description, failure.recovery))
            kept.append(failure)
    return kept[:limit]


def experience_plan(hit: SearchHit) -> str:
    """A search hit as a plan an agent can follow: the problem and goal, the steps numbered from 1,
    the known pitfalls with how they were recovered, and how often it worked."""
    exp: Experience = hit.experience
    positions = {step.order: n for n, step in enumerate(exp.steps, start=1) if step.order is not None}
    lines = [f"Problem: {exp.problem}"]
    if exp.goal.strip():
        lines.append(f"Goal: {exp.goal}")
    if exp.steps:
        lines.append("Steps:")
        lines += [_step_line(n, step) for n, step in enumerate(exp.steps, start=1)]
    else:
        lines.append("Steps: none recorded (the task was handled without tool calls).")
    pitfalls = _distinct_pitfalls(exp.failure_modes, MAX_PITFALLS_PER_HIT)
    if pitfalls:
        lines.append("Pitfalls:")
        lines += [_pitfall_line(failure, positions) for failure in pitfalls]
    lines.append(f"Evidence: {evidence_line(hit)}.")
    return "\n".join(lines)


def experience_document(hit: SearchHit, explanation: str) -> Document:
    """One hit as a LangChain ``Document``: the plan as page content, the rest as metadata."""
    exp = hit.experience
    metadata: dict[str, Any] = {
        "id": hit.id,
        "rank": hit.rank,
        "kind": exp.kind,
        "domain": exp.domain,
        "problem": exp.problem,
        "goal": exp.goal,
        "score": hit.score,
        "score_breakdown": hit.breakdown.model_dump(mode="json"),
        "explanation": explanation,
        "found_by": list(hit.found_by),
        "success_rate": exp.success_rate,
        "runs": hit.runs,
        "runs_succeeded": hit.runs_succeeded,
        "workflow": hit.workflow.model_dump(mode="json") if hit.workflow is not None else None,
    }
    return Document(id=hit.id, page_content=experience_plan(hit), metadata=metadata)


def documents_of(results: SearchResults) -> list[Document]:
    views = search_result(results).experiences  # the MCP tool's one-line explanation of each hit
    return [experience_document(hit, view.explanation) for hit, view in zip(results.hits, views, strict=True)]
