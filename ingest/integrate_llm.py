"""Stage 5 with a model (BREW integrator): the statements of a meta-concept's document, reworded.

The document is built from evidence (:mod:`kbgraph.ingest.integrate_evidence`): which statements it
has, where each stands and what backs it follow from the runs. The model only rewords each
statement so that it reads well — one sentence per statement, in order — and says nothing about how
things went: the evidence is shown beside every statement, counted from the runs. An answer with
another number of sentences, one that drops a statement's content or one that adds an outcome the
statement did not state is refused (and retried, then the rule-based wording is kept).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from kbgraph.core.ids import normalise_text
from kbgraph.core.models import ShortText
from kbgraph.ingest.integrate_evidence import Statement
from kbgraph.llm import LLMClient

# A statement counts as reworded when its sentence keeps at least this share of its content words
# (rewording keeps most; a sentence about something else keeps few of them).
KEPT_WORDS_SHARE = 0.5
_CONTENT_WORD = re.compile(r"[a-z][a-z'-]{3,}")

#: Words that claim how something went; a rewording must not add them (the evidence says it).
_OUTCOME_WORDS = re.compile(r"\b(got past|succeed\w*|success\w*|worked|works|helped|did not help|solved|fixed)\b",
                            re.IGNORECASE)

SYSTEM_PROMPT = """\
You edit a short guide about one concept in an AI agent's memory. Each of its statements is given \
with its number, the section it stands in (when_to_use, why, how, pitfalls) and what backs it. \
Reword every statement so that an agent reads it easily: one clear, general sentence each (no \
names, ids, numbers, emails or urls), with the same meaning. Do not merge, drop, add or reorder \
statements, and do not say whether something worked, helped or succeeded, nor how often: the \
evidence is shown beside each statement. Answer {"statements": [...]} with one sentence per \
statement, in the same order."""


class RewordAnswer(BaseModel):
    """One sentence per statement, in order."""

    model_config = ConfigDict(extra="ignore")

    statements: list[ShortText]


def content_words(text: str) -> set[str]:
    """The words of four letters or more of ``text``, lower case: what rewording tends to keep."""
    return set(_CONTENT_WORD.findall(text.lower()))


def rewording_problem(originals: Sequence[str], reworded: Sequence[str], field: str = "statements") -> str | None:
    """Why ``reworded`` is not a rewording of ``originals``, one sentence each and in order (None
    when it is): another number of sentences, one that drops what its original says, or one that
    claims an outcome its original did not state. ``field``: the answer's field, as a problem names it."""
    if len(reworded) != len(originals):
        return f"answer has {len(reworded)} {field} for {len(originals)}: reword each one, in order"
    for index, (original, text) in enumerate(zip(originals, reworded, strict=True)):
        words = content_words(original)
        if words and len(words & content_words(text)) < KEPT_WORDS_SHARE * len(words):
            return f"answer.{field}.{index}: {text!r} drops what {original!r} says"
        added = set(m.lower() for m in _OUTCOME_WORDS.findall(text)) - set(
            m.lower() for m in _OUTCOME_WORDS.findall(original))
        if added:
            return f"answer.{field}.{index}: says {', '.join(sorted(added))!r}; the evidence says how it went"
    return None


def reword_problem(statements: Sequence[Statement], answer: RewordAnswer) -> str | None:
    """Why an answer is not a rewording of ``statements`` (None when it is)."""
    return rewording_problem([s.text for s in statements], answer.statements)


class LLMDocumentWriter:
    """Rewords a meta-concept's statements with a chat model (the :class:`DocumentRewriter` of the
    LLM path)."""

    name = "llm"

    def __init__(self, llm: LLMClient):
        self.llm = llm

    def reword(self, name: str, statements: Sequence[Statement]) -> list[str]:
        if not statements:
            return []
        user = "\n".join([f"Concept: {name}", "", "Statements:", *(
            f"{n}. [{s.section}] {s.text} ({s.backing or 'no runs'})"
            for n, s in enumerate(statements, start=1))])
        answer = self.llm.complete_json(SYSTEM_PROMPT, user, RewordAnswer, lambda a: reword_problem(statements, a))
        return [normalise_text(text) for text in answer.statements]
