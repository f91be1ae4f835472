"""Student-phase retrieval (DESIGN §3): :class:`StudentRetriever`, the task-level search."""

from __future__ import annotations

from kbgraph.search.params import parse_query, parse_search_options
from kbgraph.search.student.retriever import WORKFLOW_FIRST, StudentRetriever

__all__ = ["WORKFLOW_FIRST", "StudentRetriever", "parse_query", "parse_search_options"]
