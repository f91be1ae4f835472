"""Student-phase retrieval (docs/design.md §3): :class:`StudentRetriever`, the task-level search.

The retriever (``retriever``) runs a search as a sequence of stages, one module each, all
functions of the retriever's shared :class:`~kbgraph.search.student.context.SearchContext` and of
one search's :class:`~kbgraph.search.student.context.Run` (``context``): ``channels`` gather
candidates from the indexes, ``facts`` reads their scoring facts, ``scores`` gives the direct and
workflow scores, ``graph`` traverses from the best seeds, ``hits`` selects and reads the results.
The rows the stages score are typed records, made where they come back from the store (``rows``).
Request parsing lives in :mod:`kbgraph.search.params` (re-exported here as before).
"""

from __future__ import annotations

from kbgraph.search.params import parse_query, parse_search_options
from kbgraph.search.student.context import QueryVectors
from kbgraph.search.student.retriever import StudentRetriever
from kbgraph.search.student.scores import WORKFLOW_FIRST

__all__ = ["WORKFLOW_FIRST", "QueryVectors", "StudentRetriever", "parse_query", "parse_search_options"]
