"""Failures as HTTP answers: a status and one JSON line, worded as the MCP tools word them.

:func:`api_error` maps the failures kbgraph anticipates to 422, 502 or 503 (the words of
:func:`kbgraph.tools.failure_message`); :func:`guarded` runs an endpoint's work and answers a
bug with 500 and a line, its traceback going to the server's log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import neo4j
from fastapi.responses import JSONResponse

from kbgraph.core.errors import (EmbedderError, InvalidInputError, ManagedServerError, Neo4jUnavailableError,
                                 SchemaError)
from kbgraph.http_api._bodies import ErrorResponse
from kbgraph.llm import LLMError
from kbgraph.tools import UnknownExperienceError, failure_message, one_line

T = TypeVar("T")
logger = logging.getLogger(__name__)


class ApiError(Exception):
    """An answer other than 2xx: a status and one line."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


def api_error(exc: Exception) -> ApiError | None:
    """The status and message of a failure kbgraph anticipates (the MCP tools' messages); None for a bug."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, InvalidInputError):
        return ApiError(422, one_line(str(exc)))
    if isinstance(exc, UnknownExperienceError):
        return ApiError(404, str(exc))
    if isinstance(exc, Neo4jUnavailableError | EmbedderError | SchemaError | ManagedServerError):
        return ApiError(503, one_line(str(exc)))
    if isinstance(exc, LLMError):  # the model behind the LLM path failed: an upstream of ours
        return ApiError(502, one_line(str(exc)))
    message = failure_message(exc)  # KbgraphError, or Neo4j refusing a query or lost meanwhile
    if message is None:
        return None
    unavailable = isinstance(exc, neo4j.exceptions.DriverError) or (
        isinstance(exc, neo4j.exceptions.Neo4jError) and exc.is_retryable())
    return ApiError(503 if unavailable else 500, one_line(message))


def guarded(what: str, work: Callable[[], T]) -> T:
    try:
        return work()
    except Exception as exc:
        error = api_error(exc)
        if error is None:  # a bug: the traceback is for the operator, the caller gets a line
            logger.error("%s raised an unexpected exception", what, exc_info=exc)
            error = ApiError(500, f"{what} failed with an internal error ({type(exc).__name__}); the details are "
                                  "in the server's log and the server keeps serving")
        raise error from exc


def answer(error: ApiError) -> JSONResponse:
    return JSONResponse(ErrorResponse(detail=error.detail).model_dump(), status_code=error.status,
                        headers=error.headers)

