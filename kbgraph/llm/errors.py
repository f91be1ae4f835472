"""What a model call ends in when it gives no answer: the errors the ingestion stages catch."""

from __future__ import annotations

from kbgraph.core.errors import KbgraphError


class LLMError(KbgraphError):
    """The model could not be asked: unreachable, refused the request, or kept failing."""


class LLMOutputError(LLMError):
    """The model answered, but every answer was unusable (not JSON, or not the asked shape)."""


class LLMConfigError(LLMError):
    """The endpoint refused us whatever we ask (bad key, no access, unknown model or URL): a
    setting to fix, not an answer to replace with another."""
