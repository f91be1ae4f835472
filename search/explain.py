"""A reading of search results a person can follow: why each experience is where it is.

The text quotes stored data (problems, actions, failure descriptions) that agents wrote; it is
returned with control characters and bidi overrides made visible (``\\x1b``, ``\\u202e``), so
printing it anywhere cannot retitle or repaint a terminal.
"""

from __future__ import annotations

from kbgraph.search.results import ScoreBreakdown, SearchHit, SearchResults
from kbgraph.core.terminal import escape_controls

__all__ = ["explain_hit", "explain_results", "explain_score"]


def _f(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def explain_score(b: ScoreBreakdown, alpha: float | None = None, omega: float | None = None) -> list[str]:
    """The score's arithmetic, one line per level of the formula."""
    lines = []
    textual = f"textual {_f(b.textual)} = semantic {_f(b.semantic)} ⊕ lexical {_f(b.lexical)}"
    if alpha is not None:
        textual += f" (α {alpha:g})"
    lines.append(textual)
    coarse = f"coarse {_f(b.coarse)} = textual"
    if b.structural is not None:
        coarse += f" ⊕ structural {_f(b.structural)}" + (f" (ω {omega:g})" if omega is not None else "")
    lines.append(coarse)
    if b.intent is not None and b.asks is not None:
        learnt = (f" (of which {b.intent_learnt:+.3f} from what this memory's requests made)"
                  if b.intent_learnt else "")
        lines.append(f"  ⊕ intent {_f(b.intent)}: what its workflow changes against what the request asks{learnt}")
        lines += [f"    ask “{a.ask[:120]}” → {a.operation} ({a.similarity:.2f})" for a in b.asks]
    if b.fine is not None:
        lines.append(f"stage {_f(b.stage)} = λ {b.lam:.2f} · coarse + (1−λ) · fine {_f(b.fine)}")
    share = f" × share {_f(b.share)}" if abs(b.share - 1.0) >= 0.0005 else ""
    if b.human_asked:
        share += " (hands the task to a human, as the request asked: its successes count in full)"
    elif b.handed_off:
        share += " (hands the task to a human: its successes count at handoff_credit)"
    if b.trans == 0.0:  # transferability itself is never 0: only a step-less record of another domain
        share += " (trans 0: a task of another domain without steps, no way of doing anything here)"
    lines.append(
        f"direct {_f(b.direct)} = stage × trans {_f(b.trans)} × success {_f(b.success)} (with floor){share} "
        f"+ β · support {_f(b.support)}"
    )
    if b.workflow is not None:
        lines.append(f"workflow {_f(b.workflow)} = the score of its best instance that worked (the edge above)")
    if abs(b.utility_factor - 1.0) >= 0.0005 or abs(b.context - 1.0) >= 0.0005:  # visible at 3 decimals
        lines.append(f"  × utility {_f(b.utility_factor)} (utility {_f(b.utility or 0.0)}) "
                     f"× context {_f(b.context)} ({b.outcomes} outcome(s) on tasks like this one)")
    if b.path is not None:
        lines.append(f"path {_f(b.path)} over {b.hops} hop(s) = score(seed) · Π w(edge)·w(type) · δ^hops · trans")
    lines.append(f"final {_f(b.final)}")
    return lines


def explain_hit(hit: SearchHit, alpha: float | None = None, omega: float | None = None) -> str:
    exp = hit.experience
    head = (f"#{hit.rank}  {hit.score:.3f}  {hit.id}  [{exp.domain}] {exp.kind}"
            + (f" · worked in {hit.runs_succeeded} of {hit.runs} run{'s' if hit.runs != 1 else ''}" if hit.runs
               else f" · success {exp.success_rate:.2f}"))
    lines = [head, f"    problem: {exp.problem[:300]}", f"    goal:    {exp.goal[:200]}"]
    w = hit.workflow
    if w is not None and (w.id != hit.id or exp.kind == "abstract"):
        lines.append(f"    workflow: worked in {w.succeeded} of {w.runs} runs over {w.tasks} task{'s' if w.tasks != 1 else ''}")
    if exp.steps:
        actions = [s.action for s in exp.steps]
        shown = " → ".join(actions[:12]) + (" → …" if len(actions) > 12 else "")
        lines.append(f"    steps:   {shown}")
    for failure in exp.failure_modes[:3]:
        lines.append(f"    pitfall: {failure.description[:160]}" + (f" — recovery: {failure.recovery[:200]}" if failure.recovery else ""))
    for attempt in hit.failed_attempts[:3]:
        did = " → ".join(attempt.actions[:8]) + (" → …" if len(attempt.actions) > 8 else "")
        lines.append(f"    failed attempt ({attempt.runs} run{'s' if attempt.runs != 1 else ''} of this task): {did}")
        for what_went_wrong in attempt.failures[:2]:
            lines.append(f"        {what_went_wrong[:220]}")
    lines.append(f"    found by: {', '.join(hit.found_by)}")
    if hit.path:
        chain = hit.seed_id or hit.path[0].from_id
        for hop in hit.path:
            arrow = f"-[{hop.relation.value} {hop.weight:.2f}]->" if hop.direction == "out" else f"<-[{hop.relation.value} {hop.weight:.2f}]-"
            chain += f" {arrow} {hop.to_id}"
        lines.append(f"    path:    {chain}")
    lines += [f"    {line}" for line in explain_score(hit.breakdown, alpha, omega)]
    return escape_controls("\n".join(lines))


def explain_results(results: SearchResults, alpha: float | None = None, omega: float | None = None) -> str:
    parts = [f"query: {results.query[:300]}",
             f"{len(results.hits)} results from {results.candidates} candidates"
             + (f" in {results.timings_ms.get('retrieval', 0):.0f} ms (+ {results.timings_ms.get('embed', 0):.0f} ms embedding)"
                if results.timings_ms else "")]
    if not results.hits:
        parts.append("no experience matched (is the namespace empty, or are the filters too strict?)")
    parts += [explain_hit(hit, alpha, omega) for hit in results.hits]
    if results.concepts:
        parts.append("concept documents:")
        for concept in results.concepts:
            first = next((line for line in concept.document.splitlines() if line.strip().startswith("-")), "")
            parts.append(f"  {concept.score:.3f}  {concept.name} ({concept.experiences} experiences)  {first.strip()[:160]}")
    for note in results.notes:
        parts.append(f"note: {note}")
    return escape_controls("\n".join(parts))
