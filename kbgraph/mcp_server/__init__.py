"""kbgraph as an MCP server: the tools an agent calls before, during and after a task.

Five tools over one namespace of one knowledge base (docs/design.md §3–4):

- ``search_experiences`` — student phase: what worked before for a task like this one;
- ``refine_steps`` — teacher phase: the next step and help for the steps that went wrong;
- ``record_outcome`` — what the agent did with the results and how the task ended;
- ``add_trajectory`` — ingest what the agent did, in the reference trajectory format;
- ``get_experience`` — one experience in full (without its embeddings).

Built on the official MCP Python SDK (``mcp`` 2.x, :class:`~mcp.server.mcpserver.MCPServer`):
each tool's input schema is its contract model's (:data:`kbgraph.tools.TOOLS`), whose descriptions
tell a model what to pass, and it returns a pydantic model, published as the tool's output schema
and sent as structured content. ``serverInfo.version`` is kbgraph's version.

Arguments are validated strictly (no "yes" read as true, no "10" as 10, no "null" as null). Bad
input and unavailable dependencies come back as tool errors (``isError``) of one line that names
what is wrong and where; a bug in a tool is one line too (its traceback goes to stderr); the
server keeps serving. The knowledge base is opened on the first tool call (so a client can list
the tools before Neo4j is up), or injected.
The namespace is fixed when the server starts: no tool can reach another namespace.

The package's modules: ``_server`` (the knowledge base behind the tools, the server, stdio
serving), ``_arguments`` (the contract's tools as MCP tools, strict arguments, failures as tool
errors) and ``stdio`` (the transport, every line checked). The tools' names, descriptions,
arguments, answers and messages are the contract all ways in share, :mod:`kbgraph.tools`.
"""

from __future__ import annotations

from kbgraph.mcp_server._arguments import StrictArguments, as_tool_error, contract_tool
from kbgraph.mcp_server._server import SERVER_NAME, KbgraphMCPServer, KnowledgeBaseSource, build_server, serve_stdio
from kbgraph.tools import TOOL_NAMES

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "KbgraphMCPServer",
    "KnowledgeBaseSource",
    "StrictArguments",
    "as_tool_error",
    "contract_tool",
    "build_server",
    "serve_stdio",
]
