"""The teacher-phase benchmark: "what went wrong at a step like this, and how was it fixed?"

Built leave-one-run-out from the runs of a corpus: every step that errored is a query (its
action, arguments and error, as an agent would hand it to ``refine``), asked of the knowledge base
with that run left out (``exclude_runs``). What counts:

- **nDCG@5 of the failure matches**: the runs the ranked failure matches stand for (a match of
  identical failure modes stands for all their runs, nearest group first), judged relevant when
  the run hit the same error on the same action (the same :func:`error_signature`). Queries whose
  error no other run hit have no relevant run; they are left out of nDCG (and counted).
- **the share of answers whose first recovery is concrete and followed by success**: the first
  failure match is the same error on the same action, and its recovery names a fix (what changed,
  what was called instead, or the agent's reasoning) and that fix went through. Over every query.
  The stricter share where the run then succeeded as well is reported beside it (on the real
  runs most errors happen in runs that later failed for other reasons).

Next to kbgraph, in the same run: **TF-IDF over the failure text** — each errored step of every
other run is a document (``action + error``), and what such a retriever can hand back as the
recovery is the step that came next in that run (a memory without recovery extraction): it is
concrete when that next step is the fix itself (the same call with changed arguments, or
another state-changing call) and went through — and the **oracle**: another run that hit the
same error and recovered from it concretely exists (the best share any system can reach).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel
from sklearn.feature_extraction.text import TfidfVectorizer

from kbgraph.core.errors import InvalidInputError

from kbgraph.ingest.generalise import ids_in_trajectory, names_in_trajectory
from kbgraph.ingest.recovery import error_signature, recovery_after
from kbgraph.core.shapes import verb_of
from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.models import Trajectory
from kbgraph.search.eval.metrics import evaluate
from kbgraph.search.teacher import TeacherRetriever

__all__ = ["TeacherEvalReport", "TeacherQuery", "TeacherSystemScores", "run_teacher_eval", "teacher_queries"]

Progress = Callable[[str, int, int], None]
K = 5


@dataclass(frozen=True)
class TeacherQuery:
    """One errored step of one run."""

    qid: str
    run_id: str
    domain: str
    action: str
    arguments: dict[str, object]
    error: str
    signature: str
    #: Its own recovery: concrete, and the fix went through; and the run then succeeded as well.
    useful: bool
    useful_run: bool
    #: The step right after it is that fix (what a retriever without recovery extraction shows).
    next_is_fix: bool


class TeacherSystemScores(BaseModel):
    system: str
    ndcg: float
    #: Answers whose first recovery is of the same error, concrete, and its fix went through.
    concrete_success: float
    #: The same, and the run then succeeded as well.
    concrete_run_success: float
    evaluated: int
    seconds: float


class TeacherEvalReport(BaseModel):
    corpus: str
    namespace: str
    k: int
    queries: int
    #: Queries whose error another run hit (the ones nDCG is computed over).
    judged: int
    systems: list[TeacherSystemScores]
    #: kbgraph's share minus the oracle's, and minus TF-IDF's.
    kbgraph_minus_oracle: float
    kbgraph_minus_tfidf: float


def _runs(corpus: Path) -> list[Trajectory]:
    runs: list[Trajectory] = []
    for path in sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else [corpus]:
        for record in read_jsonl(path):
            if record.value is not None and "task" in record.value:
                runs.append(Trajectory.model_validate(record.value))
    return runs


def _next_is_fix(run: Trajectory, index: int) -> bool:
    """The step after a failed one is its fix: it went through and is the same call with other
    arguments, or another call that is not a look-up or a thought."""
    if index + 1 >= len(run.steps):
        return False
    failed, after = run.steps[index], run.steps[index + 1]
    if after.error is not None:
        return False
    if after.action == failed.action:
        return after.arguments != failed.arguments
    return verb_of(after.action) != "lookup"


def teacher_queries(runs: Sequence[Trajectory]) -> list[TeacherQuery]:
    """Every errored step of every run, in corpus order."""
    queries: list[TeacherQuery] = []
    for run in runs:
        names, ids = names_in_trajectory(run), ids_in_trajectory(run)
        for index, step in enumerate(run.steps):
            if step.error is None:
                continue
            recovery = recovery_after(run, index, names, ids)
            queries.append(TeacherQuery(
                qid=f"{run.id}#{index}", run_id=run.id, domain=run.domain, action=step.action,
                arguments=dict(step.arguments), error=step.error, signature=error_signature(step.action, step.error),
                useful=recovery.concrete, useful_run=recovery.concrete and recovery.run_succeeded,
                next_is_fix=_next_is_fix(run, index),
            ))
    return queries


def _relevant(queries: Sequence[TeacherQuery]) -> dict[str, dict[str, float]]:
    return {q.qid: {o.run_id: 1.0 for o in queries if o.signature == q.signature and o.run_id != q.run_id}
            for q in queries}


Answers = dict[str, tuple[bool, bool]]  # qid → (useful, useful and the run succeeded)


def _kbgraph(retriever: TeacherRetriever, queries: Sequence[TeacherQuery], on_progress: Progress | None
             ) -> tuple[dict[str, list[str]], Answers]:
    rankings: dict[str, list[str]] = {}
    answers: Answers = {}
    for done, query in enumerate(queries, 1):
        results = retriever.refine([{"action": query.action, "arguments": query.arguments, "error": query.error}],
                                   domain=query.domain, k=K, exclude_runs=[query.run_id])
        ranked = list(dict.fromkeys(r for match in results.failures for r in match.runs if r != query.run_id))
        rankings[query.qid] = ranked[:K]
        first = results.failures[0] if results.failures else None
        useful = bool(first and first.signature == query.signature and first.concrete and first.fix_recovered)
        answers[query.qid] = (useful, useful and bool(first and first.run_succeeded))
        if on_progress is not None:
            on_progress("teacher", done, len(queries))
    return rankings, answers


def _tfidf(queries: Sequence[TeacherQuery]) -> tuple[dict[str, list[str]], Answers]:
    """Each other run's errored steps ranked by TF-IDF cosine of ``action + error``; the answer is
    the first one's recovery."""
    texts = [f"{q.action} {q.error}" for q in queries]
    vectorizer = TfidfVectorizer()
    matrix = vectorizer.fit_transform(texts)
    scores = (matrix @ matrix.T).toarray()
    rankings: dict[str, list[str]] = {}
    answers: Answers = {}
    for i, query in enumerate(queries):
        order = sorted((j for j in range(len(queries)) if queries[j].run_id != query.run_id),
                       key=lambda j: (-scores[i, j], j))
        ranked: list[str] = []
        for j in order:
            if queries[j].run_id not in ranked:
                ranked.append(queries[j].run_id)
        rankings[query.qid] = ranked[:K]
        top = queries[order[0]] if order else None
        useful = top is not None and top.signature == query.signature and top.next_is_fix
        answers[query.qid] = (useful, useful and bool(top and top.useful_run))
    return rankings, answers


def run_teacher_eval(
    retriever: TeacherRetriever, corpus: Path, on_progress: Progress | None = None,
) -> TeacherEvalReport:
    """The teacher benchmark over ``corpus`` (already ingested into the retriever's namespace)."""
    queries = teacher_queries(_runs(corpus))
    if not queries:
        raise InvalidInputError([f"--corpus {corpus}: no step of its runs has an error; the teacher phase asks "
                                 "about errored steps (a step's 'error' field)"], headline="nothing to evaluate")
    relevant = _relevant(queries)
    judged = {qid: rel for qid, rel in relevant.items() if rel}
    systems: list[TeacherSystemScores] = []

    def score(name: str, rankings: dict[str, list[str]], answers: Answers, seconds: float) -> None:
        result = evaluate({q: r for q, r in rankings.items() if q in judged}, judged, K)
        count = max(len(queries), 1)
        systems.append(TeacherSystemScores(
            system=name, ndcg=round(result["ndcg"], 4), evaluated=len(queries), seconds=round(seconds, 2),
            concrete_success=round(sum(a[0] for a in answers.values()) / count, 4),
            concrete_run_success=round(sum(a[1] for a in answers.values()) / count, 4)))

    started = time.perf_counter()
    rankings, answers = _kbgraph(retriever, queries, on_progress)
    score("kbgraph", rankings, answers, time.perf_counter() - started)
    started = time.perf_counter()
    rankings, answers = _tfidf(queries)
    score("tfidf_failure_text", rankings, answers, time.perf_counter() - started)
    # The same ranking with kbgraph's recovery of its first document: what the extraction adds.
    first = {q.qid: next((o for o in queries if o.run_id == (rankings[q.qid] or [""])[0] and o.signature == q.signature), None)
             for q in queries}
    score("tfidf + kbgraph recoveries", rankings,
          {qid: (o is not None and o.useful, o is not None and o.useful_run) for qid, o in first.items()}, 0.0)
    others = {q.qid: [o for o in queries if o.signature == q.signature and o.run_id != q.run_id] for q in queries}
    oracle = {qid: (any(o.useful for o in same), any(o.useful_run for o in same)) for qid, same in others.items()}
    score("oracle", {q: sorted(rel) for q, rel in relevant.items()}, oracle, 0.0)
    by_name = {s.system: s for s in systems}
    return TeacherEvalReport(
        corpus=str(corpus), namespace=retriever.namespace, k=K, queries=len(queries), judged=len(judged),
        systems=systems,
        kbgraph_minus_oracle=round(by_name["kbgraph"].concrete_success - by_name["oracle"].concrete_success, 4),
        kbgraph_minus_tfidf=round(by_name["kbgraph"].concrete_success - by_name["tfidf_failure_text"].concrete_success, 4),
    )
