"""The LLM path with a floor under it: an item the model cannot answer gets the rule-based result.

A small local model (or a busy remote one) gives, for some items, no usable answer within its
attempts: JSON cut off at the token limit, fields that fail the schema, timeouts. Stopping the
whole ingest there would throw away the answers that did work and leave pass 2 undone; writing
nothing for that item would lose the run. So each LLM stage here wraps the model-backed stage
with its rule-based twin: the model's answer when there is one, otherwise the rules' result for
that item, counted per stage in the ingest report (``IngestReport.llm``) with the last reason.

A refused key, model or URL (:class:`kbgraph.llm.LLMConfigError`) is not an item's problem but a
setting to fix: it is raised, and since pass 1 asks the model before it writes a batch, the batch
it was asked for is not written.

Each stage gets its own :class:`kbgraph.llm.LLMClient`, so its counts are its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbgraph.ingest.abstract import Abstractor, RuleBasedAbstractor
from kbgraph.ingest.abstract_llm import LLMAbstractor
from kbgraph.ingest.integrate_evidence import Statement
from kbgraph.ingest.integrate_llm import LLMDocumentWriter
from kbgraph.ingest.reflect import Reflector, RuleBasedReflector
from kbgraph.ingest.reflect_llm import LLMReflector
from kbgraph.ingest.report import LLMCounts
from kbgraph.llm import LLMClient, LLMConfigError, LLMError, LLMStats
from kbgraph.core.models import ConceptInsight, Experience, Trajectory

if TYPE_CHECKING:
    from kbgraph.core.settings import Settings

MAX_REASON_CHARS = 300


class LLMStages:
    """The LLM stages of one pipeline — abstract, reflect, integrate (documents) — each with its
    own client and the rule-based result to fall back on. A stage that is not configured is None."""

    def __init__(self, clients: dict[str, LLMClient]):
        self.clients = clients
        self._fell_back = dict.fromkeys(clients, 0)
        self._reasons = dict.fromkeys(clients, "")
        self.abstractor: Abstractor | None = (
            AbstractorWithFallback(LLMAbstractor(clients["abstract"]), self) if "abstract" in clients else None)
        self.reflector: Reflector | None = (
            ReflectorWithFallback(LLMReflector(clients["reflect"]), self) if "reflect" in clients else None)
        self.document_writer: DocumentWriterWithFallback | None = (
            DocumentWriterWithFallback(LLMDocumentWriter(clients["integrate"]), self)
            if "integrate" in clients else None)

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMStages:
        """The stages the settings ask for: ``abstractor = "llm"`` the abstractor, ``reflector =
        "llm"`` the reflector and the document writer (BREW's pair)."""
        stages = (["abstract"] if settings.abstractor == "llm" else []) + (
            ["reflect", "integrate"] if settings.reflector == "llm" else [])
        return cls({stage: LLMClient.from_settings(settings) for stage in stages})

    def fall_back(self, stage: str, error: LLMError) -> None:
        """Counts an item of ``stage`` given the rule-based result; re-raises a configuration error."""
        if isinstance(error, LLMConfigError):
            raise error
        self._fell_back[stage] += 1
        reason = str(error)
        self._reasons[stage] = reason if len(reason) <= MAX_REASON_CHARS else reason[:MAX_REASON_CHARS] + "…"

    def reset(self) -> None:
        """Counts start again (a pipeline counts per ingest run)."""
        for stage, client in self.clients.items():
            client.stats = LLMStats()
            self._fell_back[stage] = 0
            self._reasons[stage] = ""

    def counts(self) -> dict[str, LLMCounts]:
        """Per stage: calls, and how each ended (the four outcomes add up to the calls)."""
        result: dict[str, LLMCounts] = {}
        for stage, client in self.clients.items():
            stats = client.stats
            result[stage] = LLMCounts(
                calls=stats.calls, valid_first_try=stats.valid_first_try, repaired=stats.repaired,
                retried=stats.valid_after_retry, fell_back=self._fell_back[stage],
                last_fallback_reason=self._reasons[stage],
            )
        return result


class AbstractorWithFallback:
    """The LLM abstractor; the rule-based experience for a trajectory it cannot abstract."""

    name = "llm"

    def __init__(self, primary: LLMAbstractor, stages: LLMStages, rules: Abstractor | None = None):
        self.primary = primary
        self.llm = primary.llm
        self.rules = rules or RuleBasedAbstractor()
        self.stages = stages

    def abstract(self, trajectory: Trajectory) -> Experience:
        try:
            return self.primary.abstract(trajectory)
        except LLMError as exc:
            self.stages.fall_back("abstract", exc)
        return self.rules.abstract(trajectory)


class ReflectorWithFallback:
    """The LLM reflector; the rule-based lessons for a trajectory it cannot reflect on."""

    name = "llm"

    def __init__(self, primary: LLMReflector, stages: LLMStages, rules: Reflector | None = None):
        self.primary = primary
        self.llm = primary.llm
        self.rules = rules or RuleBasedReflector()
        self.stages = stages

    def reflect(self, trajectory: Trajectory, experience: Experience) -> list[ConceptInsight]:
        try:
            return self.primary.reflect(trajectory, experience)
        except LLMError as exc:
            self.stages.fall_back("reflect", exc)
        return self.rules.reflect(trajectory, experience)


class DocumentWriterWithFallback:
    """The LLM document writer; the rule-based wording (the statements as the evidence made them)
    for a document it cannot reword."""

    name = "llm"

    def __init__(self, primary: LLMDocumentWriter, stages: LLMStages):
        self.primary = primary
        self.llm = primary.llm
        self.stages = stages

    def reword(self, name: str, statements: Sequence[Statement]) -> list[str]:
        try:
            return self.primary.reword(name, statements)
        except LLMError as exc:
            self.stages.fall_back("integrate", exc)
        return [statement.text for statement in statements]
