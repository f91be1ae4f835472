"""kbgraph for LangChain and LangGraph: a retriever, and ready tools for a tool-calling agent.

- :class:`KbgraphRetriever` is a LangChain ``BaseRetriever``: the experiences that worked for
  tasks like the query, best first (exactly :meth:`KnowledgeBase.search`'s ranking), as
  ``Document`` s whose page content is the experience as a plan an agent can follow (problem,
  goal, numbered steps, pitfalls with their recoveries, how often it worked) and whose metadata
  holds the id, kind, domain, score, score breakdown, explanation and evidence.
- :func:`kbgraph_tools` returns ``search_experiences``, ``refine_steps``, ``record_outcome`` and
  ``add_trajectory`` as LangChain tools, ready for LangGraph's ``ToolNode`` (or any executor).

The tools speak the MCP server's language (:mod:`kbgraph.tools`, the contract both share):
strict typed arguments (no "yes" read as true), the same result models, the same messages. Each returns its result as
JSON text for the model, and as a dict in the ``ToolMessage``'s ``artifact`` for code. Invalid
arguments and refused input come back as one line naming the field, as a ``ToolMessage`` with
``status="error"``, and nothing is written: the tools handle these errors themselves
(``handle_validation_error``, ``handle_tool_error``), so this holds under ToolNode's default
error handling and under any other executor. Neo4j failures become such messages too; a bug in
kbgraph is raised, with its traceback.

Needs the ``langchain`` extra (langchain-core; LangGraph to run the tools in a graph); nothing
else in kbgraph imports this module. kbgraph has no async API yet: the async paths (the
retriever's ``ainvoke``, the tools' ``ainvoke``) run the synchronous façade in a worker thread.

The package's modules: ``_documents`` (a hit as a plan and a Document), ``_retriever``,
``_arguments`` (the tools' arguments), ``_refine`` (refine_steps' answer) and ``_tools``.
"""

from __future__ import annotations

from kbgraph.integrations.langchain._arguments import (AddTrajectoryArgs, RecordOutcomeArgs, RefineStepsArgs,
                                                       SearchExperiencesArgs, TakenStep)
from kbgraph.integrations.langchain._documents import experience_document, experience_plan
from kbgraph.integrations.langchain._refine import Recovery, RefineStepsResult, WayForward, refine_steps
from kbgraph.integrations.langchain._retriever import KbgraphRetriever
from kbgraph.integrations.langchain._tools import TOOL_NAMES, kbgraph_tools

__all__ = [
    "TOOL_NAMES",
    "AddTrajectoryArgs",
    "KbgraphRetriever",
    "RecordOutcomeArgs",
    "Recovery",
    "RefineStepsArgs",
    "RefineStepsResult",
    "SearchExperiencesArgs",
    "TakenStep",
    "WayForward",
    "experience_document",
    "experience_plan",
    "kbgraph_tools",
    "refine_steps",
]
