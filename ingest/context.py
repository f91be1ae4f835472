"""What the ingestion pipeline uses of the knowledge base it writes into, as a Protocol.

:class:`~kbgraph.ingest.pipeline.IngestPipeline` and
:class:`~kbgraph.ingest.consolidate.Consolidation` are typed against :class:`IngestContext`, not
against :class:`~kbgraph.kb.KnowledgeBase`: the façade sits above the pipeline and hands it
``self``, and mypy checks there that it fits. So the pipeline never imports the façade, and a
test or a tool can run it over anything that has these members.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from kbgraph.embedders import Embedder
from kbgraph.store.experiences import ExperienceStore
from kbgraph.store.gateway import Neo4jGateway
from kbgraph.store.vector_cache import PgVectorCache
from kbgraph.ingest.link_state import RememberedLinks
from kbgraph.core.models import Experience
from kbgraph.core.settings import Settings
from kbgraph.store.writer import WriteReport

__all__ = ["IngestContext"]


class IngestContext(Protocol):
    """One namespace to ingest into: where to read and write, how to embed, and the state the
    pipeline keeps between ingests of one process (read-only members: the pipeline never
    replaces them)."""

    @property
    def namespace(self) -> str: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def gateway(self) -> Neo4jGateway: ...

    @property
    def store(self) -> ExperienceStore: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def pg_vectors(self) -> PgVectorCache:
        """Problem+goal vectors read before (kbgraph.store.vector_cache)."""

    @property
    def link_state(self) -> RememberedLinks:
        """The link plan the last consolidation left (ingest/consolidate.py)."""

    def add_experiences(
        self, items: Iterable[Experience | Mapping[str, Any]], on_progress: Callable[[int], None] | None = None,
        labels: Sequence[str] | None = None, maintain: bool = False,
    ) -> WriteReport:
        """Validates, embeds and writes experiences (kbgraph.store.writer)."""

    def embed_missing(self, experiences: Sequence[Experience]) -> None:
        """Fills every absent embedding."""
