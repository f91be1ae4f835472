"""KbgraphRetriever: :meth:`KnowledgeBase.search` as a LangChain ``BaseRetriever`` of plan Documents."""

from __future__ import annotations

import asyncio

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from kbgraph.integrations.langchain._documents import documents_of
from kbgraph.kb import KnowledgeBase
from kbgraph.search.params import MAX_K, SearchFilters, SearchWeights
from kbgraph.search.results import SearchResults


class KbgraphRetriever(BaseRetriever):
    """The experiences that worked for tasks like the query, as Documents (best first).

    ``KbgraphRetriever(kb=kb, k=5, domain="airline", filters={"kinds": ["concrete"]})``; every
    option is :meth:`KnowledgeBase.search`'s (``filters`` and ``weights`` as models or dicts,
    checked when the retriever is built). Bad queries raise kbgraph's ``InvalidInputError``.
    """

    kb: KnowledgeBase
    k: int = Field(default=5, ge=1, le=MAX_K, description=f"How many experiences to return (at most {MAX_K}).")
    domain: str | None = Field(default=None, description="The agent's domain: others are discounted, not excluded.")
    agent: str | None = Field(default=None, description="Also search this agent's private experiences.")
    filters: SearchFilters | None = None
    weights: SearchWeights | None = None

    def search(self, query: str) -> SearchResults:
        """The search behind the documents, for callers who want kbgraph's own results."""
        return self.kb.search(query, domain=self.domain, agent=self.agent, k=self.k, filters=self.filters,
                              weights=self.weights)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return documents_of(self.search(query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        # Over a KnowledgeBase the synchronous search runs in a worker thread, so the event loop
        # keeps serving while Neo4j answers.
        return await asyncio.to_thread(self._get_relevant_documents, query, run_manager=run_manager.get_sync())

