"""kbgraph over HTTP: the façade's calls as a FastAPI application (``kbgraph serve``).

The five agent tools are endpoints whose bodies are the tools' arguments and whose answers are the
tools' answers, the contract the MCP server and the LangChain tools share (:mod:`kbgraph.tools`),
with the same messages:

- ``POST /v1/search`` — ``search_experiences``: experiences that worked for tasks like this one;
- ``POST /v1/refine`` — ``refine_steps``: the next step, and help for the steps that went wrong;
- ``POST /v1/feedback`` — ``record_outcome``: what the agent used and how the task ended;
- ``POST /v1/trajectory`` — ``add_trajectory``: ingest one run;
- ``GET /v1/experiences/{id}`` — ``get_experience``: one experience in full, without its embeddings;

and HTTP adds:

- ``POST /v1/steps/search`` — stored steps like the one about to be taken (MAEL);
- ``POST /v1/trajectories`` — ingest a JSON list of runs (idempotent, all or nothing);
- ``GET /v1/stats`` — counts of the namespace;
- ``GET /v1/health`` — whether Neo4j answers (200) or not (503).

The OpenAPI schema (``/openapi.json``, browsable at ``/docs``) is generated from those pydantic
models. The namespace is the ``X-Kbgraph-Namespace`` header (the server's own namespace when it is
left out), checked like every namespace kbgraph takes; each namespace gets its own KnowledgeBase
over one shared driver and embedder, so nothing of one namespace is visible from another.

With an API key every endpoint but the health check and the schema wants ``Authorization: Bearer
<key>``; without one the server refuses to listen beyond loopback (:func:`check_bind`). Failures
answer with one JSON line ``{"detail": "…"}``: 422 for input that is refused (naming the field, or
where the body stops being JSON), 401 for a missing or wrong key, 404 for an unknown id, 503 when
Neo4j or the embedder is unavailable, 500 with a line (never a traceback) for a bug.

FastAPI is imported in this package only: kbgraph imports without the ``http`` extra.

The package's modules: ``_bodies`` (requests, results, errors as models), ``_pool`` (a
KnowledgeBase per namespace), ``_errors`` (failures as statuses), ``_limits`` (refused bodies),
``_routes`` (the endpoints), ``_app`` (create_app: key, limit, handlers), ``_deadline`` (how long a
request may take to arrive: uvicorn's config) and ``_serve``.
"""

from __future__ import annotations

from kbgraph.http_api._app import create_app
from kbgraph.http_api._deadline import READ_TIMEOUT_S, server_config
from kbgraph.http_api._bodies import (API_PREFIX, NAMESPACE_HEADER, AddTrajectoriesResult, ErrorResponse,
                                      HealthReport, IngestedTrajectory, SearchExperiencesRequest, StepSearchRequest,
                                      StepSearchResult)
from kbgraph.http_api._pool import NamespacePool
from kbgraph.http_api._limits import is_loopback
from kbgraph.http_api._serve import DEFAULT_PORT, check_bind, close_after_warm, listen, serve

__all__ = [
    "API_PREFIX", "DEFAULT_PORT", "NAMESPACE_HEADER", "READ_TIMEOUT_S", "AddTrajectoriesResult", "ErrorResponse",
    "HealthReport", "IngestedTrajectory", "NamespacePool", "SearchExperiencesRequest", "StepSearchRequest",
    "StepSearchResult", "check_bind", "close_after_warm", "create_app", "is_loopback", "listen", "serve", "server_config",
]
