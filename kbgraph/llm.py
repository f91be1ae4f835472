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
answer that is not JSON is first repaired (:mod:`kbgraph.truncated_json`: its complete values,
closed off) before it counts as malformed. ``stats`` says how each call ended: valid at the first
try, repaired, valid after a retry, or failed.

Nothing connects at import or construction time; the ``openai`` client is created on first use.
"""

from __future__ import annotations

import copy
import json
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from pydantic import BaseModel, ValidationError
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from kbgraph.errors import KbgraphError
from kbgraph.redact import redact_uri
from kbgraph.truncated_json import usable_json_object

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

    from kbgraph.settings import Settings

T = TypeVar("T", bound=BaseModel)

DEFAULT_ENDPOINT = "https://api.openai.com/v1"
# HTTP statuses worth asking again: timeout, conflict, rate limit (and every 5xx, see below).
RETRYABLE_STATUSES = frozenset({408, 409, 429})
MAX_EXCERPT_CHARS = 160
MAX_KEPT_ANSWER_CHARS = 4000
#: The longest string the model is shown it may write (``maxLength`` in the schema it gets): every
#: field asked for is a name or a sentence or two. A server that constrains output to the schema
#: (``response_format`` ``json_schema`` or ``json_object_schema``) stops a field there; what is
#: *validated* stays the answer model's own bounds, so a longer answer from another server is kept.
MAX_ANSWER_STRING_CHARS = 300

#: How the answer's shape is asked for. ``json_object``: JSON mode, the schema in the prompt only
#: (every OpenAI-compatible server). ``json_schema``: OpenAI's structured outputs
#: (``{"type": "json_schema", "json_schema": {...}}``; OpenAI, vLLM, Ollama, LM Studio, llama.cpp's
#: llama-server). ``json_object_schema``: ``{"type": "json_object", "schema": {...}}``, the form
#: llama-cpp-python's server constrains generation with.
ResponseFormat = Literal["json_object", "json_schema", "json_object_schema"]


class LLMError(KbgraphError):
    """The model could not be asked: unreachable, refused the request, or kept failing."""


class LLMOutputError(LLMError):
    """The model answered, but every answer was unusable (not JSON, or not the asked shape)."""


class LLMConfigError(LLMError):
    """The endpoint refused us whatever we ask (bad key, no access, unknown model or URL): a
    setting to fix, not an answer to replace with another."""


@dataclass
class LLMStats:
    """What the client did, for ingestion reports: one ``call`` may take several ``attempts``.

    Each call ends one way: ``valid_first_try`` (the first answer, as it came), ``repaired`` (an
    answer usable once cut to its complete values), ``valid_after_retry`` (a later answer, as it
    came) or ``failed`` (an error raised) — the four add up to ``calls``."""

    calls: int = 0
    attempts: int = 0
    retries: int = 0
    malformed: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    valid_first_try: int = 0
    repaired: int = 0
    valid_after_retry: int = 0
    failed: int = 0


@dataclass
class _Call:
    """One call's attempts so far: the next attempt is told what was wrong with the last answer."""

    attempts: int = 0
    problem: str | None = None
    repaired: bool = False
    answers: list[str] = field(default_factory=list)


class _Transient(Exception):
    """A failure another attempt may not meet (wrapped so tenacity can tell it apart)."""

    def __init__(self, reason: str, retry_after_s: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after_s = retry_after_s


class _Malformed(Exception):
    """An answer that arrived but cannot be used; ``reason`` says what was wrong with it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def describe_validation_error(error: ValidationError, root: str = "answer", limit: int = 3) -> str:
    """``answer.steps.0.action: Field required; …`` — the path a person can find in the JSON."""
    parts = []
    for item in error.errors()[:limit]:
        path = ".".join([root, *(str(part) for part in item["loc"])])
        parts.append(f"{path}: {item['msg']}")
    more = len(error.errors()) - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= MAX_EXCERPT_CHARS else flat[:MAX_EXCERPT_CHARS] + "…")


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(?P<body>.*)\n\s*```\s*$", re.DOTALL)


def _strip_fence(content: str) -> str:
    # Several OpenAI-compatible servers wrap JSON in a Markdown fence even in JSON mode.
    match = _FENCE.match(content)
    return match.group("body") if match else content


class LLMClient:
    """One chat model at one OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, LM Studio, …)."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout_s: float = 60.0,
        max_attempts: int = 4,
        backoff_initial_s: float = 1.0,
        backoff_max_s: float = 20.0,
        max_tokens: int | None = 2048,
        response_format: ResponseFormat = "json_object",
        system_role: bool = True,
        temperature: float | None = None,
    ):
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError("max_tokens must be at least 1 (or None: the server's limit)")
        self.base_url = base_url
        self.api_key = api_key
        self.model = model
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.response_format: ResponseFormat = response_format
        # False: the instructions open the user message instead. Some chat templates have no
        # system role and drop it without a word (llama-cpp-python's "gemma" format does).
        self.system_role = system_role
        # None: not sent, the server's default (reasoning models reject any other value).
        self.temperature = temperature
        self._completion_tokens = False  # the server wants max_completion_tokens (see _request)
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.stats = LLMStats()
        #: What the model said in the last call, one text per attempt (each cut at 4,000
        #: characters): to see why a call failed, or what a small model writes.
        self.last_answers: list[str] = []
        self._client: openai.OpenAI | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient:
        return cls(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else None,
            model=settings.llm_model,
            timeout_s=settings.llm_timeout_s,
            max_attempts=settings.llm_max_attempts,
            max_tokens=settings.llm_max_tokens,
            response_format=settings.llm_response_format,
            system_role=settings.llm_system_role,
            temperature=settings.llm_temperature,
        )

    @property
    def endpoint(self) -> str:
        """Where requests go, for messages. Without a base URL, ``openai`` reads OPENAI_BASE_URL or
        uses its default; once the client exists it knows which."""
        if self._client is not None:
            return redact_uri(str(self._client.base_url).rstrip("/"))
        return redact_uri((self.base_url or DEFAULT_ENDPOINT).rstrip("/"))

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, endpoint={self.endpoint!r})"

    def complete_json(
        self, system: str, user: str, schema: type[T], check: Callable[[T], str | None] | None = None
    ) -> T:
        """Asks the model and returns its answer validated as ``schema``.

        The JSON Schema of ``schema`` (strings capped at :data:`MAX_ANSWER_STRING_CHARS`) is
        appended to the system prompt, and sent as ``response_format`` when the server is said to
        constrain output to it. ``check`` may reject an answer that is valid JSON of the right
        shape but wrong in context (say, no steps for a trajectory that has some) by returning
        what is wrong; it is then retried like any malformed answer. Raises
        :class:`LLMOutputError` when every attempt gave an unusable answer,
        :class:`LLMConfigError` when the endpoint refuses the key, model or URL, :class:`LLMError`
        for any other failure.
        """
        with self._lock:
            self.stats.calls += 1
        shown = bounded_schema(schema.model_json_schema())
        instructions = f"{system}\n\n{_schema_instructions(shown)}"
        call = _Call()
        self.last_answers = call.answers
        retrying = Retrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type((_Transient, _Malformed)),
            before_sleep=self._count_retry,
            reraise=True,
        )
        try:
            # tenacity types the wrapped call's result as Any; it is whatever _attempt returned.
            answer = cast(T, retrying(self._attempt, call, instructions, user, schema, shown, check))
        except _Malformed as exc:
            self._count("failed")
            raise LLMOutputError(
                f"{self.model} at {self.endpoint} gave no usable answer in {self.max_attempts} "
                f"attempt(s); the last one: {exc.reason}"
            ) from None
        except _Transient as exc:
            self._count("failed")
            raise LLMError(
                f"{self.model} at {self.endpoint} failed {self.max_attempts} attempt(s); the last one: {exc.reason}"
            ) from None
        except BaseException:
            self._count("failed")
            raise
        self._count("repaired" if call.repaired else "valid_first_try" if call.attempts == 1 else "valid_after_retry")
        return answer

    # One attempt -----------------------------------------------------------------------------

    def _attempt(
        self, call: _Call, instructions: str, user: str, schema: type[T], shown: dict[str, Any],
        check: Callable[[T], str | None] | None,
    ) -> T:
        with self._lock:
            self.stats.attempts += 1
        call.attempts += 1
        if call.problem:
            # Asked again as it was, a model tends to give the same answer; told what was wrong, it
            # often mends it. Only the reason is sent back, never the (possibly long) answer.
            user = (f"{user}\n\nYour previous answer could not be used: {call.problem}. Answer again with one "
                    "complete JSON object, every string short.")
        messages: list[ChatCompletionMessageParam] = (
            [{"role": "system", "content": instructions}, {"role": "user", "content": user}] if self.system_role
            else [{"role": "user", "content": f"{instructions}\n\n{user}"}])
        response = self._request(messages, schema.__name__, shown)
        usage = response.usage
        if usage is not None:
            with self._lock:
                self.stats.prompt_tokens += usage.prompt_tokens or 0
                self.stats.completion_tokens += usage.completion_tokens or 0
        try:
            return self._parse(response, schema, check, call)
        except _Malformed as exc:
            call.problem = exc.reason
            with self._lock:
                self.stats.malformed += 1
            raise

    def _request(self, messages: list[ChatCompletionMessageParam], name: str, shown: dict[str, Any]) -> ChatCompletion:
        import openai

        client = self._get_client()
        while True:
            # ``max_tokens``: the bound every OpenAI-compatible server reads. OpenAI's reasoning
            # models refuse it for ``max_completion_tokens``; told so once, the client switches.
            bound: dict[str, int] = {}
            if self.max_tokens is not None:
                bound["max_completion_tokens" if self._completion_tokens else "max_tokens"] = self.max_tokens
            try:
                # No temperature unless set: reasoning models reject any but the default.
                return client.chat.completions.create(
                    model=self.model, messages=messages,
                    response_format=cast(Any, self._response_format(name, shown)),  # forms beyond openai's types
                    temperature=self.temperature if self.temperature is not None else openai.omit,
                    extra_body=bound or None,
                )
            except openai.BadRequestError as exc:
                if self._completion_tokens or "max_completion_tokens" not in str(exc) or self.max_tokens is None:
                    raise self._status_error(exc) from None
                self._completion_tokens = True
            except openai.APITimeoutError:
                raise _Transient(f"no answer within {self.timeout_s:g} s (timeout)") from None
            except openai.APIConnectionError as exc:
                raise _Transient(f"cannot connect ({exc.__cause__ or exc})") from None
            except openai.APIStatusError as exc:
                raise self._status_error(exc) from None
            except openai.OpenAIError as exc:
                raise LLMError(f"{self.model} at {self.endpoint}: {exc}") from None

    def _status_error(self, exc: openai.APIStatusError) -> Exception:
        status = exc.status_code
        detail = _server_message(exc.body) or exc.message
        if status in RETRYABLE_STATUSES or status >= 500:
            return _Transient(f"HTTP {status}: {detail}", _retry_after_s(exc.response.headers))
        where = f"{self.model} at {self.endpoint}"
        if status == 401:
            return LLMConfigError(f"{where} refused the API key (HTTP 401): check llm_api_key (KBGRAPH_LLM_API_KEY)")
        if status == 403:
            return LLMConfigError(f"{where} denied access (HTTP 403): check llm_api_key and its permissions")
        if status == 404:
            return LLMConfigError(f"{where} was not found (HTTP 404): check llm_model and llm_base_url ({detail})")
        return LLMError(f"{where} rejected the request (HTTP {status}): {detail}")

    def _parse(
        self, response: ChatCompletion, schema: type[T], check: Callable[[T], str | None] | None, call: _Call,
    ) -> T:
        choices = response.choices or []
        if not choices:
            raise _Malformed("the response has no choices")
        choice = choices[0]
        content = choice.message.content
        call.answers.append((content or "")[:MAX_KEPT_ANSWER_CHARS])
        cut_off = choice.finish_reason == "length"
        if not content or not content.strip():
            if cut_off:
                raise _Malformed("answer was cut off at the token limit (finish_reason=length)")
            refusal = getattr(choice.message, "refusal", None)
            raise _Malformed(f"model refused: {refusal}" if refusal else "answer is empty")
        text = _strip_fence(content)
        try:
            if cut_off:
                raise _Malformed("answer was cut off at the token limit (finish_reason=length)")
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise _Malformed(f"answer is not JSON ({exc.msg}): {_excerpt(content)}") from None
            if not isinstance(data, dict):
                raise _Malformed(f"answer is JSON but not an object: {_excerpt(content)}")
            return self._validated(data, schema, check)
        except _Malformed as malformed:
            # Cut off, or chat around the object: its complete values may still be an answer.
            usable = usable_json_object(text)
            if usable is None or usable == text.strip():
                raise
            try:
                answer = self._validated(json.loads(usable), schema, check)
            except _Malformed as unusable:
                raise _Malformed(f"{malformed.reason}; its complete part: {unusable.reason}") from None
            call.repaired = True
            return answer

    @staticmethod
    def _validated(data: Any, schema: type[T], check: Callable[[T], str | None] | None) -> T:
        try:
            answer = schema.model_validate(data)
        except ValidationError as exc:
            raise _Malformed(describe_validation_error(exc)) from None
        problem = check(answer) if check is not None else None
        if problem:
            raise _Malformed(problem)
        return answer

    def _response_format(self, name: str, shown: dict[str, Any]) -> dict[str, Any]:
        if self.response_format == "json_schema":
            # Not strict: OpenAI's strict mode wants every property required and no open maps.
            return {"type": "json_schema", "json_schema": {"name": name, "schema": shown, "strict": False}}
        if self.response_format == "json_object_schema":
            return {"type": "json_object", "schema": shown}
        return {"type": "json_object"}

    # Plumbing --------------------------------------------------------------------------------

    def _get_client(self) -> openai.OpenAI:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.base_url, api_key=self.api_key or "not-needed",
                    timeout=self.timeout_s, max_retries=0,  # tenacity owns retrying
                )
            return self._client

    def _wait(self, state: RetryCallState) -> float:
        """Exponential backoff with full jitter; a server's Retry-After is honoured up to the cap."""
        ceiling = min(self.backoff_max_s, self.backoff_initial_s * 2 ** (state.attempt_number - 1))
        delay = random.uniform(ceiling / 2, ceiling)
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, _Transient) and error.retry_after_s is not None:
            delay = max(delay, min(error.retry_after_s, self.backoff_max_s))
        return delay

    def _count_retry(self, state: RetryCallState) -> None:
        with self._lock:
            self.stats.retries += 1

    def _count(self, outcome: Literal["valid_first_try", "repaired", "valid_after_retry", "failed"]) -> None:
        with self._lock:
            setattr(self.stats, outcome, getattr(self.stats, outcome) + 1)


def bounded_schema(schema: dict[str, Any], max_chars: int = MAX_ANSWER_STRING_CHARS) -> dict[str, Any]:
    """``schema`` with every string's ``maxLength`` at most ``max_chars`` (a copy)."""
    bounded = copy.deepcopy(schema)

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string":
                node["maxLength"] = min(int(node.get("maxLength", max_chars)), max_chars)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(bounded)
    return bounded


def _schema_instructions(shown: dict[str, Any]) -> str:
    return (
        "Answer with one JSON object and nothing else, matching this JSON Schema:\n"
        + json.dumps(shown, separators=(",", ":"))
    )


def _server_message(body: object) -> str | None:
    # openai unwraps {"error": {...}} into ``body``; some servers send a bare string instead.
    if isinstance(body, dict):
        message = body.get("message") or body.get("error")
        return str(message) if message else None
    return str(body) if body else None


def _retry_after_s(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            return None  # an HTTP date: rare for APIs, fall back to our own backoff
    return None
