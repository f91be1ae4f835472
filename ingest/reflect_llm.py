"""Stage 3 with a model (BREW reflector): a chat model rewords what one trajectory teaches.

What a run teaches is the rule-based reflector's (:class:`~kbgraph.ingest.reflect.RuleBasedReflector`):
each lesson a record of what it says (:class:`~kbgraph.core.models.StatementRecord`: its kind, the
operation, the call, the error class, what the agent did next), filed under the operation it
concerns, with whether its next call went through. The model only rewords each lesson's sentence
so that it reads well — one sentence per lesson, in order, given the run for context — and the
lesson keeps its concept, its record and its evidence: documents, skills and the audit read the
record and count the runs, whatever the words. An answer with another number of sentences, one
that drops what a lesson says or that claims an outcome is refused (and retried; then the
pipeline keeps the rule-based wording, :mod:`kbgraph.ingest.llm_fallback`). A run that teaches
nothing asks nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from kbgraph.core.ids import normalise_text
from kbgraph.core.models import ConceptInsight, Experience, ShortText, Trajectory
from kbgraph.ingest.abstract_llm import render_trajectory
from kbgraph.ingest.integrate_llm import rewording_problem
from kbgraph.ingest.reflect import Reflector, RuleBasedReflector
from kbgraph.llm import LLMClient

SYSTEM_PROMPT = """\
You reword the lessons learnt from one AI agent's run, so that agents with similar tasks read them \
easily later. The run is given for context, then its lessons, each with its number and the \
operation it is about. Reword every lesson: one clear, general sentence each (no names, ids, \
numbers, emails or urls), with the same meaning; keep the operation, the error and what the agent \
did. Do not merge, drop, add or reorder lessons, and do not say whether something worked, helped \
or succeeded: what happened in the runs is counted beside each lesson. Answer {"insights": [...]} \
with one sentence per lesson, in the same order."""


class InsightsAnswer(BaseModel):
    """One sentence per lesson, in order."""

    model_config = ConfigDict(extra="ignore")

    insights: list[ShortText]


class LLMReflector:
    """The :class:`kbgraph.ingest.reflect.Reflector` whose lessons a chat model words: the rules'
    lessons (``rules``), each reworded (module docstring)."""

    name = "llm"

    def __init__(self, llm: LLMClient, rules: Reflector | None = None):
        self.llm = llm
        self.rules = rules or RuleBasedReflector()

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]:
        lessons = self.rules.reflect(trajectory, experience)
        if not lessons:
            return []
        originals = [lesson.insight for lesson in lessons]
        user = "\n".join([render_trajectory(trajectory), "", "Lessons:", *(
            f"{n}. [{lesson.concept}] {lesson.insight}" for n, lesson in enumerate(lessons, start=1))])
        answer = self.llm.complete_json(SYSTEM_PROMPT, user, InsightsAnswer,
                                        lambda a: rewording_problem(originals, a.insights, "insights")
                                        or _alike(lessons, a.insights))
        return [lesson.model_copy(update={"insight": normalise_text(text)})
                for lesson, text in zip(lessons, answer.insights, strict=True)]


def _alike(lessons: list[ConceptInsight], reworded: list[str]) -> str | None:
    """Two lessons of one concept worded alike: they would be stored as one insight, with one record."""
    seen: dict[tuple[str, str], int] = {}
    for index, (lesson, text) in enumerate(zip(lessons, reworded, strict=True)):
        key = (lesson.concept, normalise_text(text).lower())
        if key in seen:
            return f"answer.insights.{index}: words lesson {index + 1} as lesson {seen[key] + 1}; reword each apart"
        seen[key] = index
    return None
