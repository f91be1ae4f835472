"""Stage 5 with a model (BREW integrator): fold new insights into a meta-concept's document.

The rule-based integrator appends deduplicated sentences; a model can also place each insight under
the right heading and merge it with a sentence that says the same thing. The answer is validated
as a :class:`kbgraph.core.models.ConceptDocument`, and repeated sentences are dropped afterwards
whatever the model did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kbgraph.core.ids import normalise_text
from kbgraph.llm import LLMClient
from kbgraph.core.models import ConceptDocument

SECTIONS = ("when_to_use", "why", "how", "pitfalls")
# An insight counts as folded in when one sentence of the answer keeps at least this share of its
# content words (merging rewords; a guide that lost the insight keeps few of them).
KEPT_WORDS_SHARE = 0.5
_CONTENT_WORD = re.compile(r"[a-z][a-z'-]{3,}")

SYSTEM_PROMPT = """\
You maintain a short guide about one concept in an AI agent's memory. It has four sections, each a \
list of sentences: when_to_use (situations where the concept applies), why (what it achieves or \
prevents), how (what to do, in order), pitfalls (mistakes to avoid). Fold the new insights into \
the guide: put each under the section where it belongs, and when a sentence already says the same \
thing, keep one sentence (merged if the insight adds something) instead of repeating it. Keep \
every point of the current guide that is still valid. One idea per sentence, general: no names, \
ids, numbers, emails or urls. Answer with the whole updated guide."""


def dedupe_sentences(document: ConceptDocument) -> ConceptDocument:
    """The document without blank sentences or a sentence seen before (in any section)."""
    seen: set[str] = set()
    sections: dict[str, list[str]] = {}
    for section in SECTIONS:
        kept = []
        for sentence in getattr(document, section):
            key = normalise_text(sentence).lower()
            if key and key not in seen:
                seen.add(key)
                kept.append(normalise_text(sentence))
        sections[section] = kept
    return ConceptDocument(**sections)


def content_words(text: str) -> set[str]:
    """The words of four letters or more of ``text``, lower case: what rewording tends to keep."""
    return set(_CONTENT_WORD.findall(text.lower()))


def missing_insight(document: ConceptDocument, insights: Sequence[str]) -> str | None:
    """The first new insight no sentence of ``document`` keeps (see :data:`KEPT_WORDS_SHARE`), said
    as a problem of the answer; None when every one is there."""
    sentences = [content_words(line) for section in SECTIONS for line in getattr(document, section)]
    for insight in insights:
        words = content_words(insight)
        if words and not any(len(words & sentence) >= KEPT_WORDS_SHARE * len(words) for sentence in sentences):
            return f"answer drops the new insight {insight!r}: fold every new insight into the guide"
    return None


class LLMDocumentWriter:
    """Rewrites a meta-concept's document with a chat model."""

    name = "llm"

    def __init__(self, llm: LLMClient):
        self.llm = llm

    def rewrite(self, name: str, document: ConceptDocument, new_insights: Sequence[str]) -> ConceptDocument:
        insights = [normalise_text(i) for i in new_insights if i.strip()]
        if not insights:
            return document  # nothing to fold in: no reason to pay for a call

        def check(answer: ConceptDocument) -> str | None:
            if not any(getattr(answer, section) for section in SECTIONS):
                return "answer has no sentences in any section"
            return missing_insight(answer, insights)

        user = "\n".join([
            f"Concept: {name}", "", "Current guide:", document.model_dump_json(indent=2), "",
            "New insights:", *(f"- {insight}" for insight in insights),
        ])
        return dedupe_sentences(self.llm.complete_json(SYSTEM_PROMPT, user, ConceptDocument, check))
