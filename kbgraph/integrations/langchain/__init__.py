"""kbgraph for LangChain and LangGraph: a retriever, and ready tools for a tool-calling agent.

- :class:`KbgraphRetriever` is a LangChain ``BaseRetriever``: the experiences that worked for
  tasks like the query, best first (exactly :meth:`KnowledgeBase.search`'s ranking), as
  ``Document`` s whose page content is the experience as a plan an agent can follow (problem,
  goal, numbered steps, pitfalls with their recoveries, how often it worked) and whose metadata
  holds the id, kind, domain, score, score breakdown, explanation and evidence.
- :func:`kbgraph_tools` returns ``search_experiences``, ``refine_steps``, ``record_outcome``,
  ``add_trajectory`` and ``get_experience`` as LangChain tools, ready for LangGraph's ``ToolNode``
  (or any executor), over a ``KnowledgeBase`` or an ``AsyncKnowledgeBase``.

The tools are the contract the MCP server and the HTTP API publish too (:mod:`kbgraph.tools`):
the same names, the same strict typed arguments (no "yes" read as true), the same answers, the
same messages. Each returns its result as
JSON text for the model, and as a dict in the ``ToolMessage``'s ``artifact`` for code. Invalid
arguments and refused input come back as one line naming the field, as a ``ToolMessage`` with
``status="error"``, and nothing is written: the tools handle these errors themselves
(``handle_validation_error``, ``handle_tool_error``), so this holds under ToolNode's default
error handling and under any other executor. Neo4j failures become such messages too; a bug in
kbgraph is raised, with its traceback.

Needs the ``langchain`` extra (langchain-core; LangGraph to run the tools in a graph); nothing
else in kbgraph imports this module. Over an ``AsyncKnowledgeBase`` the tools' ``ainvoke`` awaits
it on the event loop; over a ``KnowledgeBase`` the async paths (the retriever's ``ainvoke``, the
tools' ``ainvoke``) run the synchronous façade in a worker thread.

The package's modules: ``_documents`` (a hit as a plan and a Document), ``_retriever`` and
``_tools``.
"""

from __future__ import annotations

from kbgraph.integrations.langchain._documents import experience_document, experience_plan
from kbgraph.integrations.langchain._retriever import KbgraphRetriever
from kbgraph.integrations.langchain._tools import TOOL_NAMES, ContractTool, kbgraph_tools
# The tools' arguments and refine_steps' answer are the contract's (kbgraph.tools), re-exported
# here where they were first defined.
from kbgraph.tools import (AddTrajectoryArgs, GetExperienceArgs, RecordOutcomeArgs, Recovery, RefineStepsArgs,
                           RefineStepsResult, SearchExperiencesArgs, TakenStep, WayForward, refine_steps)

__all__ = [
    "TOOL_NAMES",
    "AddTrajectoryArgs",
    "ContractTool",
    "GetExperienceArgs",
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
