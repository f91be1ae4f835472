"""Stage 3 with a model (BREW reflector): a chat model states what one trajectory teaches.

The model reads the trajectory and the experience abstracted from it and answers
``{"pairs": [{"concept": …, "insight": …}]}`` — one to five lessons, each filed under a short
concept label that later stages deduplicate into meta-concepts.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from kbgraph.core.ids import normalise_text
from kbgraph.ingest.abstract_llm import render_trajectory
from kbgraph.ingest.integrate_llm import content_words
from kbgraph.llm import LLMClient
from kbgraph.core.models import MAX_TEXT_CHARS, ConceptInsight, Experience, Name, Trajectory

MAX_PAIRS = 5
# A lesson is a sentence and its concept a short phrase. Beyond these, the model has copied the
# instructions or the trajectory into the field (what a small model does when it cannot answer).
MIN_INSIGHT_WORDS = 3
MAX_CONCEPT_WORDS = 12
# An insight whose words are mostly words of the instructions restates them ("a short noun phrase
# naming the situation…"); real lessons are about the run. (Concepts may reuse the examples given.)
INSTRUCTION_WORDS_SHARE = 0.6

SYSTEM_PROMPT = f"""\
You reflect on one AI agent's trajectory to learn lessons that help agents with similar tasks \
later. Give 1 to {MAX_PAIRS} pairs, the most useful first:
- concept: a short noun phrase naming the situation or technique the lesson is about, general \
enough to recur ("return a delivered item", "verify identity before account changes", "retry \
after a rate limit"); no names, ids, numbers, emails or urls.
- insight: one sentence saying what to do or avoid, and when or why; just as general.
Learn from mistakes and recoveries as much as from what went well."""


class PairAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    concept: Name
    insight: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT_CHARS)]


class ReflectionAnswer(BaseModel):
    """What one trajectory teaches, as concept-insight pairs."""

    model_config = ConfigDict(extra="ignore")

    pairs: Annotated[list[PairAnswer], Field(min_length=1, max_length=MAX_PAIRS)]

    @field_validator("pairs", mode="before")
    @classmethod
    def _first_pairs(cls, value: Any) -> Any:
        # A model that finds six lessons has not failed; keep the first five (asked: most useful first).
        return value[:MAX_PAIRS] if isinstance(value, list) else value


def render_experience(experience: Experience) -> str:
    """The abstracted experience as the model reads it, next to the raw trajectory."""
    lines = [f"Problem: {experience.problem}", f"Goal: {experience.goal}", "Steps:"]
    lines += [f"{step.order}. {step.action}: {step.text}" for step in experience.steps]
    if experience.failure_modes:
        lines.append("Failure modes:")
        lines += [f"- {f.description} (recovery: {f.recovery or 'none'})" for f in experience.failure_modes]
    return "\n".join(lines)


def check_pairs(answer: ReflectionAnswer) -> str | None:
    """What makes an otherwise well-formed answer no lesson: an insight that is not a sentence or
    restates the instructions, a concept that is not a short phrase."""
    instructions = content_words(re.sub(r'"[^"]*"', " ", SYSTEM_PROMPT))  # not the quoted examples
    for index, pair in enumerate(answer.pairs):
        if len(pair.insight.split()) < MIN_INSIGHT_WORDS:
            return f"answer.pairs.{index}.insight: {pair.insight!r} is not a sentence"
        words = content_words(pair.insight)
        if len(words & instructions) >= INSTRUCTION_WORDS_SHARE * len(words):
            return f"answer.pairs.{index}.insight: repeats the instructions instead of a lesson of this run"
        if len(pair.concept.split()) > MAX_CONCEPT_WORDS:
            return f"answer.pairs.{index}.concept: longer than {MAX_CONCEPT_WORDS} words, not a short noun phrase"
    return None


class LLMReflector:
    """The :class:`kbgraph.ingest.reflect.Reflector` that asks a chat model."""

    name = "llm"

    def __init__(self, llm: LLMClient):
        self.llm = llm

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]:
        user = f"{render_trajectory(trajectory)}\n\nThe experience abstracted from it:\n{render_experience(experience)}"
        answer = self.llm.complete_json(SYSTEM_PROMPT, user, ReflectionAnswer, check_pairs)
        pairs: list[ConceptInsight] = []
        seen: set[tuple[str, str]] = set()
        for pair in answer.pairs:
            key = (normalise_text(pair.concept).lower(), normalise_text(pair.insight).lower())
            if key not in seen:  # the same lesson twice is one lesson
                seen.add(key)
                pairs.append(ConceptInsight(concept=pair.concept, insight=pair.insight))
        return pairs
