"""When a failed attempt is worth another, and how long to wait first.

tenacity retries what it sees as :class:`Transient` (the transport failed: HTTP 408/409/429/5xx,
timeouts, refused connections) or :class:`Malformed` (an answer arrived but cannot be used); an
error a retry cannot fix (bad key, unknown model, rejected request) is an :class:`LLMError` and
ends the call at once.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from tenacity import RetryCallState

from kbgraph.llm.errors import LLMConfigError, LLMError

if TYPE_CHECKING:
    import openai

# HTTP statuses worth asking again: timeout, conflict, rate limit (and every 5xx, see below).
RETRYABLE_STATUSES = frozenset({408, 409, 429})


class Transient(Exception):
    """A failure another attempt may not meet (wrapped so tenacity can tell it apart)."""

    def __init__(self, reason: str, retry_after_s: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class Malformed(Exception):
    """An answer that arrived but cannot be used; ``reason`` says what was wrong with it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def status_error(exc: openai.APIStatusError, where: str) -> Exception:
    """What an HTTP error status means: :class:`Transient`, or an error naming the setting to fix
    (``where`` says which model at which endpoint)."""
    status = exc.status_code
    detail = server_message(exc.body) or exc.message
    if status in RETRYABLE_STATUSES or status >= 500:
        return Transient(f"HTTP {status}: {detail}", retry_after_s(exc.response.headers))
    if status == 401:
        return LLMConfigError(f"{where} refused the API key (HTTP 401): check llm_api_key (KBGRAPH_LLM_API_KEY)")
    if status == 403:
        return LLMConfigError(f"{where} denied access (HTTP 403): check llm_api_key and its permissions")
    if status == 404:
        return LLMConfigError(f"{where} was not found (HTTP 404): check llm_model and llm_base_url ({detail})")
    return LLMError(f"{where} rejected the request (HTTP {status}): {detail}")


def backoff_s(state: RetryCallState, initial_s: float, max_s: float) -> float:
    """Exponential backoff with full jitter; a server's Retry-After is honoured up to the cap."""
    ceiling = min(max_s, initial_s * 2 ** (state.attempt_number - 1))
    delay = random.uniform(ceiling / 2, ceiling)
    error = state.outcome.exception() if state.outcome is not None else None
    if isinstance(error, Transient) and error.retry_after_s is not None:
        delay = max(delay, min(error.retry_after_s, max_s))
    return delay


def server_message(body: object) -> str | None:
    # openai unwraps {"error": {...}} into ``body``; some servers send a bare string instead.
    if isinstance(body, dict):
        message = body.get("message") or body.get("error")
        return str(message) if message else None
    return str(body) if body else None


def retry_after_s(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            return None  # an HTTP date: rare for APIs, fall back to our own backoff
    return None
