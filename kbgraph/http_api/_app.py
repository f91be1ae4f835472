"""create_app: the FastAPI application over a knowledge base, its key, its body limit and its answers to failures."""

# No ``from __future__ import annotations``, as in _routes: FastAPI reads handlers' annotations at run time.
import logging
import secrets
from importlib import resources
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from kbgraph.core.errors import InvalidInputError
from kbgraph.http_api._bodies import API_PREFIX
from kbgraph.http_api._errors import ApiError, answer
from kbgraph.http_api._limits import (
    MAX_BODY_BYTES, BodyLimit, BodyModel, BodyTooLarge, body_problem, loopback_host_header, unreadable_body,
)
from kbgraph.http_api._pool import NamespacePool
from kbgraph.http_api._routes import ERRORS, HEALTH_PATH, UNAUTHORISED, Endpoints, add_health, add_routes
from kbgraph.kb import KnowledgeBase
from kbgraph.tools import kbgraph_version

logger = logging.getLogger(__name__)
#: Where /docs loads Swagger UI's script, style and icon from: this server, never a CDN.
DOCS_ASSETS = "/docs-assets"


def create_app(
    knowledge_base: KnowledgeBase | Callable[[], KnowledgeBase],
    api_key: str | None,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The HTTP API over ``knowledge_base`` — an open KnowledgeBase (its owner closes it), or a
    factory opening one on the first call — whose namespace is the default. ``api_key``: the key
    every request but health and the schema must carry as ``Authorization: Bearer <key>``; None
    asks for none (listen on loopback then: :func:`check_bind`)."""
    if api_key is not None and not api_key.strip():
        raise InvalidInputError(["api_key: empty: give a key, or None for no authentication"], "cannot serve")
    pool = NamespacePool(knowledge_base)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        pool.close()

    app = FastAPI(
        title="kbgraph", version=kbgraph_version(), lifespan=lifespan, docs_url=None, redoc_url=None,
        summary="A knowledge-graph memory for LLM agents: search past experiences, learn from trajectories.",
        description="Each call works in one namespace: the `X-Kbgraph-Namespace` header, or the server's own. "
                    "Errors are `{\"detail\": \"…\"}` with the same messages as the CLI and the MCP tools.",
    )
    bearer = HTTPBearer(auto_error=False, description="The server's API key (KBGRAPH_API_KEY or kbgraph serve --api-key-file).")

    def authorised(credentials: HTTPAuthorizationCredentials | None) -> bool:
        return api_key is None or (credentials is not None and secrets.compare_digest(
            credentials.credentials.encode("utf-8", "surrogateescape"), api_key.encode("utf-8", "surrogateescape")))

    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @app.middleware("http")  # added last: runs first
    async def require_key(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        # Before anything reads the body: a caller without the key learns nothing from a 422.
        path = request.url.path
        if api_key is None and not loopback_host_header(request.headers.get("host")):
            return answer(ApiError(403, f"Host {request.headers.get('host', '')[:100]!r} is not this machine: without "
                                        "an API key the server answers only requests to localhost, 127.0.0.1 or "
                                        "[::1] (a page whose name was rebound to 127.0.0.1 is refused)"))
        if api_key is None or not path.startswith(f"{API_PREFIX}/") or path == HEALTH_PATH:
            return await call_next(request)
        credentials = await bearer(request)
        if authorised(credentials):
            return await call_next(request)
        challenge = {"WWW-Authenticate": "Bearer"}
        if credentials is None:
            return answer(ApiError(401, "missing API key: send the header 'Authorization: Bearer <key>'", challenge))
        return answer(ApiError(401, "wrong API key: send the key the server was started with "
                                    "('Authorization: Bearer <key>')", challenge))

    bodies: dict[str, BodyModel] = {}
    add_error_handlers(app, bodies)
    # The key is checked by require_key; the dependency documents it in the OpenAPI schema.
    protected = [Depends(bearer)] if api_key is not None else []
    add_routes(Endpoints(app, protected, {**ERRORS, **(UNAUTHORISED if api_key is not None else {})}, bodies), pool)

    async def key_given(request: Request) -> bool:
        return authorised(await bearer(request))

    add_health(app, pool, key_given)
    add_docs(app)
    return app


def add_docs(app: FastAPI) -> None:
    """``/docs``: Swagger UI from files installed with kbgraph's ``http`` extra (the fastapi-offline
    package ships them), so the page works on a machine without internet; FastAPI's own page
    loads them from a CDN."""
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(resources.files("fastapi_offline") / "static")),
              name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} API",
                                   swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
                                   swagger_ui_parameters={"validatorUrl": None})  # no badge from a remote validator


def add_error_handlers(app: FastAPI, bodies: dict[str, BodyModel]) -> None:
    """Every failure answered as ``{"detail": "…"}``; ``bodies``: each endpoint's body model, by name."""

    @app.exception_handler(ApiError)
    async def on_api_error(request: Request, exc: ApiError) -> JSONResponse:
        return answer(exc)

    @app.exception_handler(RequestValidationError)
    async def on_invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return answer(ApiError(422, body_problem(request, exc, bodies)))

    @app.exception_handler(StarletteHTTPException)
    async def on_http_exception(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, RecursionError):  # json.loads gave up on the nesting
            return answer(ApiError(422, "invalid request body, nothing was done: the body is nested too deeply"))
        if isinstance(exc.__cause__, BodyTooLarge):  # the body outgrew the limit while it was read
            return answer(ApiError(413, str(exc.__cause__)))
        # json.loads refused an integer of 5,000 digits, or bytes that are not UTF-8: input refused,
        # 422 like every other body that is not JSON (FastAPI's own answer is a bare 400).
        if isinstance(exc.__cause__, ValueError):
            return answer(ApiError(422, unreadable_body(await request.body())))
        return answer(ApiError(exc.status_code, str(exc.detail), dict(exc.headers or {})))

    @app.exception_handler(Exception)
    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        logger.error("%s %s raised an unexpected exception", request.method, request.url.path, exc_info=exc)
        return answer(ApiError(500, f"{request.method} {request.url.path} failed with an internal error "
                                    f"({type(exc).__name__}); the details are in the server's log"))
