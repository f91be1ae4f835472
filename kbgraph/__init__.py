"""kbgraph — a knowledge-graph-backed memory engine for LLM agents, on Neo4j.

    from kbgraph import KnowledgeBase, Experience, Step

    with KnowledgeBase.from_settings() as kb:
        kb.add_experiences([Experience(problem="…", goal="…", steps=[Step(action="…", text="…")])])
"""

from kbgraph import _moved
from kbgraph.core.errors import (
    EmbedderError,
    InvalidInputError,
    KbgraphError,
    ManagedServerError,
    Neo4jUnavailableError,
    SchemaError,
)
from kbgraph.async_kb import AsyncKnowledgeBase
from kbgraph.kb import KbStats, KnowledgeBase, WriteReport
from kbgraph.core.models import (
    Concept,
    ConceptDocument,
    Experience,
    FailureMode,
    Insight,
    MetaConcept,
    Relation,
    RelationType,
    Step,
)
from kbgraph.core.settings import Settings

__all__ = [
    "AsyncKnowledgeBase", "Concept", "ConceptDocument", "EmbedderError", "Experience", "FailureMode", "Insight", "InvalidInputError",
    "KbStats", "KbgraphError", "KnowledgeBase", "ManagedNeo4j", "ManagedServerError", "MetaConcept",
    "Neo4jUnavailableError", "Relation", "RelationType", "SchemaError", "Settings", "Step", "WriteReport",
]

from kbgraph.store.managed import ManagedNeo4j  # noqa: E402

_moved.install()  # old module paths (kbgraph.gateway, …) still import, with a DeprecationWarning
