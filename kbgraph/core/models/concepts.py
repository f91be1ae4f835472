"""What reflection learns (BREW): concept labels, the insights about them, and the meta-concept
documents they are folded into."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field, StringConstraints

from kbgraph.core.ids import content_hash, normalise_text
from kbgraph.core.models._base import MAX_TEXT_CHARS, Count, Embedding, IdText, Name, ShortText, _Strict
from kbgraph.core.models.statements import StatementRecord


class ConceptDocument(_Strict):
    """A meta-concept's document (BREW): sentences under four headings."""

    when_to_use: list[ShortText] = Field(default_factory=list)
    why: list[ShortText] = Field(default_factory=list)
    how: list[ShortText] = Field(default_factory=list)
    pitfalls: list[ShortText] = Field(default_factory=list)

    def render(self, evidence: Callable[[str], str] | None = None) -> str:
        """The document as text, one section per heading; ``evidence`` gives what backs a sentence
        ("6 runs, 3 tasks"), shown after it in brackets when not empty."""
        sections = [
            ("When to use", self.when_to_use),
            ("Why", self.why),
            ("How", self.how),
            ("Pitfalls", self.pitfalls),
        ]

        def line(sentence: str) -> str:
            backing = evidence(sentence) if evidence is not None else ""
            return f"- {sentence}" + (f" ({backing})" if backing else "")

        return "\n\n".join(
            f"## {title}\n" + "\n".join(line(sentence) for sentence in lines) for title, lines in sections if lines
        )


class Concept(_Strict):
    """A raw concept label produced while reflecting on one trajectory (BREW step 2)."""

    label: Name
    experience_id: IdText | None = None
    embedding: Embedding | None = None

    @property
    def id(self) -> str:
        return content_hash({"label": normalise_text(self.label).lower()}, "concept")


class MetaConcept(_Strict):
    """A deduplicated concept owning one document (BREW)."""

    id: IdText
    name: Name
    document: ConceptDocument = Field(default_factory=ConceptDocument)
    version: Count = 1
    embedding: Embedding | None = None


class Insight(_Strict):
    """One sentence learned from a trajectory about a concept (and so about its meta-concept).
    The same sentence about the same concept from several experiences is one insight."""

    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]
    concept: Name
    experience_id: IdText | None = None
    meta_concept_id: IdText | None = None

    @property
    def concept_id(self) -> str:
        return Concept(label=self.concept).id

    @property
    def id(self) -> str:
        return content_hash({"text": normalise_text(self.text), "concept": self.concept_id}, "insight")



class ConceptInsight(_Strict):
    """One reflection on a trajectory (BREW reflector): a concept label and what was learned about it.

    ``worked`` says, for an insight about a fix, whether the fix went through in this run (None
    when the insight is not about one); the run's id, task and outcome are added when it is
    stored, so identical insights of many runs add up to evidence ("seen in 6 runs of 3 tasks,
    the fix went through in 4").

    ``record`` is what the insight says as data (the rule-based reflector's insights are rendered
    from it); None for a free lesson, whose record is its sentence."""

    concept: Name
    insight: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_CHARS)]
    worked: bool | None = None
    record: StatementRecord | None = None
