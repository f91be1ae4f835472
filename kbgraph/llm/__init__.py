"""A chat model behind any OpenAI-compatible endpoint, answering JSON validated by pydantic.

The ingestion stages that need a model (abstraction, reflection, document rewriting) ask it one
question at a time through :meth:`LLMClient.complete_json` and get back a validated pydantic
object or a :class:`LLMError` — never a half-parsed dict.

Retrying belongs to :mod:`tenacity`, not to the ``openai`` client (built with ``max_retries=0``),
so one budget — ``max_attempts`` — covers both kinds of trouble: transient transport failures
(HTTP 408/409/429/5xx, timeouts, refused connections) and malformed answers (not JSON, or JSON
that fails the schema), since a model often gets it right when asked again (told what was wrong
with its last answer). Errors a retry cannot fix (bad key, unknown model, rejected request) are
raised at once.

Small models ramble: they copy the prompt into a field and run out of tokens mid-string. So every
answer is bounded (``max_tokens``; every string of the schema the model is shown is capped at
:data:`MAX_ANSWER_STRING_CHARS`, which servers that constrain output to the schema enforce), and an
answer that is not JSON is first repaired (:mod:`kbgraph.llm.truncated_json`: its complete values,
closed off) before it counts as malformed. ``stats`` says how each call ended: valid at the first
try, repaired, valid after a retry, or failed.

Nothing connects at import or construction time; the ``openai`` client is created on first use.

The parts: :mod:`~kbgraph.llm.client` (:class:`LLMClient`), :mod:`~kbgraph.llm.schema` (what the
model is shown), :mod:`~kbgraph.llm.errors`, :mod:`~kbgraph.llm.stats`, and the private
``_retry`` (when to ask again) and ``_answer`` (reading an answer).
"""

from __future__ import annotations

from kbgraph.llm._answer import MAX_EXCERPT_CHARS, MAX_KEPT_ANSWER_CHARS
from kbgraph.llm._retry import RETRYABLE_STATUSES
from kbgraph.llm.client import DEFAULT_ENDPOINT, LLMClient
from kbgraph.llm.errors import LLMConfigError, LLMError, LLMOutputError
from kbgraph.llm.schema import MAX_ANSWER_STRING_CHARS, ResponseFormat, bounded_schema, describe_validation_error
from kbgraph.llm.stats import LLMStats

__all__ = [
    "DEFAULT_ENDPOINT", "MAX_ANSWER_STRING_CHARS", "MAX_EXCERPT_CHARS", "MAX_KEPT_ANSWER_CHARS", "RETRYABLE_STATUSES",
    "LLMClient", "LLMConfigError", "LLMError", "LLMOutputError", "LLMStats", "ResponseFormat", "bounded_schema",
    "describe_validation_error",
]
