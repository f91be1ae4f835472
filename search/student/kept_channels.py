"""Which of a search's channels what the process keeps of a large namespace may answer, and what it
keeps at the version the search read (:func:`kept_current`), or now, whatever the version
(:func:`confirmed`), for the channels to work with while the version is read
(:func:`kbgraph.search.student.channels.gather`).

Kept (:mod:`.vector_model`, :mod:`.text_corpus`, :mod:`.kept_facts`, :mod:`.kept_feedback`,
:mod:`.step_model`, each read in the background:
:class:`~kbgraph.search.student.kept_in_background.KeptInBackground`): the vectors, the scoring facts and
what feedback changes up to :data:`IN_PROCESS_MAX` experiences, the texts and the step texts at
any size; the vectors and the step texts not with a quality floor above 0, the texts keyed by
their filters (:func:`~kbgraph.search.student.versioned.kept_key`).
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from kbgraph.search.student.context import Run, SearchContext
from kbgraph.search.student.kept_facts import NamespaceFacts
from kbgraph.search.student.kept_feedback import NamespaceFeedback
from kbgraph.search.student.step_model import StepSayers
from kbgraph.search.student.text_corpus import NamespaceTexts
from kbgraph.search.student.vector_model import IN_PROCESS_MAX, ExperienceVectors
from kbgraph.search.student.kept_in_background import KeptInBackground
from kbgraph.search.student.versioned import NamespaceVersions, kept_key, version_applies

__all__ = ["IN_PROCESS_MAX", "KeptNow", "catching_up", "check_kept", "confirmed", "in_process", "keepable",
           "kept_current"]


def check_kept(ctx: SearchContext, run: Run, job: Future[NamespaceVersions], vectors: dict[str, list[float]],
               lexical: bool) -> None:
    """A version check this search did not wait for: starts the background reads it calls for and
    records whether the kept state is current. A failed check is left to the next search's (the
    search itself asked the indexes and does not depend on it)."""
    if job.exception() is None:
        try:
            kept_current(ctx, run, job.result(), vectors, lexical)
        except Exception:  # pylint: disable=broad-except  # e.g. the server went away meanwhile
            ctx.kept_state.saw(False)


def in_process(ctx: SearchContext) -> bool:
    """Whether the vectors and the scoring facts are kept: up to ``ctx.in_process_max`` experiences
    (the ``in_process_max`` setting, IN_PROCESS_MAX by default). Past
    it a process would hold ~1 GB more at 100,000 and its first searches wait behind the reads (see
    IN_PROCESS_MAX); the facts kept without the vectors saved little (the facts stage at 100,000,
    11 against 13 ms: the cosines the channels did not return are still read). The texts and the
    step texts are kept at any size: they save a channel's request, and the step channel's walk
    through thousands of steps a text (step queries p50 265 -> 53 ms at 100,000)."""
    return ctx.size.get(ctx.in_process_max).experiences <= ctx.in_process_max


@dataclass(frozen=True)
class KeptNow:
    """What the process keeps of the namespace at the versions a search read, for its channels and
    its facts stage (None where it is not current)."""

    vectors: ExperienceVectors | None
    texts: NamespaceTexts | None
    facts: NamespaceFacts | None
    steps: StepSayers | None
    #: What feedback changes (at the feedback version read), with the facts and vectors.
    feedback: NamespaceFeedback | None
    #: The versions the search read.
    versions: NamespaceVersions


#: How long a search that waits for the version waits for the follows it started (a few requests
#: and a patch, ~10–60 ms at 10,000 experiences) before it asks the indexes.
FOLLOW_WAIT_SECONDS = 0.2


def kept_current(ctx: SearchContext, run: Run, versions: NamespaceVersions, vectors: dict[str, list[float]],
                 lexical: bool, await_follows: bool = False) -> KeptNow:
    """What the process keeps of the namespace at ``versions`` for this search's vector, full-text
    and step channels and its facts stage (None where it is not current: a background read
    starts), recorded in ``ctx.kept_state``. With ``await_follows`` (a search that waited for the
    version), the follows of the change feed that brings them to it are waited for, a little."""
    now = _kept_current(ctx, run, versions, vectors, lexical)
    # The step texts only when their own follow is under way (a steps query starts it): behind for
    # another reason (not read yet), the others' follows bring them nothing.
    steps_behind = bool(run.steps) and now.steps is None and ctx.steps_in_background is not None \
        and ctx.steps_in_background.following()
    if await_follows and (None in (now.vectors, now.texts, now.facts) or steps_behind) and catching_up(ctx):
        deadline = time.monotonic() + FOLLOW_WAIT_SECONDS
        for background in _followed(ctx):
            background.await_follows(max(deadline - time.monotonic(), 0.0))
        now = _kept_current(ctx, run, versions, vectors, lexical)
    return now


def _kept_current(ctx: SearchContext, run: Run, versions: NamespaceVersions, vectors: dict[str, list[float]],
                  lexical: bool) -> KeptNow:
    version = versions.search
    parts = keepable(ctx, run, bool(vectors), lexical)
    model = ctx.current_vectors(run.params, version) if "vectors" in parts else None
    texts = ctx.current_texts(run.params, version) if "texts" in parts else None
    facts = ctx.current_facts(version) if in_process(ctx) else None
    said = ctx.current_steps(run.params, version) if "steps" in parts else None
    # Used with the kept facts, and the kept vectors for the cosines no channel returned.
    feedback = ctx.current_feedback(versions.feedback) if facts is not None else None
    # A follow under way will have the kept state current in a few requests: the next searches wait
    # for the version, as they do while it is current (kept_state).
    ctx.kept_state.saw(model is not None or texts is not None or facts is not None or said is not None
                       or catching_up(ctx))
    return KeptNow(model, texts, facts, said, feedback if model is not None else None, versions)


def catching_up(ctx: SearchContext) -> bool:
    """Whether a follow of the change feed (kbgraph.search.student.change_feed) is bringing a kept
    part of the namespace to a newer version."""
    return any(background.following() for background in _followed(ctx, feedback=False))


def _followed(ctx: SearchContext, feedback: bool = True) -> list[KeptInBackground[Any, Any]]:
    """The kept parts the change feed brings forward; what feedback changes only with ``feedback``
    (it is used with the facts, whose follow says the state is catching up)."""
    parts = (ctx.vectors_in_background, ctx.texts_in_background, ctx.facts_in_background, ctx.steps_in_background,
             ctx.feedback_in_background if feedback else None)
    return [background for background in parts if background is not None]


def keepable(ctx: SearchContext, run: Run, vectors: bool, lexical: bool) -> list[str]:
    """The parts of this search's channels that a kept value may answer, at whatever version:
    ``vectors`` (the vector channels, ``vectors``: it has any), ``texts`` (the full-text channel,
    ``lexical``: it runs), ``steps`` (the step channel). The others ask their indexes whatever the
    version read says."""
    params = run.params
    parts = {
        "vectors": ctx.vectors_in_background is not None and vectors and version_applies(params) and in_process(ctx),
        "texts": ctx.texts_in_background is not None and lexical and kept_key(params) is not None,
        "steps": ctx.steps_in_background is not None and bool(run.steps) and version_applies(params),
    }
    return [part for part, kept in parts.items() if kept]


def confirmed(ctx: SearchContext, run: Run, parts: list[str]) -> dict[str, tuple[str, Any]]:
    """What :func:`kept_current` may give this search for ``parts`` (:func:`keepable`), as kept
    now: by part, the version it was confirmed at and the value; nothing read, nothing started."""
    kept: dict[str, tuple[KeptInBackground[Any, Any] | None, Any]] = {
        "vectors": (ctx.vectors_in_background, ctx.namespace), "texts": (ctx.texts_in_background, kept_key(run.params)),
        "steps": (ctx.steps_in_background, ctx.namespace)}
    found: dict[str, tuple[str, Any]] = {}
    for part in parts:
        background, key = kept[part]
        held = background.confirmed(key) if background is not None else None
        if held is not None:
            found[part] = held
    return found
