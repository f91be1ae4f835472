"""Stage 5 — integration (BREW integrator): new insights update a meta-concept's document.

A :class:`~kbgraph.core.models.ConceptDocument` holds sentences under four headings — when to use the
concept, why, how, and pitfalls. :func:`update_document` files each new insight under the heading
:func:`classify_insight` picks and never stores a sentence twice; it is pure and deterministic, so
re-ingesting the same trajectories leaves documents (and their versions) unchanged.

The pipeline builds documents from the evidence of their insights
(:mod:`kbgraph.ingest.integrate_evidence`), which files each statement with :func:`classify_insight`
first and then by what backs it; :func:`update_document` is the evidence-free update, for callers
that hold sentences only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from kbgraph.core.ids import normalise_text
from kbgraph.core.models import ConceptDocument, Insight

Section = Literal["when_to_use", "why", "how", "pitfalls"]
SECTIONS: tuple[Section, ...] = get_args(Section)

#: Texts -> unit-length vectors, one row per text (any kbgraph ``Embedder.embed`` fits).
EmbedFn = Callable[[Sequence[str]], npt.NDArray[np.floating]]

#: Sentences kept per section. A document is read by an agent in its prompt (BREW retrieves the
#: top 3 documents), so four sections of at most a dozen sentences keep it a short page.
DEFAULT_MAX_PER_SECTION = 12
#: Cosine from which an insight counts as a paraphrase of a sentence already present. Measured
#: with all-MiniLM-L6-v2 on ten re-worded insight pairs (median 0.93, min 0.81) and ten pairs of
#: distinct advice about the same task (median 0.62, max 0.83): 0.9 drops 8 of the 10 paraphrases
#: and none of the distinct advice. Missing a paraphrase costs a line; dropping advice loses it.
DEFAULT_NEAR_DUPLICATE = 0.9


# --- classification ----------------------------------------------------------------------------
#
# Rules, first match wins:
# 1. pitfalls     — a warning in the main clause (before any "because"/"to avoid"/... clause):
#                   never, don't, do not, must not, should not, cannot, can't, avoid, fail(s/ed/ure),
#                   error(s), mistake(s), wrong, pitfall, beware, careful, warning, caution.
#                   "Never cancel a delivered order because ..." warns; "Confirm the address to
#                   avoid shipping to the wrong place" explains, so the reason clause is ignored here.
# 2. when_to_use  — opens with a condition: when, whenever, if, unless, once, in case, only, or
#                   "use/apply/call/choose … when/whenever/if" ("Use it when the order is pending").
# 3. why          — gives a reason or purpose: because, since, so that, in order to, to avoid,
#                   to prevent, to ensure, otherwise.
# 4. how          — everything else: instructions and facts about doing it.

_WARNING = re.compile(
    r"\b(never|don't|do not|must not|mustn't|should not|shouldn't|cannot|can't|avoid|avoids|"
    r"fail|fails|failed|failing|failure|failures|error|errors|mistake|mistakes|wrong|pitfall|pitfalls|"
    r"beware|careful|warning|caution)\b"
)
_REASON = re.compile(r"\b(because|since|so that|in order to|to avoid|to prevent|to ensure|otherwise)\b")
_CONDITION_START = re.compile(r"^(when|whenever|if|unless|once|in case|only)\b")
_USE_WHEN = re.compile(r"^(use|apply|call|choose|pick)\b[^.;]*?\b(when|whenever|if)\b")


def _cue_text(sentence: str) -> str:
    # Lower case, straight apostrophes, single spaces: the cues above are written that way.
    return " ".join(sentence.replace("\u2019", "'").replace("\u2018", "'").lower().split())


def classify_insight(sentence: str, opens: bool = True) -> Section:
    """The document section an insight sentence belongs to (rules above; deterministic).
    ``opens``: whether ``sentence`` opens the statement; words that follow others (a rule the agent
    stated, after the words every rule's sentence opens with) never open with a condition."""
    text = _cue_text(sentence)
    reason = _REASON.search(text)
    main_clause = text[: reason.start()] if reason else text
    if _WARNING.search(main_clause):
        return "pitfalls"
    if opens and (_CONDITION_START.search(text) or _USE_WHEN.search(text)):
        return "when_to_use"
    if reason:
        return "why"
    return "how"


# --- updating ----------------------------------------------------------------------------------

_TRAILING = re.compile(r"[\s.!?;:,…]+$")


def sentence_key(sentence: str) -> str:
    """Two sentences with the same key are the same: case, white space and trailing punctuation
    are ignored ("Check the status." == "check  the status")."""
    return _TRAILING.sub("", normalise_text(sentence).casefold())


def _text(insight: str | Insight) -> str:
    return normalise_text(insight.text if isinstance(insight, Insight) else insight)


def update_document(
    document: ConceptDocument, insights: Sequence[str | Insight], *, embed: EmbedFn | None = None,
    near_duplicate: float = DEFAULT_NEAR_DUPLICATE, max_per_section: int = DEFAULT_MAX_PER_SECTION,
) -> tuple[ConceptDocument, bool]:
    """The document with the new insights filed under their sections, and whether it changed.

    - An insight is skipped when the document (any section) or an earlier insight of the same call
      already holds the same sentence (:func:`sentence_key`), or — with ``embed`` — one whose cosine
      with it is >= ``near_duplicate``. ``embed`` is called once per call, on every sentence involved.
    - Sentences keep their order; new ones are appended. Each section keeps its earliest
      ``max_per_section`` sentences: established advice is not pushed out by the latest trajectory.
    - The result never holds a sentence twice: exact repeats already in ``document`` are dropped
      too, keeping the first in reading order (when to use, why, how, pitfalls); that counts as a
      change. The input document is not modified.
    """
    if max_per_section < 1:
        raise ValueError(f"max_per_section must be at least 1, not {max_per_section}")

    # Existing sentences, in document order, without exact repeats.
    seen: set[str] = set()
    sections: dict[Section, list[str]] = {}
    for section in SECTIONS:
        kept: list[str] = []
        for sentence in getattr(document, section):
            key = sentence_key(sentence)
            if key and key not in seen:
                seen.add(key)
                kept.append(sentence)
        sections[section] = kept

    # Candidates: new, non-blank, not exact repeats of anything before them.
    candidates: list[str] = []
    for insight in insights:
        text = _text(insight)
        key = sentence_key(text)
        if key and key not in seen:
            seen.add(key)
            candidates.append(text)

    if embed is not None and candidates:
        candidates = _drop_near_duplicates(
            [s for section in SECTIONS for s in sections[section]], candidates, embed, near_duplicate,
        )

    for text in candidates:
        sections[classify_insight(text)].append(text)

    updated = ConceptDocument(**{section: sections[section][:max_per_section] for section in SECTIONS})
    return updated, updated != document


def _drop_near_duplicates(
    existing: list[str], candidates: list[str], embed: EmbedFn, threshold: float,
) -> list[str]:
    """Candidates whose cosine with every existing sentence and every earlier kept candidate is
    below ``threshold``."""
    vectors = np.asarray(embed([*existing, *candidates]), dtype=np.float64)
    if vectors.shape[0] != len(existing) + len(candidates):
        raise ValueError(f"embed returned {vectors.shape[0]} vectors for {len(existing) + len(candidates)} texts")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    vectors = vectors / norms  # promised unit length, but a cheap guard against a raw embedder
    kept_rows = list(range(len(existing)))
    kept: list[str] = []
    for offset, text in enumerate(candidates):
        row = len(existing) + offset
        if kept_rows and float(np.max(vectors[kept_rows] @ vectors[row])) >= threshold:
            continue
        kept_rows.append(row)
        kept.append(text)
    return kept
