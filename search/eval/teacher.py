"""The teacher-phase benchmark: "what went wrong at a step like this, and how was it fixed?"

Every step that errored is a query (its action, arguments and error, as an agent would hand it to
``refine``), asked of the knowledge base with its own run left out (``exclude_runs``). With a
``split``, the tasks of the corpus (in order of first appearance) are halved: the runs of the
tasks at even positions are the memory and the errored steps of the others the queries
(``split="even"``), or the reverse (``"odd"``); every query then leaves out every run of its half,
so no figure can lean on a run of the task asked about. What counts:

- **nDCG@5 of the failure matches**: the runs the ranked failure matches stand for (a match of
  identical failure modes stands for all their runs, in order), judged relevant when the run hit
  an error of the same **error class** (:func:`~kbgraph.search.teacher.error_class`: the same
  error, values masked, on any action). Queries whose class no memory run hit have no relevant
  run; they are left out of nDCG (and counted).
- Of the **first** failure match, over every query: **same** — it is of the query's error class;
  **good** — and its run then reached its goal, whatever form its recovery took (a retry, another
  tool, a look-up, a handover): what an agent needs is what the runs that then succeeded did next;
  **concrete** — a second fact: same class, and its recovery names a fix (what changed, what was
  called instead, or the agent's reasoning) that went through, whether or not the run succeeded.
- **Per error class**: kbgraph's good next to the oracle's over the queries of each class, and the
  classes where good < oracle by name (``short_classes``).

Next to kbgraph, in the same run: **TF-IDF over the failure text** — each errored step of every
memory run is a document (``action + error``), and what such a retriever can hand back as the
recovery is the step that came next in that run (a memory without recovery extraction): it is
concrete when that next step is the fix itself (the same call with changed arguments, or
another state-changing call) and went through; **TF-IDF + kbgraph recoveries**, the same first
document with kbgraph's recovery of it — and the **oracle**: whether a memory run hit the same
error class at all, with a concrete recovery, and with one from a run that then succeeded (the
best share any system can reach): whether a memory run hit the same error class at all, with a
concrete recovery that went through, and then reached its goal.

The phase goes through the evaluation pipeline (kbgraph.search.eval.pipeline) like every other
set: its queries (the errored steps, one part over the corpus's namespace, opened by
:func:`run_teacher_phase` through the pipeline's opener: built, or checked and reused) are ranked
by kbgraph's ``refine`` over that namespace and by the three systems above, each ranking is
evaluated by the pipeline's nDCG, and each system's row is the pipeline's
:class:`~kbgraph.search.eval.report.SystemScores`. What is the phase's own is what its systems
answer besides a ranking: the facts of each query's first failure match, whose shares are its
figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol
from pathlib import Path

from pydantic import BaseModel

from kbgraph.core.errors import InvalidInputError

from kbgraph.core.run_identities import ids_in_trajectory, names_in_trajectory
from kbgraph.core.recovery import recovery_after, signed_error
from kbgraph.core.shapes import changes_state
from kbgraph.core.jsonl import read_jsonl
from kbgraph.core.models import Trajectory
from kbgraph.core.settings import Settings
from kbgraph.embedders import Embedder
from kbgraph.search.eval.cached_namespace import BuildingKb
from kbgraph.search.eval.pipeline import BaselineSystem, CorpusPart, EvalSet, KbgraphSystem, Progress, Ranked, Systems, run_set
from kbgraph.search.eval.report import SystemScores
from kbgraph.search.student import StudentRetriever
from kbgraph.search.teacher import TeacherRetriever, error_class

__all__ = ["SPLITS", "ClassScore", "Split", "TeacherEvalReport", "TeacherKb", "TeacherQuery", "memory_runs",
           "run_teacher_eval", "run_teacher_phase", "class_scores", "teacher_queries"]

K = 5


Split = Literal["even", "odd"]
SPLITS: tuple[Split, ...] = ("even", "odd")


@dataclass(frozen=True)
class TeacherQuery:
    """One errored step of one run."""

    qid: str
    run_id: str
    task: str
    domain: str
    action: str
    arguments: dict[str, object]
    error: str
    signature: str
    error_class: str | None
    run_succeeded: bool
    #: Its own recovery: concrete, and the fix went through.
    useful: bool
    #: The step right after it is that fix (what a retriever without recovery extraction shows).
    next_is_fix: bool

    def same_class(self, other_class: str | None) -> bool:
        return self.error_class is not None and other_class == self.error_class


class ClassScore(BaseModel):
    """One error class of the queries: how many asked, and how many first matches were good for
    kbgraph and for the oracle."""

    error_class: str
    queries: int
    good: int
    oracle: int


class TeacherEvalReport(BaseModel):
    corpus: str
    namespace: str
    k: int
    #: None: leave one run out; "even"/"odd": the runs of those tasks are the memory.
    split: Split | None = None
    memory_runs: int
    queries: int
    #: Queries whose error class a memory run hit too (the ones nDCG is computed over).
    judged: int
    systems: list[SystemScores]
    #: kbgraph's "good" share minus the oracle's, and minus TF-IDF's.
    kbgraph_minus_oracle: float
    kbgraph_minus_tfidf: float
    #: Per error class of the queries: kbgraph's good next to the oracle's.
    classes: list[ClassScore] = []
    #: The classes where kbgraph's good is below the oracle's, by name.
    short_classes: list[str] = []


class TeacherKb(BuildingKb, Protocol):
    """What the teacher phase needs of an open knowledge base: to build (or check) its namespace,
    and what a TeacherRetriever over it is made of."""

    @property
    def namespace(self) -> str: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def student(self) -> StudentRetriever: ...
    @property
    def settings(self) -> Settings: ...


def _files(corpus: Path) -> list[Path]:
    """The corpus's files, in the order they are ingested and read."""
    return sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else [corpus]


def _runs(corpus: Path) -> list[Trajectory]:
    runs: list[Trajectory] = []
    for path in _files(corpus):
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
    return changes_state(after.action)


def teacher_queries(runs: Sequence[Trajectory]) -> list[TeacherQuery]:
    """Every errored step of every run, in corpus order."""
    queries: list[TeacherQuery] = []
    for run in runs:
        names, ids = names_in_trajectory(run), ids_in_trajectory(run)
        for index, step in enumerate(run.steps):
            if step.error is None:
                continue
            recovery = recovery_after(run, index, names, ids)
            signed = signed_error(step.action, step.error, step.arguments)
            queries.append(TeacherQuery(
                qid=f"{run.id}#{index}", run_id=run.id, task=run.task, domain=run.domain, action=step.action,
                arguments=dict(step.arguments), error=step.error, signature=signed.key,
                error_class=error_class(signed), run_succeeded=run.outcome.success,
                useful=recovery.concrete,
                next_is_fix=_next_is_fix(run, index),
            ))
    return queries


def memory_runs(runs: Sequence[Trajectory], split: Split | None) -> set[str]:
    """The runs a query may be answered from (besides leaving its own out): all of them, or those
    of the tasks at even (``"even"``) or odd (``"odd"``) positions in order of first appearance."""
    if split is None:
        return {run.id for run in runs}
    if split not in SPLITS:
        raise InvalidInputError([f"split {split!r}: must be one of {', '.join(SPLITS)}, or none"])
    position = {task: i for i, task in enumerate(dict.fromkeys(run.task for run in runs))}
    return {run.id for run in runs if position[run.task] % 2 == SPLITS.index(split)}


#: qid → the facts of its answer: "same_class" (its first failure match is of the query's error
#: class), "good" (… and its run then reached its goal), "concrete_success" (… and its recovery is
#: concrete and went through); the pipeline's shares of them are the report's figures.
Answers = dict[str, dict[str, bool]]
#: qid → the errored steps of the memory it may be answered from (its own run left out)
Memory = dict[str, list[TeacherQuery]]
TeacherPart = CorpusPart[TeacherQuery]

_NO_MATCH = {"same_class": False, "good": False, "concrete_success": False}


def _answer(query: TeacherQuery, cls: str | None, concrete: bool, run_succeeded: bool) -> dict[str, bool]:
    same = query.same_class(cls)
    return {"same_class": same, "good": same and run_succeeded, "concrete_success": same and concrete}


def _kbgraph(retriever: TeacherRetriever, queries: Sequence[TeacherQuery], left_out: Sequence[str],
             on_progress: Progress | None) -> Ranked:
    rankings: dict[str, list[str]] = {}
    answers: Answers = {}
    for done, query in enumerate(queries, 1):
        results = retriever.refine([{"action": query.action, "arguments": query.arguments, "error": query.error}],
                                   domain=query.domain, k=K, exclude_runs=[query.run_id, *left_out])
        ranked = list(dict.fromkeys(r for match in results.failures for r in match.runs if r != query.run_id))
        rankings[query.qid] = ranked[:K]
        first = results.failures[0] if results.failures else None
        answers[query.qid] = (_answer(query, first.error_class, bool(first.concrete and first.fix_recovered),
                                      bool(first.run_succeeded)) if first else dict(_NO_MATCH))
        if on_progress is not None:
            on_progress("teacher", done, len(queries))
    return Ranked(rankings, answers)


class _FailureText:
    """TF-IDF over the failure texts: each memory errored step ranked by TF-IDF cosine of ``action +
    error``; the answer is the first one's next step (:meth:`next_step`), or kbgraph's recovery of
    that first one (:meth:`kbgraph_recovery`). Ranked once, on the first ask."""

    def __init__(self, memory: Memory):
        self.memory = memory
        self._top: dict[str, TeacherQuery | None] | None = None
        self._rankings: dict[str, list[str]] = {}

    def next_step(self, part: TeacherPart) -> Ranked:
        return self._answered(part, lambda top: top.next_is_fix)

    def kbgraph_recovery(self, part: TeacherPart) -> Ranked:
        return self._answered(part, lambda top: top.useful)

    def _answered(self, part: TeacherPart, concrete: Callable[[TeacherQuery], bool]) -> Ranked:
        """The rankings, each query answered by its first document, whose recovery is ``concrete``."""
        top = self._ranked(part.queries)
        return Ranked(dict(self._rankings), {q.qid: _answer(q, t.error_class, concrete(t), t.run_succeeded)
                                             if (t := top[q.qid]) else dict(_NO_MATCH) for q in part.queries})

    def _ranked(self, queries: Sequence[TeacherQuery]) -> dict[str, TeacherQuery | None]:
        if self._top is not None:
            return self._top
        memory = self.memory
        steps = list({o.qid: o for o in [*queries, *(o for m in memory.values() for o in m)]}.values())
        row = {o.qid: i for i, o in enumerate(steps)}
        from sklearn.feature_extraction.text import TfidfVectorizer  # here: scikit-learn takes seconds to import

        matrix = TfidfVectorizer().fit_transform([f"{o.action} {o.error}" for o in steps])
        scores = (matrix @ matrix.T).toarray()
        self._top = {}
        for query in queries:
            i = row[query.qid]
            order = sorted(memory[query.qid], key=lambda o: (-scores[i, row[o.qid]], row[o.qid]))
            self._rankings[query.qid] = list(dict.fromkeys(o.run_id for o in order))[:K]
            self._top[query.qid] = order[0] if order else None
        return self._top


def class_scores(queries: Sequence[TeacherQuery], answers: Mapping[str, Mapping[str, bool]],
                 oracle: Mapping[str, Mapping[str, bool]]) -> list[ClassScore]:
    """Per error class of ``queries`` (a query without a class under ``"(no class)"``): how many
    asked, how many of ``answers`` and of ``oracle`` were good; the classes furthest below the
    oracle first, then by name."""
    by_class: dict[str, list[str]] = {}
    for query in queries:
        by_class.setdefault(query.error_class or "(no class)", []).append(query.qid)
    scores = [ClassScore(error_class=cls, queries=len(qids), good=sum(answers[q]["good"] for q in qids),
                         oracle=sum(oracle[q]["good"] for q in qids)) for cls, qids in by_class.items()]
    return sorted(scores, key=lambda c: (c.good - c.oracle, c.error_class))


@dataclass(frozen=True)
class _TeacherSet:
    """The phase's set over a corpus: its errored steps as queries (one part), judged by error class,
    and the systems that answer them."""

    eval_set: EvalSet[TeacherQuery]
    systems: Systems[TeacherQuery, TeacherRetriever]
    memory_runs: int


def _teacher_set(corpus: Path, namespace: str, split: Split | None, on_progress: Progress | None) -> _TeacherSet:
    runs = _runs(corpus)
    remembered = memory_runs(runs, split)
    steps = teacher_queries(runs)
    queries = [q for q in steps if split is None or q.run_id not in remembered]
    if not queries:
        raise InvalidInputError([f"--corpus {corpus}: no step of its runs has an error; the teacher phase asks "
                                 "about errored steps (a step's 'error' field)" if not steps else
                                 f"--corpus {corpus}: no errored step in the runs left for queries by split {split}"],
                                headline="nothing to evaluate")
    left_out = sorted({run.id for run in runs} - remembered)
    memory: Memory = {q.qid: [o for o in steps if o.run_id in remembered and o.run_id != q.run_id] for q in queries}
    relevant = {q.qid: {o.run_id: 1.0 for o in memory[q.qid] if q.same_class(o.error_class)} for q in queries}

    def oracle(part: TeacherPart) -> Ranked:
        """Whether a memory run hit the query's error class at all; one of them then reached its
        goal; one recovered concretely (the best share any system can reach)."""
        answers: Answers = {}
        for query in part.queries:
            same = [o for o in memory[query.qid] if query.same_class(o.error_class)]
            answers[query.qid] = {"same_class": bool(same), "good": any(o.run_succeeded for o in same),
                                  "concrete_success": any(o.useful for o in same)}
        return Ranked({q.qid: sorted(relevant[q.qid]) for q in part.queries}, answers)

    failure_text = _FailureText(memory)
    systems: Systems[TeacherQuery, TeacherRetriever] = Systems(
        (KbgraphSystem("kbgraph", lambda retriever, part, done: _kbgraph(retriever, part.queries, left_out, on_progress)),),
        (BaselineSystem("tfidf_failure_text", failure_text.next_step),
         # The same ranking with kbgraph's recovery of its first document: what the extraction adds.
         BaselineSystem("tfidf + kbgraph recoveries", failure_text.kbgraph_recovery),
         BaselineSystem("oracle", oracle)))
    part = CorpusPart(namespace, tuple(_files(corpus)), tuple(queries))
    return _TeacherSet(EvalSet("teacher", (part,), relevant, measures=("ndcg",)), systems, len(remembered))


def _run(corpus: Path, namespace: str, open_retriever: Callable[[TeacherPart], AbstractContextManager[TeacherRetriever]],
         on_progress: Progress | None, split: Split | None) -> TeacherEvalReport:
    """The phase over ``corpus`` in ``namespace``, through the evaluation pipeline."""
    teacher = _teacher_set(corpus, namespace, split, on_progress)
    run = run_set(teacher.eval_set, teacher.systems, open_retriever, K, on_progress)
    systems = [SystemScores.of(run, name) for name in teacher.systems.names()]
    by_name = {s.system: s for s in systems}
    (part,) = teacher.eval_set.parts
    classes = class_scores(part.queries, run.facts["kbgraph"], run.facts["oracle"])
    ours, oracle, tfidf = by_name["kbgraph"].good or 0.0, by_name["oracle"].good or 0.0, by_name["tfidf_failure_text"].good or 0.0
    return TeacherEvalReport(
        corpus=str(corpus), namespace=namespace, k=K, split=split, memory_runs=teacher.memory_runs,
        queries=len(part.queries), judged=sum(1 for rel in teacher.eval_set.qrels.values() if rel), systems=systems,
        kbgraph_minus_oracle=round(ours - oracle, 4), kbgraph_minus_tfidf=round(ours - tfidf, 4),
        classes=classes, short_classes=[c.error_class for c in classes if c.good < c.oracle],
    )


def run_teacher_eval(
    retriever: TeacherRetriever, corpus: Path, on_progress: Progress | None = None, split: Split | None = None,
) -> TeacherEvalReport:
    """The teacher benchmark over ``corpus`` (already ingested into the retriever's namespace),
    leave-one-run-out, or over a ``split`` of its tasks (module docstring)."""

    @contextmanager
    def opened(part: TeacherPart) -> Iterator[TeacherRetriever]:
        yield retriever

    return _run(corpus, retriever.namespace, opened, on_progress, split)


def run_teacher_phase(
    open_ready: Callable[[TeacherPart], AbstractContextManager[TeacherKb]], corpus: Path, namespace: str,
    on_progress: Progress | None = None, split: Split | None = None,
) -> TeacherEvalReport:
    """The teacher benchmark over ``corpus`` in ``namespace``, opened with ``open_ready`` (the
    pipeline's :func:`~kbgraph.search.eval.pipeline.ready_opener`: built from the corpus, or checked
    and reused); see :func:`run_teacher_eval`."""

    @contextmanager
    def opened(part: TeacherPart) -> Iterator[TeacherRetriever]:
        with open_ready(part) as kb:
            yield TeacherRetriever(kb.gateway, kb.embedder, kb.namespace, kb.student.namespace_size, kb.settings.search)

    return _run(corpus, namespace, opened, on_progress, split)
